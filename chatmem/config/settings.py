"""Settings: defaults < config file < environment < flags.

The config file is TOML (see config.example.toml for every key). Unknown
keys, wrong types and unknown strategies are errors naming the key and file
(chatmem.config.schema): a typo must never be silently ignored.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import Any

from chatmem.config.endpoint import parse_endpoint
from chatmem.config.location import HistoryLocation, LocationKind, parse_location
from chatmem.config.paths import chosen_config, default_config_path, default_db_path
from chatmem.config.schema import Registered, check_provider_name, strategy_spec, validate
from chatmem.config.sections import (
    SECTIONS,
    EmbeddingsSection,
    LocalSection,
    ScriptedSection,
    SummarySection,
    section_table,
)
from chatmem.errors import ConfigError
from chatmem.text import is_valid

# A 135M model sometimes repeats one word for as long as it may: keep that short.
LOCAL_MAX_REPLY_TOKENS = 256
"""The local model's reply cap unless max_reply_tokens says otherwise: small models loop."""
OPENAI_MAX_REPLY_TOKENS = 4096
"""An endpoint's reply cap unless max_reply_tokens says otherwise: a chat reply, not a
runaway (issue 13: a 5 MB reply was stored)."""

KEY_ENV = "CHATMEM_KEY"
"""The history file's key; read when a file is opened, never copied into the settings."""
ENV_KEYS = {
    "OPENAI_BASE_URL": "base_url",  # first, so CHATMEM_BASE_URL overrides it
    "CHATMEM_PROVIDER": "provider",
    "CHATMEM_MODEL": "model",
    "CHATMEM_BASE_URL": "base_url",
    "CHATMEM_STRATEGY": "strategy",
    "CHATMEM_SYSTEM": "system",
    "CHATMEM_DB": "db",
    "CHATMEM_USER": "user",
    "CHATMEM_HELPER_PROVIDER": "helper_provider",
    "CHATMEM_HELPER_MODEL": "helper_model",
}
HELPER_ALIASES = {"summary.provider": "helper_provider", "summary.model": "helper_model"}
"""Old spellings: [summary] provider/model chose the summarizer before helper_* chose the
model for every strategy call (summaries and fact extraction)."""


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


@dataclass(frozen=True)
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

    @functools.cached_property
    def location(self) -> HistoryLocation:
        """Where the history lives: a file, or a PostgreSQL database (a URL is never a path);
        an error names where `db` came from (--db, CHATMEM_DB, the config file's key)."""
        if not self.db:
            return HistoryLocation.file(default_db_path())
        return parse_location(self.db, self.named("db"))

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

    def public(self) -> dict[str, Any]:
        """The settings as shown by `config show`: no secret ever, only where it comes from."""
        data = {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in ("source", "sources")}
        for name in SECTIONS:
            data[name] = section_table(data[name])
        data["api_key"] = f"${self.api_key_env} is set" if self.api_key() else "not set"
        source = self.key_source()
        data["history_key"] = f"from {source}" if source else "not set (history not encrypted)"
        if self.base_url:
            from chatmem.privacy.secrets import redacted_url

            data["base_url"] = redacted_url(self.base_url)
        data["db"] = self.location.shown
        data["config_file"] = str(self.source) if self.source else None
        data["sources"] = {key: str(self.source_of(key)) for key in _flat(data)
                           if key not in ("api_key", "history_key", "config_file")}
        return data

    def source_of(self, key: str) -> Source:
        """Where a dotted key's value came from (DEFAULT_SOURCE when nothing set it)."""
        return self.sources.get(key, DEFAULT_SOURCE)

    def rows(self) -> list[tuple[str, str, str]]:
        """(key, value, source) for `config show`: tables flattened as `local.threads`."""
        data = self.public()
        data.pop("sources")
        shown = []
        for key, value in _flat(data).items():
            source = ("" if key in ("api_key", "history_key", "config_file")
                      else str(self.source_of(key)))
            text = "" if value is None or value == {} else str(value)
            shown.append((key, text, source))
        return shown


DEFAULTS = Settings()
"""The settings nothing sets (each section's defaults come from here)."""


