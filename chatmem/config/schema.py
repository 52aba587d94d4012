"""The config file's schema: each key's type and range, and the checks that name the key
and the file (a typo must never be silently ignored)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from chatmem.config.options import shown_value
from chatmem.config.pairs import split_params
from chatmem.config.sections import SECTIONS, section_keys
from chatmem.errors import ConfigError, StrategyError, StrategyFailed
from chatmem.names import did_you_mean

SUMMARY_SLOT = "{summary}"
LINES_SLOT = "{new_lines}"
"""The summary prompt's placeholders: the current summary and the new lines."""



class Registered(Protocol):
    """The names plugins extend, as the registries know them (chatmem.plugins.Registries),
    passed down by whoever loads settings, since configuration sits below them. Consulted
    only for a name the file or the environment gives; without one, `strategy`,
    `[strategies.*]`, `provider`, `helper_provider` and `[embeddings] provider` are checked
    for shape only."""

    def check_strategy(self, name: str, params: Mapping[str, Any]) -> None:
        """Raise StrategyError unless `name` with `params` builds (StrategyFailed when a
        plugin's strategy raised building itself)."""
        ...

    def provider_names(self) -> Sequence[str]: ...

    def embedder_names(self) -> Sequence[str]: ...


OLD_SUMMARY_KEYS: dict[str, type] = {"provider": str, "model": str}
"""[summary] provider/model: read as helper_provider/helper_model (settings.HELPER_ALIASES)."""

