"""Loading the settings: defaults < config file < environment < flags.

The config file is TOML (see config.example.toml for every key). Unknown
keys, wrong types and unknown strategies are errors naming the key and file
(chatmem.config.schema): a typo must never be silently ignored.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chatmem.config.endpoint import parse_endpoint
from chatmem.config.location import parse_location
from chatmem.config.pairs import split_names
from chatmem.config.paths import chosen_config, default_config_path
from chatmem.config.schema import (
    Registered,
    check_provider_name,
    check_strategy_at,
    strategy_spec,
    validate,
)
from chatmem.config.sections import SECTIONS
from chatmem.config.settings import (
    DEFAULTS,
    ENDPOINT_KEYS,
    Settings,
    Source,
    SourceKind,
    check_not_a_key,
    flat_keys,
    for_model,
)
from chatmem.config.trust import check_config_owner
from chatmem.errors import ConfigError
from chatmem.text import is_valid
from chatmem.text_files import NotUtf8, Oversized, read_within, utf8_text

ENV_KEYS = {
    "OPENAI_BASE_URL": "base_url",  # first, so CHATMEM_BASE_URL overrides it
    "CHATMEM_PROVIDER": "provider",
    "CHATMEM_MODEL": "model",
    "CHATMEM_BASE_URL": "base_url",
    "CHATMEM_STRATEGY": "strategy",
    "CHATMEM_SYSTEM": "system",
    "CHATMEM_DB": "db",
    "CHATMEM_USER": "user",
    "CHATMEM_TIMEZONE": "timezone",
    "CHATMEM_HELPER_PROVIDER": "helper_provider",
    "CHATMEM_HELPER_MODEL": "helper_model",
}
MOST_TOML_BYTES = 1 << 20
"""The most of a config or template file read: the example config is some 7 KB."""
HELPER_ALIASES = {"summary.provider": "helper_provider", "summary.model": "helper_model"}
"""Old spellings: [summary] provider/model chose the summarizer before helper_* chose the
model for every strategy call (summaries and fact extraction)."""


def read_config_file(path: Path, registered: Registered | None = None) -> dict[str, Any]:
    data = read_toml(path, "config")
    validate(path, data, registered)
    return data


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """A TOML file's tables; ConfigError naming the file for anything that is not TOML text.

    TOML is UTF-8 by definition; a byte-order mark before it (Notepad's "UTF-8 with BOM")
    is not part of the text, though tomllib reads it as a statement. A table nested
    thousands deep exhausts the parser's recursion (tomllib reads nesting recursively),
    which says nothing to a person.
    """
    try:
        # The file read is the file checked: fstat, not a stat an instant before.
        data = read_within(path, MOST_TOML_BYTES, check=(
            (lambda st: check_config_owner(path, st)) if what == "config" else None))
        if isinstance(data, Oversized):
            # /dev/zero would be read until memory ran out, the size of a config never.
            raise ConfigError(f"{path}: {data.amount()}; a {what} file of at most "
                              f"{MOST_TOML_BYTES:,} bytes is read")
        text = utf8_text(data)
        if isinstance(text, NotUtf8):
            raise ConfigError(text.said(str(path), "file"))
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
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
        raise ConfigError(_not_found(path, "--config" if config_path is not None
                                      else "CHATMEM_CONFIG"))
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
        sources.update(dict.fromkeys(flat_keys(data), Source(SourceKind.FILE, str(path))))
        for key, value in flat_keys(data).items():
            _check_setting(key, value, f"{path}: key {key!r}")
    for variable, key in ENV_KEYS.items():
        # CHATMEM_DB's file is named by bytes, as --db's (parse_location refuses a URL's).
        if env.get(variable) and not is_valid(env[variable]) and key != "db":
            raise ConfigError(f"{variable} must be UTF-8 text; it holds bytes that are not")
        if env.get(variable):
            _check_setting(key, env[variable], variable)
            values[key] = env[variable]
            sources[key] = Source(SourceKind.ENV, variable)
    for variable in ("CHATMEM_PROVIDER", "CHATMEM_HELPER_PROVIDER"):
        if registered is not None and env.get(variable):
            check_provider_name(env[variable], registered, variable)
    if registered is not None and env.get("CHATMEM_STRATEGY"):
        # Checked as the file's `strategy` is, naming the variable: a shell profile's typo
        # would otherwise surface at some later chat as an unknown strategy from nowhere.
        name, own = strategy_spec(env["CHATMEM_STRATEGY"], "CHATMEM_STRATEGY")
        check_strategy_at("CHATMEM_STRATEGY", name, own, registered)
    for key, value in (overrides or {}).items():
        if value is not None:
            flag = (flags or {}).get(key, f"--{key.replace('_', '-')}")
            _check_setting(key, value, flag)
            values[key] = value
            sources[key] = Source(SourceKind.FLAG, flag)
    settings = Settings(**values, sources=sources)
    if settings.model is not None:
        settings = for_model(settings, settings.model, settings.source_of("model"))
    settings = dataclasses.replace(settings,
                                   helper_model=settings.model_named(settings.helper_model))
    check_not_a_key(settings, settings.helper_model,
                    f"{settings.source_of('helper_model')}: helper_model")
    check_not_a_key(settings, settings.user, f"{settings.source_of('user')}: user",
                    "give your name")
    where = f"{settings.source_of('strategy')}: key 'strategy'"
    name, own = strategy_spec(settings.strategy, where)
    name = "+".join(split_names(name))
    if name != settings.strategy:
        # `window:k=3`, as --strategy takes it (`window：k＝3`, `window＋entity` as an input
        # method types them): the parameters join [strategies.window], and the name is the
        # one the tables are found by (params_for), or they were left out unsaid.
        # Each parameter is named by where the strategy came from (config show's source),
        # not by the file's [strategies.NAME] it overrides, nor left to seem a default.
        origin = settings.source_of("strategy")
        tables = settings.strategies if not own else {
            **settings.strategies, name: {**settings.strategies.get(name, {}), **own}}
        settings = dataclasses.replace(settings, strategy=name, strategies=tables,
            sources={**settings.sources, **{f"strategies.{name}.{key}": origin for key in own}})
    return settings


URL_KEYS = {"db": parse_location, **{key: parse_endpoint for key in ENDPOINT_KEYS}}
"""Settings that name a place (the history, a model's server): each value is parsed where it
is read, so a malformed one is refused naming its file and key, variable or flag, even
when a later source overrides it (a typo must never lie in wait)."""


NAME_KEYS = {"model": "model name", "helper_model": "model name", "user": "profile name"}
"""Settings that name something: blank, `-m ""` was sent to the server as the model, and
CHATMEM_USER=" " kept facts under a profile no listing shows."""


def _check_setting(key: str, value: Any, origin: str) -> None:
    if key in NAME_KEYS and isinstance(value, str) and not value.strip():
        raise ConfigError(f"{origin}: a {NAME_KEYS[key]} cannot be blank")
    if key in URL_KEYS and isinstance(value, str) and value:
        URL_KEYS[key](value, origin)
    if key == "timezone" and isinstance(value, str):
        from chatmem.config.options import shown_value
        from chatmem.timezones import zone_named

        try:
            zone_named(value, shown_value(value))
        except ValueError as e:
            raise ConfigError(f"{origin}: {e}") from None


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


def _not_found(path: Path, given: str) -> str:
    """A --config (or CHATMEM_CONFIG) naming no file; a key pasted there, as --provider or
    --model are refused, is not repeated: the error went to the screen, a log, a CI run."""
    from chatmem.config.options import keys_hidden

    shown = keys_hidden(str(path))
    if shown == str(path):
        return f"{path}: config file not found"
    return (f"{shown}: config file not found; that reads as an API key, which goes in"
            f" $OPENAI_API_KEY (or the variable api_key_env names), not {given}")
