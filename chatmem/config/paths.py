"""Where chatmem's files live: the platform's config, data and cache directories, the config file
that --config or CHATMEM_CONFIG chooses, and the example config shipped in the package."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from chatmem.errors import ConfigError, StoreError, StoreFailure

APP_NAME = "chatmem"


def user_path(text: str | Path) -> Path:
    """`text` as a path, a leading `~` read as the home folder (`~ann/`: ann's). A `~name`
    no user has is a file of that name (`chat -a ./~draft.txt` keeps `~draft.txt`): it is
    not the traceback pathlib's "Could not determine home directory" was."""
    path = Path(text)
    try:
        return path.expanduser()
    except RuntimeError:
        return path


def _platform_dir(kind: str, unix_default: str) -> Path:
    """platformdirs' `user_KIND_dir` for chatmem, a relative XDG_*_HOME ignored as the XDG
    spec says: platformdirs does so since September 2026 (its #540); the versions before it
    that pyproject allows took it as given, each working folder a history of its own."""
    import platformdirs

    path = Path(getattr(platformdirs, f"user_{kind}_dir")(APP_NAME, appauthor=False))
    return path if path.is_absolute() else Path.home() / unix_default / APP_NAME


def config_dir() -> Path:
    """The platform's config directory (~/.config/chatmem on Linux, XDG_CONFIG_HOME honoured)."""
    return _platform_dir("config", ".config")


def data_dir() -> Path:
    """The platform's data directory (~/.local/share/chatmem on Linux, XDG_DATA_HOME honoured)."""
    return _platform_dir("data", ".local/share")


def cache_dir() -> Path:
    """The platform's cache directory (~/.cache/chatmem on Linux, XDG_CACHE_HOME honoured)."""
    return _platform_dir("cache", ".cache")


def vector_cache_path() -> Path:
    """Vectors that evals and replays of transcripts keep between runs (see store.vector_cache)."""
    return cache_dir() / "vectors.sqlite"


def drop_vector_cache() -> bool:
    """Delete the vector cache (its entries are vectors and digests of texts: after an
    erasure some may be of what was erased; the next run that needs one embeds anew).
    Whether there was one."""
    path = vector_cache_path()
    existed = path.exists()
    for part in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        part.unlink(missing_ok=True)
    return existed


def default_config_path() -> Path:
    return config_dir() / "config.toml"


def default_db_path() -> Path:
    return data_dir() / "chatmem.db"


def legacy_db_path() -> Path:
    """Where chatmem kept the history file before it moved to the data directory."""
    return config_dir() / "chatmem.db"


def move_legacy_db(fold_wal: Callable[[Path], object]) -> tuple[Path, Path] | None:
    """Move a history file from the config directory to the data directory, once.

    Returns (from, to), for the caller to tell the user; None when there was
    nothing to move (or a file is already in the data directory: nothing is
    overwritten). The WAL is folded into the file first (by `fold_wal`, the store's:
    configuration sits below the store), so the move is whole.
    """
    import shutil

    old, new = legacy_db_path(), default_db_path()
    if new.exists() or not old.is_file():
        return None
    try:
        fold_wal(old)  # an encrypted file keeps its WAL: it moves with it below
        new.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(old), str(new))
        wal = old.with_name(old.name + "-wal")
        if wal.exists() and wal.stat().st_size:
            shutil.move(str(wal), str(new.with_name(new.name + "-wal")))
        for suffix in ("-wal", "-shm"):
            old.with_name(old.name + suffix).unlink(missing_ok=True)
    except OSError as e:
        raise ConfigError(f"{old}: cannot move the history file to {new}: {e}") from None
    except StoreError as e:
        if e.kind is StoreFailure.BUSY:
            # An older chatmem still writes there: moved now, its next turns would be lost.
            raise ConfigError(f"{old} is open in another chatmem process (an older version "
                              f"keeps it there); close it, and chatmem moves it to {new}"
                              ) from None
        raise ConfigError(f"{old}: cannot move the history file to {new}: {e.reason}") from None
    return old, new


def legacy_db_left() -> tuple[Path, Path] | None:
    """(old, new) when an older chatmem's history file is in the config directory while one
    is in the data directory already (so it was never moved, and is not read)."""
    old, new = legacy_db_path(), default_db_path()
    return (old, new) if old.is_file() and new.exists() else None


def config_path(config_path: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The config file chatmem reads: --config, else CHATMEM_CONFIG, else the app directory."""
    return chosen_config(config_path, os.environ if env is None else env) or default_config_path()


def chosen_config(path: Path | None, env: Mapping[str, str]) -> Path | None:
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
    return (Path(__file__).resolve().parents[2] / "config.example.toml").read_text("utf-8")