# Key → type for each table; "" is the top level. Extending chatmem with a top-level
# setting means adding it here and to chatmem.config.settings.Settings; a table's keys
# are its dataclass's fields (chatmem.config.sections).
SCHEMA: dict[str, dict[str, type | tuple[type, ...]]] = {
    "": {
        "provider": str,
        "model": str,
        "base_url": str,
        "api_key_env": str,
        "timeout": (int, float),
        "reply_timeout": (int, float),
        "idle_timeout": (int, float),
        "max_retries": int,
        "max_reply_tokens": int,
        "strategy": str,
        "context_budget": int,
        "system": str,
        "db": str,
        "user": str,
        "helper_provider": str,
        "helper_model": str,
        "user_facts": bool,
        "key_command": str,
        "key_command_timeout": (int, float),
        "retention_days": int,
        "fact_idle_days": int,
        "plain": bool,
        "clipboard_command": str,
        "timezone": str,
    },
    **{name: section_keys(section) for name, section in SECTIONS.items()},
}
SCHEMA["summary"].update(OLD_SUMMARY_KEYS)
# The smallest value each number may take: a negative budget or timeout is a typo.
MINIMUMS: dict[str, int] = {
    "context_budget": 1, "max_retries": 0, "max_reply_tokens": 1,
    "local.threads": 1, "local.n_ctx": 1, "embeddings.threads": 1,
    "retention_days": 1, "fact_idle_days": 1,
}
# The largest: a retry count of a billion retries a hung server for ever.
MAXIMUMS: dict[str, float] = {
    "timeout": 3600, "key_command_timeout": 3600, "reply_timeout": 86400,
    "idle_timeout": 3600, "max_retries": 10, "context_budget": 10**9,
    "max_reply_tokens": 10**7,
    "local.threads": 1024, "local.n_ctx": 10**7,
}
POSITIVE = ("timeout", "key_command_timeout", "reply_timeout", "idle_timeout")
"""Numbers that must be more than 0 (a timeout of 0.5 s is fine, 0 is not)."""
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""What api_key_env must look like: the name of an environment variable."""


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    words = {str: "a string", int: "a whole number", float: "a number", bool: "true or false"}
    return " or ".join(words.get(k, k.__name__) for k in kinds)


def _check_value(path: Path, key: str, value: Any, kind: type | tuple[type, ...]) -> None:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # A table's keys too ([embeddings] api_key_env, base_url): `config show` printed a key
    # pasted there, and a wrong type's value, as it was.
    own = key.rpartition(".")[2]
    if own == "api_key_env" and not (isinstance(value, str) and ENV_NAME.fullmatch(value)):
        # Never echoed: the usual mistake is pasting the key itself here.
        raise ConfigError(f"{path}: key {key!r} must name an environment variable"
                          " (e.g. OPENAI_API_KEY), not hold the key itself")
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        # A URL may carry a password or a key: its wrong type is named, it is not repeated.
        got = f"a {type(value).__name__}" if own in ("db", "base_url") else shown_value(value)
        raise ConfigError(f"{path}: key {key!r} must be {_type_name(kind)}, got {got}")
    number: Any = value  # checked to be a number above when the key has a minimum
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{path}: key {key!r} must be a finite number, got {value!r}")
    if key in MAXIMUMS and number > MAXIMUMS[key]:
        raise ConfigError(f"{path}: key {key!r} must be at most {MAXIMUMS[key]}, got {value!r}")
    if key in MINIMUMS and number < MINIMUMS[key]:
        raise ConfigError(f"{path}: key {key!r} must be at least {MINIMUMS[key]}, got {value!r}")
    if key in POSITIVE and number <= 0:
        raise ConfigError(f"{path}: key {key!r} must be more than 0, got {value!r}")


def validate(path: Path, data: Mapping[str, Any], registered: Registered | None = None) -> None:
    for key, value in data.items():
        if key == "strategies":
            _validate_strategies(path, value, registered)
        elif key in NAMED_TABLES:
            NAMED_TABLES[key](path, value)
        elif key in SCHEMA and key != "":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: key {key!r} must be a table ([{key}])")
            for sub, subvalue in value.items():
                if sub not in SCHEMA[key]:
                    valid = ", ".join(SCHEMA[key])
                    raise ConfigError(f"{path}: unknown key '{key}.{sub}' (valid: {valid})")
                _check_value(path, f"{key}.{sub}", subvalue, SCHEMA[key][sub])
        elif key in SCHEMA[""]:
            _check_value(path, key, value, SCHEMA[""][key])
        else:
            keys = [*SCHEMA[""], *(table for table in SCHEMA if table), *NAMED_TABLES,
                    "strategies"]
            # Near a valid key, the fix alone; else all of them (a nested key lists its
            # table's few).
            hint = did_you_mean(key, keys) or f" (valid: {', '.join(keys)})"
            raise ConfigError(f"{path}: unknown key {key!r}{hint}")
    if registered is not None:
        _check_names(path, data, registered)
    _check_summary(path, data.get("summary", {}))


def _check_names(path: Path, data: Mapping[str, Any], registered: Registered) -> None:
    """The names the file gives, each checked against what is registered."""
    _check_provider(path, "provider", data, registered)
    if "helper_provider" in data:
        _check_provider(path, "helper_provider", {"provider": data["helper_provider"]},
                        registered)
    if isinstance(data.get("strategy"), str):
        name, own = strategy_spec(data["strategy"], f"{path}: key 'strategy'")
        # Its own parameters (`window:k=3`); its [strategies.NAME] table where it is used.
        _check_strategy(path, "strategy", name, own, registered)
    _check_provider(path, "summary.provider", data.get("summary", {}), registered)
    for template, table in data.get("templates", {}).items():
        check_template_strategy(f"{path}: key 'templates.{template}.strategy'", table,
                                registered)
    embedder = data.get("embeddings", {}).get("provider")
    if (embedder is not None and embedder not in (names := registered.embedder_names())
            and not (isinstance(embedder, str) and could_be_plugins(embedder, names))):
        raise ConfigError(f"{path}: key 'embeddings.provider' must be one of "
                          f"{', '.join(names)}, got {shown_value(embedder)}"
                          f"{did_you_mean(str(embedder), names)}")


def check_prompt(prompt: str, where: str = "summary.prompt") -> str:
    """The prompt itself, or ConfigError naming what is missing."""
    missing = [slot for slot in (SUMMARY_SLOT, LINES_SLOT) if slot not in prompt]
    if missing:
        raise ConfigError(
            f"{where}: the summary prompt must contain {SUMMARY_SLOT} and {LINES_SLOT}"
            f" (missing {' and '.join(missing)})"
        )
    return prompt


def _check_summary(path: Path, table: Mapping[str, Any]) -> None:
    if "prompt" in table:
        check_prompt(table["prompt"], f"{path}: key 'summary.prompt'")


def _check_provider(path: Path, key: str, table: Mapping[str, Any],
                    registered: Registered) -> None:
    value = table.get("provider")
    if value is not None:
        check_provider_name(value, registered, f"{path}: key {key!r}")


def check_provider_name(value: str, registered: Registered, where: str) -> None:
    """ConfigError (`WHERE must be one of …`) unless `value` names a provider or `auto`,
    or may be a plugin's: a name no installed plugin provides (uninstalled, or failing to
    load) is let be, so the commands that ask no model run; choosing it fails naming the
    setting (chatmem.plugins.Registries.provider_entry)."""
    names = registered.provider_names()
    if value not in names and not could_be_plugins(value, names):
        raise ConfigError(f"{where} must be one of {', '.join(names)}, got {shown_value(value)}"
                          f"{did_you_mean(value, names)}")


PLUGIN_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
"""What a plugin's provider or embedder may be named (chatmem.memory.registry.VALID_NAME):
other text is refused as the file is read, as no plugin can provide it."""


def could_be_plugins(value: str, names: Sequence[str]) -> bool:
    """Whether `value`, registered by none, may be an absent plugin's: a name a plugin can
    have, near none of `names` (`scriptd` is a typo, refused as the file is read)."""
    return PLUGIN_NAME.fullmatch(value) is not None and not did_you_mean(value, names)


def _table(path: Path, key: str, value: Any) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: key {key!r} must be a table ([{key}])")
    return value


def _validate_aliases(path: Path, value: Any) -> None:
    for name, model in _table(path, "aliases", value).items():
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"{path}: key 'aliases.{name}' must be a model name, got {model!r}")


def _validate_prices(path: Path, value: Any) -> None:
    for model, table in _table(path, "prices", value).items():
        key = f'prices."{model}"'
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: key {key!r} must be a table (input = …, output = …)")
        for sub, number in table.items():
            if sub == "currency" and isinstance(number, str):
                continue
            if sub not in PRICE_KEYS:
                raise ConfigError(f"{path}: unknown key '{key}.{sub}' (valid: "
                                  f"{', '.join(PRICE_KEYS)}, currency)")
            if isinstance(number, bool) or not isinstance(number, int | float) or \
                    not math.isfinite(number) or number < 0:
                raise ConfigError(f"{path}: key '{key}.{sub}' must be a number of 0 or more "
                                  f"(per million tokens), got {number!r}")
        missing = [sub for sub in PRICE_KEYS if sub not in table]
        if missing:
            raise ConfigError(f"{path}: key {key!r} lacks {' and '.join(missing)} "
                              "(per million tokens)")


def check_template(where: str, table: Any) -> dict[str, Any]:
    """A template's table ([templates.NAME] or a templates/NAME.toml file), checked."""
    from chatmem.config.options import check_options

    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table (system, model, strategy, options)")
    for sub, value in table.items():
        if sub not in TEMPLATE_KEYS:
            raise ConfigError(f"{where}: unknown key {sub!r} (valid: {', '.join(TEMPLATE_KEYS)})")
        if sub == "options":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: key 'options' must be a table")
            check_options(value, f"{where}: options")
        elif not isinstance(value, str):
            raise ConfigError(f"{where}: key {sub!r} must be a string, got {value!r}")
    return table


