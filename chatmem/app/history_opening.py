"""Opening a workspace's history: a file (moved from its legacy place, with its key, asked
for at the terminal when none is set) or PostgreSQL, or one in memory for a one-off."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from chatmem.config.location import LocationKind
from chatmem.errors import HistoryLocked, NotFound, StoreError, StoreFailure
from chatmem.history_notices import HistoryWritableByOthers
from chatmem.store import Store

if TYPE_CHECKING:
    from chatmem.app.model_pool import ModelPool
    from chatmem.config.location import HistoryLocation
    from chatmem.config.settings import Settings
    from chatmem.notices import Notice


def open_history(settings: Settings, *, create: bool, one_off: bool,
                 ask_key: Callable[[str], str] | None, tell: Callable[[Notice], None],
                 pool: ModelPool | None, key_elsewhere: bool = False,
                 ) -> tuple[Store, str | None, bool]:
    """The history `settings` name, the key it was opened with (None: none), and whether
    `ask_key` gave it (Workspace's `create`, `one_off`, `ask_key` and models pool; `tell`
    hears what opening did). `key_elsewhere`: a key set is another history's (`sessions
    copy` from or to an encrypted file), not one a PostgreSQL history would ignore."""
    if one_off:
        return Store(":memory:"), None, False
    where = settings.location  # parsed once here; the store is given it, typed
    if where.kind is LocationKind.POSTGRESQL:
        if not key_elsewhere and (source := settings.key_source()) is not None:
            # Ignored, the key would let its user believe the history is encrypted.
            raise StoreError(f"{source} is set, but a key encrypts a SQLite history file "
                             "only; a PostgreSQL database is protected by its server "
                             f"(unset {source})")
        try:
            return Store(where, on_upgrade=tell), None, False  # the server protects it
        except StoreError as e:
            # A reading command on a database no one has opened yet shows it empty, as
            # on a fresh file; a writing command says who must open it first.
            if create or e.kind is not StoreFailure.NO_TABLES:
                raise
            return Store.empty_standing_in(where), None, False
    if settings.db is None:
        _move_legacy_file(tell)
    path = where.path
    if not create and not path.exists():
        if settings.db is not None:
            raise NotFound(f"no history file at {path} (chat, ask SESSION and sessions "
                           "import create it)")
        return Store.empty_standing_in(where), None, False  # nothing stored yet, nor on disk
    opened = _opened_file(settings, where, path, tell, pool, ask_key, key_elsewhere)
    # Told once it opened: a file that cannot be opened says only why (one line).
    _check_writers(path, tell)
    return opened


def _opened_file(settings: Settings, where: HistoryLocation, path: Path,
                 tell: Callable[[Notice], None], pool: ModelPool | None,
                 ask_key: Callable[[str], str] | None, key_elsewhere: bool,
                 ) -> tuple[Store, str | None, bool]:
    """The history file opened as `open_history` says (its key, and whether asked)."""
    try:
        if key_elsewhere and _plain(path):
            # `sessions copy` between an encrypted file and a plain one: the key set is the
            # other file's, and a plain file refuses a key it would be opened with.
            return Store(where, on_upgrade=tell), None, False
        return *_keyed_store(settings, where, path, tell, pool), False
    except HistoryLocked as e:
        if not (e.missing and ask_key is not None):
            raise
        typed = ask_key(f"key for {path}: ")
        return Store(where, key=typed, on_upgrade=tell), typed, True


def _keyed_store(settings: Settings, where: HistoryLocation, path: Path,
                 tell: Callable[[Notice], None], pool: ModelPool | None,
                 ) -> tuple[Store, str | None]:
    """The history file, and the key it opened with: its configured key, or the one a
    server's pool kept from an earlier open (key_command runs once for a server): a kept
    key the file no longer takes (`chatmem rekey` since) is forgotten and the command run again."""
    kept = pool.history_key(where) if pool is not None else None
    if pool is not None and kept is not None:
        try:
            return Store(where, key=kept, on_upgrade=tell), kept
        except HistoryLocked:
            pool.forget_history_key(where, kept)
    key = _history_key(settings, path)
    store = Store(where, key=key, on_upgrade=tell)
    if key is not None and pool is not None:
        pool.keep_history_key(where, key)
    return store, key


def _move_legacy_file(tell: Callable[[Notice], None]) -> None:
    from chatmem.config.paths import legacy_db_left, move_legacy_db
    from chatmem.history_notices import HistoryMoved, OldHistoryLeft
    from chatmem.store.sqlite_files import fold_wal

    moved = move_legacy_db(fold_wal)
    if moved is not None:
        tell(HistoryMoved(*moved))
    elif (left := legacy_db_left()) is not None:
        tell(OldHistoryLeft(*left))


_TOLD: set[object] = set()
"""The warnings told in this process: a server opens the history for every request, and
each is said once (on its console as it starts), not in every request's log line."""


def _check_writers(path: Path, tell: Callable[[Notice], None]) -> None:
    """Tell when another account could read or write the history file or replace it, as
    the config file's check finds it (chatmem.config.trust): the file, or its -wal or -shm
    (pages of it, read and written as it is), belonging to another account (who reads it and
    may chmod it at will) or writable by others; a warning, the history being the user's;
    once in a process for each way it is found."""
    from chatmem.config.trust import replaceable_by_others

    if not hasattr(os, "geteuid"):
        return  # no owners to compare (Windows)
    notice = None
    for each in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        notice = _foreign(each, os.geteuid())
        if notice is not None:
            break
    if notice is None and path.exists() and (
            replaceable := replaceable_by_others(path)) is not None:
        notice = HistoryWritableByOthers(path, problem=replaceable.problem(),
                                         fix=replaceable.fix("the history file"))
    if notice is not None and notice not in _TOLD:
        _TOLD.add(notice)
        tell(notice)


def _foreign(path: Path, me: int) -> HistoryWritableByOthers | None:
    """How another account may read or write `path`, a file of the history, or None (also
    when it is not there: created next, 0600, or opening it says why)."""
    from chatmem.config.trust import writable_by_others
    from chatmem.store.sqlite_files import shell_word

    try:
        st = path.stat()
    except OSError:
        return None
    if st.st_uid not in (me, 0):
        fix = (f"chown {me}:{os.getegid()} {shell_word(path)}" if me == 0 else
               f"`chatmem sessions copy --from {shell_word(path)} --to NEW.db` makes a copy"
               " of your own")
        return HistoryWritableByOthers(path, owner=st.st_uid, fix=fix)
    if writable_by_others(st):
        return HistoryWritableByOthers(path, mode=st.st_mode & 0o777,
                                       fix=f"chmod go-w {shell_word(path)}")
    return None


def _plain(path: Path) -> bool:
    from chatmem.store.cipher import file_kind

    return file_kind(path) == "plain"


def _history_key(settings: Settings, path: Path) -> str | None:
    """$CHATMEM_KEY, or key_command's output when the file needs a key (key_command_needed):
    a plain file with key_command set is refused as with any key set, the command unrun."""
    from chatmem.store.sqlite_files import check_key, key_command_needed

    if settings.key_source() == "key_command" and not key_command_needed(path):
        check_key(path, "")  # raises for a plain file, which refuses any key set
        return None
    return settings.history_key()
