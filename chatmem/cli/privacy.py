"""`chatmem encrypt|decrypt|rekey`: the history file's encryption at rest."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from chatmem.cli.common import (
    ConfigOption,
    DbOption,
    ask_key,
    consoles,
    handles_errors,
    settings_from,
)

if TYPE_CHECKING:
    from chatmem.config import Settings

NEW_KEY_ENV = "CHATMEM_NEW_KEY"


def _existing(settings: Settings) -> Path:
    from chatmem.errors import NotFound

    path = settings.db_path
    if not path.exists():
        raise NotFound(f"no history file at {path}")
    return path


def _current_key(settings: Settings, path: Path) -> str:
    """The key the encrypted file is under: configured, or typed at a terminal."""
    from chatmem.errors import HistoryLocked
    from chatmem.store import cipher

    key = settings.history_key()
    if key is not None:
        return key
    if sys.stdin.isatty():
        return ask_key(f"key for {path}: ")
    raise HistoryLocked(f"{path} is encrypted: {cipher.KEY_HINT}", missing=True)


def _new_key(settings: Settings | None, what: str) -> str:
    """A key to encrypt with: configured (or $CHATMEM_NEW_KEY for rekey), else typed twice."""
    from chatmem.errors import UsageError

    key = os.environ.get(NEW_KEY_ENV) if settings is None else settings.history_key()
    if key:
        return key
    if sys.stdin.isatty():
        return ask_key(f"new key for {what}: ", twice=True)
    source = f"${NEW_KEY_ENV}" if settings is None else "CHATMEM_KEY or key_command"
    raise UsageError(f"no key to encrypt with: set {source}, or run this in a terminal to "
                     "type one")


def _check_opens(settings: Settings, path: Path, key: str | None) -> None:
    """Open the file once the normal way: it is ours, the key is right, its schema is current."""
    from chatmem.store import Store

    Store(path, key=key).close()


def _size(path: Path) -> str:
    size = path.stat().st_size
    return f"{size / 1024:,.0f} KiB" if size < 1024 ** 2 else f"{size / 1024 ** 2:,.1f} MiB"


@handles_errors
def encrypt(db: DbOption = None, config: ConfigOption = None) -> None:
    """Encrypt the history file with the key from CHATMEM_KEY or key_command (or typed).

    The file is copied into an encrypted file beside it, checked, and renamed over
    the original in one step: an interruption leaves the original as it was.
    Needs chatmem[encrypt].

    Example: CHATMEM_KEY=... chatmem encrypt
    """
    from chatmem.errors import UsageError
    from chatmem.store import cipher

    settings = settings_from(config, db)
    path = _existing(settings)
    cipher.driver()
    if cipher.file_kind(path) == "encrypted":
        raise UsageError(f"{path} is already encrypted; `chatmem rekey` changes its key")
    _check_opens(settings, path, None)
    key = _new_key(settings, str(path))
    cipher.convert(path, None, key)
    consoles()[1].print(f"encrypted {path} ({_size(path)}); keep the key safe: without it "
                        "the history cannot be read", markup=False, soft_wrap=True)


@handles_errors
def decrypt(db: DbOption = None, config: ConfigOption = None) -> None:
    """Turn an encrypted history file back into a plain SQLite file (needs its key).

    Afterwards unset CHATMEM_KEY and key_command: a key set for a plain file is
    an error, so that nobody believes a plain file is encrypted.

    Example: chatmem decrypt --db old.db
    """
    from chatmem.errors import UsageError
    from chatmem.store import cipher

    settings = settings_from(config, db)
    path = _existing(settings)
    if cipher.file_kind(path) != "encrypted":
        raise UsageError(f"{path} is not encrypted")
    key = _current_key(settings, path)
    _check_opens(settings, path, key)
    cipher.convert(path, key, None)
    consoles()[1].print(f"decrypted {path}: it is a plain SQLite file now; unset "
                        "CHATMEM_KEY and key_command", markup=False, soft_wrap=True)


@handles_errors
def rekey(db: DbOption = None, config: ConfigOption = None) -> None:
    """Encrypt the history file under a new key: from CHATMEM_NEW_KEY, or typed twice.

    The current key comes from CHATMEM_KEY or key_command (or is typed).

    Example: CHATMEM_NEW_KEY=... chatmem rekey
    """
    from chatmem.errors import UsageError
    from chatmem.store import cipher

    settings = settings_from(config, db)
    path = _existing(settings)
    if cipher.file_kind(path) != "encrypted":
        raise UsageError(f"{path} is not encrypted; `chatmem encrypt` encrypts it")
    key = _current_key(settings, path)
    _check_opens(settings, path, key)
    new = _new_key(None, str(path))
    if new == key:
        raise UsageError("the new key is the current key; nothing was changed")
    cipher.convert(path, key, new)
    consoles()[1].print(f"re-encrypted {path} under the new key; use it from now on "
                        "(CHATMEM_KEY or key_command)", markup=False, soft_wrap=True)
