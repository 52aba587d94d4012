"""Settings: defaults < config file < environment < flags.

The config file is TOML (see config.example.toml for every key). Unknown
keys, wrong types and unknown strategies are errors naming the key and file:
a typo must never be silently ignored.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from chatmem.errors import ConfigError, StrategyError

APP_NAME = "chatmem"

# Key → type for each table; "" is the top level. Extending chatmem with a
# setting means adding it here and to Settings.
SCHEMA: dict[str, dict[str, type | tuple[type, ...]]] = {
    "": {
        "provider": str,
        "model": str,
        "base_url": str,
        "api_key_env": str,
        "timeout": (int, float),
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
        "retention_days": int,
        "fact_idle_days": int,
    },
    "local": {"model_path": str, "threads": int, "n_ctx": int},
    "scripted": {"script": str, "log": str},
    "summary": {"prompt": str, "provider": str, "model": str, "drift_guard": bool},
    "embeddings": {"provider": str, "model": str, "base_url": str, "api_key_env": str,
                   "threads": int},
}
PROVIDERS = ("auto", "local", "openai", "scripted")
EMBEDDERS = ("auto", "local", "openai", "hash", "none")
"""[embeddings] provider: auto = local when `chatmem[embed]` is installed, else none."""
# The smallest value each number may take: a negative budget or timeout is a typo.
MINIMUMS: dict[str, int] = {
    "context_budget": 1, "max_retries": 0, "max_reply_tokens": 1,
    "local.threads": 1, "local.n_ctx": 1, "embeddings.threads": 1,
    "retention_days": 1, "fact_idle_days": 1,
}
# The largest: a retry count of a billion retries a hung server for ever.
MAXIMUMS: dict[str, float] = {
    "timeout": 3600, "max_retries": 10, "context_budget": 10**9, "max_reply_tokens": 10**7,
    "local.threads": 1024, "local.n_ctx": 10**7,
}
POSITIVE = ("timeout",)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""Numbers that must be more than 0 (a timeout of 0.5 s is fine, 0 is not)."""
# A 135M model sometimes repeats one word for as long as it may: keep that short.
LOCAL_MAX_REPLY_TOKENS = 256
"""The local model's reply cap unless max_reply_tokens says otherwise: small models loop."""

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


def config_dir() -> Path:
    """The platform's config directory (~/.config/chatmem on Linux, XDG_CONFIG_HOME honoured)."""
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def data_dir() -> Path:
    """The platform's data directory (~/.local/share/chatmem on Linux, XDG_DATA_HOME honoured)."""
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def default_config_path() -> Path:
    return config_dir() / "config.toml"


def default_db_path() -> Path:
    return data_dir() / "chatmem.db"


def legacy_db_path() -> Path:
    """Where chatmem kept the history file before it moved to the data directory."""
    return config_dir() / "chatmem.db"


def move_legacy_db() -> str | None:
    """Move a history file from the config directory to the data directory, once.

    Returns what was done, for the caller to tell the user; None when there was
    nothing to move (or a file is already in the data directory: nothing is
    overwritten). The WAL is folded into the file first, so the move is whole.
    """
    import shutil
    import sqlite3

    old, new = legacy_db_path(), default_db_path()
    if new.exists() or not old.is_file():
        return None
    try:
        try:
            connection = sqlite3.connect(old)
            try:
                connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                connection.close()
        except sqlite3.DatabaseError:
            pass  # encrypted: its WAL moves with it below
        new.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(old), str(new))
        wal = old.with_name(old.name + "-wal")
        if wal.exists() and wal.stat().st_size:
            shutil.move(str(wal), str(new.with_name(new.name + "-wal")))
        for suffix in ("-wal", "-shm"):
            old.with_name(old.name + suffix).unlink(missing_ok=True)
    except (OSError, sqlite3.Error) as e:
        raise ConfigError(f"{old}: cannot move the history file to {new}: {e}") from None
    return f"moved the history file from {old} to {new} (the platform's data directory)"


