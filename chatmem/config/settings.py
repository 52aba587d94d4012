"""Settings: every value chatmem runs with, and where each came from (chatmem.config.loader
reads them: defaults < config file < environment < flags)."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import tzinfo
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chatmem.config.keys import KEY_ENV, api_key_from, key_from, run_key_command
from chatmem.config.location import HistoryLocation, LocationKind, parse_location
from chatmem.config.options import shown_value
from chatmem.config.paths import default_db_path
from chatmem.config.sections import (
    SECTIONS,
    EmbeddingsSection,
    LocalSection,
    ScriptedSection,
    SummarySection,
    section_table,
    shown_repr,
)
from chatmem.text import profile_name

if TYPE_CHECKING:
    from chatmem.privacy.secrets import Credential

# A 135M model sometimes repeats one word for as long as it may: keep that short.
LOCAL_MAX_REPLY_TOKENS = 256
"""The local model's reply cap unless max_reply_tokens says otherwise: small models loop."""
OPENAI_MAX_REPLY_TOKENS = 4096
"""An endpoint's reply cap unless max_reply_tokens says otherwise: a chat reply, not a
runaway (issue 13: a 5 MB reply was stored)."""


class SourceKind(StrEnum):
    """Where a setting's value came from, lowest priority first."""

    DEFAULT = "default"
    FILE = "file"
    ENV = "env"
    FLAG = "flag"
    TEMPLATE = "template"
    """A template's model or options (`--template NAME`, /template)."""
    COMMAND = "command"
    """A REPL command that changed it (/model)."""
    SESSION = "session"
    """The session resumed: the model its latest turn ran on (no choice named another)."""


@dataclass(frozen=True)
class Source:
    """Where one setting came from: its kind, and the file, variable, flag, template or command
    that gave it."""

    kind: SourceKind
    name: str = ""

    def __str__(self) -> str:
        """`default`, the file's path, `env VAR`, `flag --x`, `template NAME` or `/model`."""
        if self.kind in (SourceKind.DEFAULT, SourceKind.FILE, SourceKind.COMMAND):
            return self.name or str(self.kind)
        return f"{self.kind} {self.name}"


DEFAULT_SOURCE = Source(SourceKind.DEFAULT)
OPTION_FLAG = Source(SourceKind.FLAG, "-o")
"""Model options given with `-o KEY=VALUE`."""


