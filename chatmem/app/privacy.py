"""Keeping and erasing: retention (prune idle sessions, a session's own retention), erasing a
user profile, and encrypting, decrypting or re-keying a history file."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from chatmem.errors import NotFound, UsageError

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.privacy.retention import Erasure
    from chatmem.store import SessionRecord
    from chatmem.store.open_files import FileKind

FOREVER = 0
"""A session's own retention that keeps it for good (`sessions retention S forever`)."""


def prune_history(workspace: Workspace, now: datetime, *, retention_days: float | None,
                  dry_run: bool = False) -> Erasure:
    """Erase sessions idle past their retention (a session's own wins over
    `retention_days`) and facts past their end, then vacuum; `dry_run` changes nothing."""
    from chatmem.privacy.retention import prune

    erased = prune(workspace.store, now, retention_days=retention_days,
                   fact_idle_days=workspace.settings.fact_idle_days, dry_run=dry_run)
    if not dry_run:
        drop_vector_cache()
    return erased


def set_retention(workspace: Workspace, name: str, days: int | None) -> SessionRecord:
    """Keep session `name` for `days` idle (FOREVER: for good; None: the default); returns
    the session as now stored."""
    store = workspace.store
    session = store.sessions.session(name)
    store.retention.set_retention(session.id, days)
    return store.sessions.session(name)


def forget_profile(workspace: Workspace, profile: str, *, dry_run: bool = False) -> Erasure:
    """Erase every session of user `profile` and its facts, then vacuum (`dry_run`: what
    would go)."""
    from chatmem.privacy.retention import forget_user

    erased = forget_user(workspace.store, profile, dry_run=dry_run)
    if not dry_run:
        drop_vector_cache()
    return erased


def vacuums(workspace: Workspace) -> bool:
    """True when erasing rewrites the history so nothing erased survives (a file); a
    PostgreSQL server frees the space at its own vacuum (it has no secure delete)."""
    return workspace.store.db.kind == "sqlite"


# -- a history file's encryption ---------------------------------------------------------


def existing_file(workspace: Workspace) -> Path:
    path = workspace.settings.db_path
    if not path.exists():
        raise NotFound(f"no history file at {path}")
    return path


def is_encrypted(path: Path) -> bool:
    return history_file_kind(path) == "encrypted"


def history_file_kind(path: Path) -> FileKind:
    """What the file's first bytes say: missing (or empty), plain SQLite, encrypted, other."""
    from chatmem.store import cipher

    return cipher.file_kind(path)


def check_opens(path: Path, key: str | None) -> None:
    """Open the file once the normal way: it is ours, the key is right, its schema is current."""
    from chatmem.store import Store

    Store(path, key=key).close()


def check_encryptable(path: Path) -> None:
    """The plain history file at `path` can be encrypted: SQLCipher is installed (else one line
    naming the extra), the file is not encrypted yet, and it opens as a chatmem history."""
    from chatmem.store import cipher

    cipher.driver()
    if is_encrypted(path):
        raise UsageError(f"{path} is already encrypted; `chatmem rekey` changes its key")
    check_opens(path, None)


def encrypt_file(path: Path, key: str) -> Path | None:
    """Copy the plain file at `path` (see `check_encryptable`) into an encrypted one beside
    it, check it, and rename it over the original in one step: an interruption leaves the
    original as it was. The vector cache it deleted, if there was one."""
    from chatmem.config.paths import vector_cache_path
    from chatmem.store import cipher

    cipher.convert(path, None, key)
    # The cache is never written for an encrypted history: what evals and replays of the
    # plain one left there (vectors, sha256 digests of short secrets) would outlive it.
    return vector_cache_path() if drop_vector_cache() else None


def decrypt_file(path: Path, key: str) -> None:
    """Turn the encrypted file at `path` (under `key`) back into a plain SQLite file."""
    from chatmem.store import cipher

    cipher.convert(path, key, None)


def rekey_file(path: Path, key: str, new: str) -> None:
    """Encrypt the file at `path` under `new` instead of `key`."""
    from chatmem.store import cipher

    if new == key:
        raise UsageError("the new key is the current key; nothing was changed")
    cipher.convert(path, key, new)


def key_hint() -> str:
    """Where a history key comes from, for an error that asks for one."""
    from chatmem.store import cipher

    return cipher.KEY_HINT


def drop_vector_cache() -> bool:
    """After an erasure (a command's, or retention's at start-up): the user's vector cache
    (evals and replays keep vectors and digests of the texts they embedded there) may hold
    some of what was erased, so it goes too; and so do this process's caches of texts (a
    server's run for days: chatmem.text_caches). Whether there was a vector cache."""
    from chatmem.config.paths import drop_vector_cache as drop
    from chatmem.text_caches import forget_texts

    forget_texts()
    return drop()