@dataclass
class Settings:
    provider: str = "auto"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
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
    retention_days: int | None = None
    """Sessions idle longer than this are erased when a chat starts; unset: kept."""
    fact_idle_days: int | None = None
    """Extracted facts no context sent for this long expire; unset: kept."""
    local: dict[str, Any] = field(default_factory=lambda: {"threads": 2, "n_ctx": 4096})
    scripted: dict[str, Any] = field(default_factory=dict)
    helper_provider: str | None = None
    """Provider for summaries and fact extraction; unset: the chat's provider."""
    helper_model: str | None = None
    """Model for summaries and fact extraction (local: a GGUF file); unset: the chat model."""
    summary: dict[str, Any] = field(default_factory=lambda: {"drift_guard": True})
    """[summary]: prompt, drift_guard."""
    embeddings: dict[str, Any] = field(default_factory=lambda: {"provider": "auto",
                                                                "threads": 1})
    """[embeddings]: which embedder `retrieval` uses (provider, model, base_url, ...)."""
    strategies: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per-strategy parameters from [strategies.NAME] tables."""
    source: Path | None = None
    """The config file these settings were read from, if any."""
    sources: dict[str, str] = field(default_factory=dict)
    """Where each key that is not a default came from: the file, `env VAR` or `flag --x`."""

    @property
    def db_path(self) -> Path:
        return Path(self.db).expanduser() if self.db else default_db_path()

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    def key_source(self) -> str | None:
        """Where the history key comes from ($CHATMEM_KEY or key_command), None if nowhere."""
        if os.environ.get(KEY_ENV):
            return f"${KEY_ENV}"
        return "key_command" if self.key_command else None

    def history_key(self) -> str | None:
        """The key of an encrypted history file: $CHATMEM_KEY, else key_command's output.

        Never stored, printed or put in an error message.
        """
        if os.environ.get(KEY_ENV):
            return os.environ[KEY_ENV]
        if not self.key_command:
            return None
        import subprocess

        try:
            # stdin and stderr stay the terminal's: a password manager may ask for its own.
            done = subprocess.run(self.key_command, shell=True, stdout=subprocess.PIPE,
                                  text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ConfigError(f"key_command could not run: {type(e).__name__}") from None
        if done.returncode != 0:
            raise ConfigError(f"key_command failed (exit {done.returncode}); no key, nothing "
                              "opened")
        key = done.stdout.rstrip("\r\n")
        if not key:
            raise ConfigError("key_command printed no key; nothing opened")
        return key

    def params_for(self, strategy: str) -> dict[str, Any]:
        return dict(self.strategies.get(strategy, {}))

    def public(self) -> dict[str, Any]:
        """The settings as shown by `config show`: no secret ever, only where it comes from."""
        data = {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in ("source", "sources")}
        data["api_key"] = f"${self.api_key_env} is set" if self.api_key() else "not set"
        source = self.key_source()
        data["history_key"] = f"from {source}" if source else "not set (history not encrypted)"
        if self.base_url:
            from chatmem.redact import redacted_url

            data["base_url"] = redacted_url(self.base_url)
        data["db"] = str(self.db_path)
        data["config_file"] = str(self.source) if self.source else None
        data["sources"] = {key: self.source_of(key) for key in _flat(data)
                           if key not in ("api_key", "history_key", "config_file")}
        return data

    def source_of(self, key: str) -> str:
        """`default`, the config file's path, `env VAR` or `flag --x`, for a dotted key."""
        return self.sources.get(key, "default")

    def rows(self) -> list[tuple[str, str, str]]:
        """(key, value, source) for `config show`: tables flattened as `local.threads`."""
        data = self.public()
        data.pop("sources")
        shown = []
        for key, value in _flat(data).items():
            source = ("" if key in ("api_key", "history_key", "config_file")
                      else self.source_of(key))
            text = "" if value is None or value == {} else str(value)
            shown.append((key, text, source))
        return shown


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    words = {str: "a string", int: "a whole number", float: "a number", bool: "true or false"}
    return " or ".join(words.get(k, k.__name__) for k in kinds)


def _check_value(path: Path, key: str, value: Any, kind: type | tuple[type, ...]) -> None:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if key == "api_key_env" and not (isinstance(value, str) and ENV_NAME.fullmatch(value)):
        # Never echoed: the usual mistake is pasting the key itself here.
        raise ConfigError(f"{path}: key 'api_key_env' must name an environment variable"
                          " (e.g. OPENAI_API_KEY), not hold the key itself")
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise ConfigError(f"{path}: key {key!r} must be {_type_name(kind)}, got {value!r}")
    number: Any = value  # checked to be a number above when the key has a minimum
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{path}: key {key!r} must be a finite number, got {value!r}")
    if key in MAXIMUMS and number > MAXIMUMS[key]:
        raise ConfigError(f"{path}: key {key!r} must be at most {MAXIMUMS[key]}, got {value!r}")
    if key in MINIMUMS and number < MINIMUMS[key]:
        raise ConfigError(f"{path}: key {key!r} must be at least {MINIMUMS[key]}, got {value!r}")
    if key in POSITIVE and number <= 0:
        raise ConfigError(f"{path}: key {key!r} must be more than 0, got {value!r}")


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read config: {e.strerror}") from None
    validate(path, data)
    return data