@dataclass(frozen=True, repr=False)
class Settings:
    """Every setting, read once (load_settings) and never changed after: a command that
    wants other values makes new settings (dataclasses.replace), so what a strategy or a
    provider was handed cannot change under it."""

    provider: str = "auto"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    """Seconds to wait for each read from the model's server (connect, headers, a chunk)."""
    reply_timeout: float = 600.0
    """Seconds one reply may take in all: a slow drip of tokens is stopped here."""
    idle_timeout: float = 60.0
    """Seconds a reply may go without a new piece (keep-alive comments are no piece)."""
    max_retries: int = 2
    max_reply_tokens: int | None = None
    """Longest reply in tokens; unset: 256 for the local model, 4096 for openai."""
    strategy: str = "window"
    context_budget: int = 4000
    system: str = "You are a helpful assistant."
    db: str | None = None
    user: str = "default"
    user_facts: bool = False
    """Let the extractor put lasting personal facts in the user profile (all sessions)."""
    key_command: str | None = None
    """A command that prints the history file's key (e.g. a password manager's CLI)."""
    key_command_timeout: float = 120
    """Seconds key_command may take (a password manager may wait for a person)."""
    retention_days: int | None = None
    """Sessions idle longer than this are erased when a chat starts; unset: kept."""
    fact_idle_days: int | None = None
    """Extracted facts no context sent for this long expire; unset: kept."""
    plain: bool = False
    """Print replies as the model sent them, never as Markdown (`--plain`)."""
    clipboard_command: str | None = None
    """A command /copy gives the text to on stdin (e.g. `wl-copy`); unset: OSC 52."""
    timezone: str | None = None
    """The zone the user's days are read in (an IANA name, `Asia/Shanghai`); unset: the
    system's (chatmem.timezones)."""
    local: LocalSection = field(default_factory=LocalSection)
    scripted: ScriptedSection = field(default_factory=ScriptedSection)
    helper_provider: str | None = None
    """Provider for summaries and fact extraction; unset: the chat's provider."""
    helper_model: str | None = None
    """Model for summaries and fact extraction (local: a GGUF file); unset: the chat model."""
    summary: SummarySection = field(default_factory=SummarySection)
    embeddings: EmbeddingsSection = field(default_factory=EmbeddingsSection)
    """Which embedder `retrieval` uses."""
    strategies: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per-strategy parameters from [strategies.NAME] tables."""
    aliases: dict[str, str] = field(default_factory=dict)
    """[aliases] fast = "gpt-4o-mini": short names for models, resolved wherever one is named."""
    prices: dict[str, dict[str, Any]] = field(default_factory=dict)
    """[prices."MODEL"] input, output: money per million tokens; none is built in."""
    templates: dict[str, dict[str, Any]] = field(default_factory=dict)
    """[templates.NAME]: system, model, strategy, options (see also config_dir()/templates)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Per-call model options (`-o temperature=0.2`, a template's options), already checked."""
    source: Path | None = None
    """The config file these settings were read from, if any."""
    sources: dict[str, Source] = field(default_factory=dict)
    """Where each key that is not a default came from: the file, `env VAR` or `flag --x`."""

    def __repr__(self) -> str:
        """The fields, base_url and db masked (a key or a password in them is never shown; an
        API key is in no field, only the name of the variable holding it)."""
        return shown_repr(self)

    def __post_init__(self) -> None:
        # One profile however its name was composed (config file, CHATMEM_USER, --user of
        # chat, MCP and serve all read it here): `Zoë` typed on macOS arrives as NFD.
        if isinstance(self.user, str):
            object.__setattr__(self, "user", profile_name(self.user))

    @functools.cached_property
    def location(self) -> HistoryLocation:
        """Where the history lives: a file, or a PostgreSQL database (a URL is never a path);
        an error names where `db` came from (--db, CHATMEM_DB, the config file's key)."""
        if self.db is None or (not self.db and self.named("db") is None):
            return HistoryLocation.file(default_db_path())
        # An empty `--db "$UNSET"` or `db = ""` is refused: it meant some file, not the default.
        where = parse_location(self.db, self.named("db"))
        source = self.source_of("db")
        if (where.kind is LocationKind.SQLITE and source.kind is SourceKind.FILE
                and source.name and not where.path.is_absolute()):
            # A file's relative `db` is beside the file, as the file is read from anywhere:
            # read against the current folder, each folder a chat began in had its own history.
            return HistoryLocation.file(Path(source.name).parent / where.path)
        return where

    @property
    def db_path(self) -> Path:
        """The history file; a PostgreSQL URL here is refused (UsageError, its password masked):
        only commands that work on a file (encrypt, decrypt, rekey, the default file) ask."""
        where = self.location
        if where.kind is not LocationKind.SQLITE:
            from chatmem.errors import UsageError

            raise UsageError(f"{where.shown}: this works on a history file, not a PostgreSQL "
                             "database (its server encrypts and keeps it)")
        return where.path

    def named(self, key: str) -> str | None:
        """How a message names where `key` was set: `--db`, `CHATMEM_DB`, `FILE: key 'db'`
        (None for a default or a value set in code)."""
        source = self.source_of(key)
        if source.kind is SourceKind.DEFAULT:
            return None
        if source.kind in (SourceKind.FLAG, SourceKind.ENV):
            return source.name
        return f"{source}: key {key!r}"

    @functools.cached_property
    def zone(self) -> tzinfo:
        """The `timezone` setting's zone, else the system's; a name no zone has is refused
        naming where it was set (the loader checks it first; this is for settings made in
        code)."""
        from chatmem.timezones import system_zone, zone_named

        if not self.timezone:
            return system_zone()
        try:
            return zone_named(self.timezone, shown_value(self.timezone))
        except ValueError as e:
            from chatmem.errors import ConfigError

            raise ConfigError(f"{self.named('timezone') or 'timezone'}: {e}") from None

    def api_key(self) -> str | None:
        return api_key_from(self.api_key_env)

    def key_source(self) -> str | None:
        """Where the history key comes from ($CHATMEM_KEY or key_command), None if nowhere."""
        if os.environ.get(KEY_ENV):
            return f"${KEY_ENV}"
        return "key_command" if self.key_command else None

    def history_key(self) -> str | None:
        """The key of an encrypted history file: $CHATMEM_KEY, else key_command's output.

        Never stored, printed or put in an error message: a failure of key_command is
        one line (KeyUnavailable, exit 3) that quotes neither its output nor the command.
        """
        if os.environ.get(KEY_ENV):
            return key_from(KEY_ENV)
        if not self.key_command:
            return None
        return run_key_command(self.key_command, self.key_command_timeout)

    def model_named(self, name: str | None) -> str | None:
        """The model an alias stands for ([aliases]); any other name as it is."""
        return self.aliases.get(name, name) if name is not None else None

    def params_for(self, strategy: str) -> dict[str, Any]:
        """The `[strategies.NAME]` parameters for `strategy`; in a combination, each member's
        table applies to it there (`window+entity` takes `[strategies.window] k` as
        window.k), as it does alone."""
        members = strategy.split("+")
        own = dict(self.strategies.get(strategy, {}))  # (`strategy = "A+B:a.k=3"`'s own)
        if len(members) == 1:
            return own
        return {**{f"{member}.{key}": value for member in members
                   for key, value in self.strategies.get(member, {}).items()}, **own}

    def credentials(self, *, urls: bool = True) -> dict[str, Credential]:
        """What no reply or error may repeat, with the label shown in its place
        (privacy.secrets.credentials_of): the chat endpoint's key and base URL, and the
        embedder's own when `[embeddings]` names them; `urls=False`: the keys alone. Never
        raises: a key that is no header value is left to the environment's mask
        (privacy.secrets.environment_secrets)."""
        from chatmem.errors import ChatmemError
        from chatmem.privacy.secrets import credentials_of

        try:
            key = self.api_key()
        except ChatmemError:
            key = None
        found = credentials_of(key, self.base_url if urls else None, None)
        table = self.embeddings
        if table.base_url or table.api_key_env:
            own = os.environ.get(table.api_key_env, "").strip() if table.api_key_env else ""
            found |= credentials_of(own or None, table.base_url if urls else None, None)
        return found

    def public(self) -> dict[str, Any]:
        """The settings as shown by `config show`: no secret ever, only where it comes from."""
        data = {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in ("source", "sources")}
        for name in SECTIONS:
            data[name] = section_table(data[name])
        data["api_key"] = f"${self.api_key_env} is set" if self.api_key() else "not set"
        source = self.key_source()
        # Whether the history is encrypted is the file's to say (config show looks at it).
        data["history_key"] = f"from {source}" if source else "not set"
        from chatmem.privacy.secrets import redacted_url

        for key in ENDPOINT_KEYS:  # (db: the location shows itself masked)
            table, _, name = key.rpartition(".")
            holder = data[table] if table else data
            if holder.get(name):
                holder[name] = redacted_url(holder[name])
        data["db"] = self.location.shown
        data["config_file"] = str(self.source) if self.source else None
        data["sources"] = {key: str(self.source_of(key)) for key in flat_keys(data)
                           if key not in ("api_key", "history_key", "config_file")}
        return data

    def source_of(self, key: str) -> Source:
        """Where a dotted key's value came from (DEFAULT_SOURCE when nothing set it)."""
        return self.sources.get(key, DEFAULT_SOURCE)

    def unprovided(self, key: str, said: str) -> str:
        """`said` (`unknown strategy 'anchor' (valid: …)`) of the name `key` holds, which
        nothing installed provides, as one line naming where it was set and the way on: the
        name was let be as the settings loaded, so the commands that need none of it run."""
        source = self.source_of(key)
        if source.kind is SourceKind.DEFAULT:
            return said
        where = f"{source}: key {key!r}" if source.kind is SourceKind.FILE else str(source)
        return (f"{where}: {said}; if a plugin provided it, install that plugin again, or "
                "choose another there")

    def rows(self) -> list[tuple[str, str, str]]:
        """(key, value, source) for `config show`: tables flattened as `local.threads`."""
        data = self.public()
        data.pop("sources")
        shown = []
        for key, value in flat_keys(data).items():
            if key == "options":
                # No model options set: they come per call (-o, a template's), never from
                # the file's top level, so a row would invite a key the file refuses.
                continue
            source = ("" if key in ("api_key", "history_key", "config_file")
                      else str(self.source_of(key)))
            text = "" if value is None or value == {} else str(value)
            shown.append((key, text, source))
        return shown


ENDPOINT_KEYS = ("base_url", "embeddings.base_url")
"""The settings holding a server's URL, which may hold a key (user:KEY@host, ?api-key=KEY):
each is checked as one (loader.URL_KEYS) and shown masked (`Settings.public`)."""

DEFAULTS = Settings()
"""The settings nothing sets (each section's defaults come from here)."""


def flat_keys(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested tables' values by dotted key (`local.threads`), as sources name them."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            flat.update(flat_keys(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def with_options(settings: Settings, options: Mapping[str, Any], source: Source) -> Settings:
    """`settings` with per-call model options added (over those already there). They shape
    the chat's replies only (max_reply_tokens among them: `options.chat_reply_cap`); the
    configured max_reply_tokens stays the cap of the helper's summaries and extractions."""
    sources = {**settings.sources, **{f"options.{key}": source for key in options}}
    return dataclasses.replace(settings, options={**settings.options, **options},
                               sources=sources)


def for_model(settings: Settings, name: str, source: Source) -> Settings:
    """`settings` for turns that run on model `name`, chosen by `source`: an alias
    ([aliases]) names its model. Every way of naming a model (the flags and the config, a
    template, /model, a request to `chatmem serve`) comes through here, so none of them
    forgets a rule the others keep."""
    model = settings.model_named(name)
    check_not_a_key(settings, model, f"{source}: model")
    return dataclasses.replace(settings, model=model,
                               sources={**settings.sources, "model": source})


def check_not_a_key(settings: Settings, name: str | None, what: str,
                    instead: str = "give the model's name") -> None:
    """ConfigError when `name` (a model's, a new session's, the user's) is the settings' API
    key, `-m "$OPENAI_API_KEY"` or `ask "$OPENAI_API_KEY" hi` (arguments mixed up): a model was
    sent to the endpoint, repeated whole in its 404, and stored as the session's and each
    turn's; a name or user was stored and shown by `logs`, `sessions list` and exports.
    Its length is said, never the key; `instead` says what to give."""
    if not name:
        return
    from chatmem.errors import ChatmemError, ConfigError
    from chatmem.privacy.secrets import placeholder_key

    try:
        key = settings.api_key()
    except ChatmemError:  # a key that is no header value: refused where it is used
        return
    # The key as written only (a served request runs this: 18 calls, not the ~300 of
    # every encoded form of it).
    if key and name.strip() == key.strip() and not placeholder_key(key):
        raise ConfigError(f"{what} is the API key ({len(name)} characters, not repeated): "
                          f"{instead}; the key goes in $OPENAI_API_KEY "
                          "(or the variable api_key_env names)")