def key_from(variable: str) -> str | None:
    """A history key from environment variable `variable`, None if unset; ConfigError naming
    the variable (never repeating the key) when it is not UTF-8 text, which SQLCipher's
    key cannot be made from (it was a traceback, and a new history file left empty)."""
    key = os.environ.get(variable)
    if not key:
        return None
    if not is_valid(key):
        raise ConfigError(f"{variable} must be UTF-8 text; it holds bytes that are not")
    return key


def api_key_from(variable: str) -> str | None:
    """The API key in environment variable `variable` (spaces around it dropped), None if
    unset; ConfigError naming the variable, never repeating the key, when it cannot go in
    an HTTP header (sent, it would fail as a garbled request, not as a bad key)."""
    key = os.environ.get(variable, "").strip()
    if not key:
        return None
    if not is_valid(key):
        raise ConfigError(f"{variable} must be UTF-8 text; it holds bytes that are not")
    if not (key.isascii() and key.isprintable()):
        raise ConfigError(f"{variable} holds a character no API key has (a key is printable "
                          "ASCII): set it again, copied whole")
    return key


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def read_config_file(path: Path, registered: Registered | None = None) -> dict[str, Any]:
    data = read_toml(path, "config")
    validate(path, data, registered)
    return data


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """A TOML file's tables; ConfigError naming the file for anything that is not TOML text.

    TOML is UTF-8 by definition; a table nested thousands deep exhausts the parser's
    recursion (tomllib reads nesting recursively), which says nothing to a person.
    """
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        line = e.object[:e.start].count(b"\n") + 1
        raise ConfigError(f"{path}: line {line} is not UTF-8 text (TOML is UTF-8: save the "
                          "file as UTF-8)") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML: arrays or tables nested too deeply"
                          ) from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read {what}: {e.strerror}") from None