def validate(path: Path, data: Mapping[str, Any]) -> None:
    for key, value in data.items():
        if key == "strategies":
            _validate_strategies(path, value)
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
            raise ConfigError(f"{path}: unknown key {key!r}")
    _check_provider(path, "provider", data)
    if "helper_provider" in data:
        _check_provider(path, "helper_provider", {"provider": data["helper_provider"]})
    if "strategy" in data:
        _check_strategy(path, "strategy", data["strategy"], {})
    _check_summary(path, data.get("summary", {}))
    embedder = data.get("embeddings", {}).get("provider", "auto")
    if embedder not in EMBEDDERS:
        raise ConfigError(f"{path}: key 'embeddings.provider' must be one of "
                          f"{', '.join(EMBEDDERS)}, got {embedder!r}")


def _check_summary(path: Path, table: Mapping[str, Any]) -> None:
    from chatmem.memory.summarize import check_prompt

    if "prompt" in table:
        check_prompt(table["prompt"], f"{path}: key 'summary.prompt'")
    _check_provider(path, "summary.provider", table)


def _check_provider(path: Path, key: str, table: Mapping[str, Any]) -> None:
    value = table.get("provider", "auto")
    if value not in PROVIDERS:
        raise ConfigError(
            f"{path}: key {key!r} must be one of {', '.join(PROVIDERS)}, got {value!r}"
        )


def _validate_strategies(path: Path, tables: Any) -> None:
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: key 'strategies' must be a table ([strategies.NAME])")
    for name, params in tables.items():
        if not isinstance(params, dict):
            raise ConfigError(f"{path}: key 'strategies.{name}' must be a table")
        _check_strategy(path, f"strategies.{name}", name, params)


def _check_strategy(path: Path, key: str, name: str, params: Mapping[str, Any]) -> None:
    from chatmem.memory import create_strategy

    try:
        create_strategy(name, params)
    except StrategyError as e:
        raise ConfigError(f"{path}: key {key!r}: {e}") from None


def load_settings(
    config_path: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Defaults, then the config file, then CHATMEM_* variables, then flags."""
    env = os.environ if env is None else env
    settings = Settings()
    explicit = _chosen_config(config_path, env)
    path = explicit or default_config_path()
    if explicit is not None and not path.exists():
        raise ConfigError(f"{path}: config file not found")
    if path.exists():
        data = read_config_file(path)
        data = _with_helper_aliases(path, data)
        for key, value in data.items():
            if key in ("local", "scripted", "summary", "embeddings"):
                getattr(settings, key).update(value)
            elif key == "strategies":
                settings.strategies = {k: dict(v) for k, v in value.items()}
            else:
                setattr(settings, key, value)
        settings.source = path
        settings.sources.update(dict.fromkeys(_flat(data), str(path)))
    for variable, key in ENV_KEYS.items():
        if env.get(variable):
            setattr(settings, key, env[variable])
            settings.sources[key] = f"env {variable}"
    for key, variable in (("provider", "CHATMEM_PROVIDER"),
                          ("helper_provider", "CHATMEM_HELPER_PROVIDER")):
        value = getattr(settings, key)
        if value is not None and value not in PROVIDERS:
            raise ConfigError(
                f"{variable} must be one of {', '.join(PROVIDERS)}, got {value!r}")
    for key, value in (overrides or {}).items():
        if value is not None:
            setattr(settings, key, value)
            settings.sources[key] = f"flag --{key.replace('_', '-')}"
    return settings


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


def config_path(config_path: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The config file chatmem reads: --config, else CHATMEM_CONFIG, else the app directory."""
    return _chosen_config(config_path, os.environ if env is None else env) or default_config_path()


def _chosen_config(path: Path | None, env: Mapping[str, str]) -> Path | None:
    """--config, else CHATMEM_CONFIG; None when neither names a file."""
    if path is not None:
        return path
    return Path(env["CHATMEM_CONFIG"]) if env.get("CHATMEM_CONFIG") else None


def example_config() -> str:
    """The commented example config, shipped inside the package."""
    from importlib.resources import files

    shipped = files("chatmem").joinpath("config.example.toml")
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    # An editable install reads it from the top of the checkout.
    return (Path(__file__).resolve().parent.parent / "config.example.toml").read_text("utf-8")