def check_template_strategy(where: str, table: Mapping[str, Any],
                            registered: Registered) -> None:
    """A template's strategy checked as the config's own `strategy` is (its own parameters;
    the config's [strategies.NAME] where it is used), so a typo is named where it is
    written, not met later as an unknown strategy from nowhere."""
    if isinstance(table.get("strategy"), str):
        name, own = strategy_spec(table["strategy"], where)
        check_strategy_at(where, name, own, registered)


def _validate_templates(path: Path, value: Any) -> None:
    for name, table in _table(path, "templates", value).items():
        check_template(f"{path}: key 'templates.{name}'", table)


NAMED_TABLES: dict[str, Callable[[Path, Any], None]] = {
    "aliases": _validate_aliases, "prices": _validate_prices, "templates": _validate_templates,
}
"""Tables whose keys the user names (an alias, a model, a template), each with its check."""
PRICE_KEYS = ("input", "output")
TEMPLATE_KEYS = ("system", "model", "strategy", "options")


def _validate_strategies(path: Path, tables: Any, registered: Registered | None) -> None:
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: key 'strategies' must be a table ([strategies.NAME])")
    for name, params in tables.items():
        if not isinstance(params, dict):
            raise ConfigError(f"{path}: key 'strategies.{name}' must be a table")
        # The name alone (`[strategies.windw]` is a typo); the parameters are checked where
        # the strategy is used (chatmem.engine.opening.check_config_tables): a plugin's new
        # version renaming one stopped every command, not only those that use it.
        _check_strategy(path, f"strategies.{name}", name, {}, registered)


def strategy_spec(text: str, where: str) -> tuple[str, dict[str, str]]:
    """`window:k=3` → ("window", {"k": "3"}): a strategy with its parameters after a colon,
    as --strategy takes it; the values stay text for the strategy to check."""
    return split_params(text, lambda pair: ConfigError(
        f"{where}: parameters must be key=value, e.g. window:k=2, got {shown_value(pair)}"))


def _check_strategy(path: Path, key: str, name: str, params: Mapping[str, Any],
                    registered: Registered | None) -> None:
    if registered is not None:
        check_strategy_at(f"{path}: key {key!r}", name, params, registered)


def check_strategy_at(where: str, name: str, params: Mapping[str, Any],
                      registered: Registered) -> None:
    """ConfigError (`WHERE: unknown strategy …`) unless `name` with `params` builds; `where`
    names the file and key, or the variable, the strategy came from."""
    check_built_at(where, lambda: registered.check_strategy(name, params))


def check_built_at(where: str, build: Callable[[], object]) -> None:
    """Run `build` (a strategy's); its refusal as a ConfigError naming `where`, a plugin
    strategy's own failure said at `where`."""
    try:
        build()
    except StrategyError as e:
        raise ConfigError(f"{where}: {e}") from None
    except StrategyFailed as e:
        raise e.at(where) from None