def load_settings(
    config_path: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    registered: Registered | None = None,
    flags: Mapping[str, str] | None = None,
) -> Settings:
    """Defaults, then the config file, then CHATMEM_* variables, then flags.

    `registered` (see Registered) checks the names the file and the environment give;
    the CLI passes the plugin registries. `flags` names the flag an override came from
    where it is not `--KEY` (`{"db": "--from"}`). The history location and the endpoints
    are parsed here, so a malformed one is an error naming where it came from before
    anything opens."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    explicit = chosen_config(config_path, env)
    path = explicit or default_config_path()
    if explicit is not None and not path.exists():
        raise ConfigError(f"{path}: config file not found")
    if path.exists():
        data = read_config_file(path, registered)
        data = _with_helper_aliases(path, data)
        for key, value in data.items():
            if key in SECTIONS:
                values[key] = dataclasses.replace(getattr(DEFAULTS, key), **value)
            elif key in ("strategies", "prices", "templates"):
                values[key] = {k: dict(v) for k, v in value.items()}
            elif key == "aliases":
                values[key] = dict(value)
            else:
                values[key] = value
        values["source"] = path
        sources.update(dict.fromkeys(_flat(data), Source(SourceKind.FILE, str(path))))
        for key, value in _flat(data).items():
            _check_url(key, value, f"{path}: key {key!r}")
    for variable, key in ENV_KEYS.items():
        if env.get(variable) and not is_valid(env[variable]):
            raise ConfigError(f"{variable} must be UTF-8 text; it holds bytes that are not")
        if env.get(variable):
            _check_url(key, env[variable], variable)
            values[key] = env[variable]
            sources[key] = Source(SourceKind.ENV, variable)
    for variable in ("CHATMEM_PROVIDER", "CHATMEM_HELPER_PROVIDER"):
        if registered is not None and env.get(variable):
            check_provider_name(env[variable], registered, variable)
    for key, value in (overrides or {}).items():
        if value is not None:
            flag = (flags or {}).get(key, f"--{key.replace('_', '-')}")
            _check_url(key, value, flag)
            values[key] = value
            sources[key] = Source(SourceKind.FLAG, flag)
    settings = Settings(**values, sources=sources)
    if settings.model is not None:
        settings = for_model(settings, settings.model, settings.source_of("model"))
    settings = dataclasses.replace(settings,
                                   helper_model=settings.model_named(settings.helper_model))
    if ":" in settings.strategy:
        # `window:k=3`, as --strategy takes it: the parameters join [strategies.window].
        where = f"{settings.source_of('strategy')}: key 'strategy'"
        name, own = strategy_spec(settings.strategy, where)
        settings = dataclasses.replace(settings, strategy=name, strategies={
            **settings.strategies, name: {**settings.strategies.get(name, {}), **own}})
    return settings


URL_KEYS = {"db": parse_location, "base_url": parse_endpoint,
            "embeddings.base_url": parse_endpoint}
"""Settings that name a place (the history, a model's server): each value is parsed where it
is read, so a malformed one is refused naming its file and key, variable or flag, even
when a later source overrides it (a typo must never lie in wait)."""


def _check_url(key: str, value: Any, origin: str) -> None:
    if key in URL_KEYS and isinstance(value, str) and value:
        URL_KEYS[key](value, origin)


def _with_helper_aliases(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """[summary] provider/model read as helper_provider/helper_model, their one home now."""
    summary = dict(data.get("summary", {}))
    moved = {new: summary.pop(old.split(".")[1]) for old, new in HELPER_ALIASES.items()
             if old.split(".")[1] in summary}
    if not moved:
        return data
    for key, value in moved.items():
        if key in data and data[key] != value:
            old = next(o for o, n in HELPER_ALIASES.items() if n == key)
            raise ConfigError(f"{path}: keys {old!r} and {key!r} disagree; {old!r} is the old "
                              f"name of {key!r}: keep {key!r} only")
    return {**data, **moved, "summary": summary}


def run_key_command(command: str, timeout: float) -> str:
    """What `command` prints on stdout, its line ending removed; KeyUnavailable otherwise.

    stdin stays the terminal's, and stderr too when it is one: a password manager may
    ask there. Elsewhere (a script, a pipe) its stderr is discarded, never quoted: a
    failing command may print the key or a secret of its own there. The error says
    the exit status and how to see why.
    """
    import subprocess
    import sys

    from chatmem.errors import KeyUnavailable

    stderr = None if sys.stderr.isatty() else subprocess.DEVNULL
    try:
        done = subprocess.run(command, shell=True, stdout=subprocess.PIPE, stderr=stderr,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise KeyUnavailable(f"key_command gave no key within {timeout:g} s "
                             "(key_command_timeout); nothing opened") from None
    except OSError as e:
        # The cause in words ("Permission denied"), never a Python exception name.
        why = e.strerror or "the system could not start it"
        raise KeyUnavailable(f"key_command could not run ({why}); no key, nothing opened"
                             ) from None
    if done.returncode != 0:
        why = {127: "command not found, ", 126: "command not executable, "}.get(
            done.returncode, "")
        raise KeyUnavailable(f"key_command failed ({why}exit {done.returncode}); no key, "
                             "nothing opened (its output is never shown: run the command in "
                             "a terminal to see why)")
    try:
        key = done.stdout.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise KeyUnavailable("key_command printed bytes that are not UTF-8; nothing "
                             "opened") from None
    if not key:
        raise KeyUnavailable("key_command printed no key; nothing opened")
    if "\x00" in key:  # SQLCipher takes a key as a C string: it would end there
        raise KeyUnavailable("key_command printed a NUL byte; nothing opened")
    return key


def with_options(settings: Settings, options: Mapping[str, Any], source: Source) -> Settings:
    """`settings` with per-call model options added (over those already there);
    max_reply_tokens is a setting."""
    sources = {**settings.sources, **{f"options.{key}": source for key in options}}
    changed: dict[str, Any] = {}
    if "max_reply_tokens" in options:
        changed["max_reply_tokens"] = int(options["max_reply_tokens"])
        sources["max_reply_tokens"] = source
    return dataclasses.replace(settings, options={**settings.options, **options},
                               sources=sources, **changed)


def for_model(settings: Settings, name: str, source: Source) -> Settings:
    """`settings` for turns that run on model `name`, chosen by `source`: an alias
    ([aliases]) names its model. Every way of naming a model (the flags and the config, a
    template, /model, a request to `chatmem serve`) comes through here, so none of them
    forgets a rule the others keep."""
    return dataclasses.replace(settings, model=settings.model_named(name),
                               sources={**settings.sources, "model": source})
