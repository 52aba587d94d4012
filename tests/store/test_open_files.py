"""A process that opens its history file again (a server's every request) keeps the locks of
the connections it holds: the file's header is not read with plain file I/O meanwhile,
whose close would free them and let another process remove the log under them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from chatmem.store import Store

OPEN_AND_CLOSE = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]);"
                  " c.execute('SELECT count(*) FROM sessions').fetchall(); c.close()")


def test_opening_the_file_again_keeps_the_locks_of_the_connection_held(db_path: Path) -> None:
    log = db_path.with_name(db_path.name + "-wal")
    with Store(db_path) as held:
        session = held.sessions.create_session("trip", "window")
        held.history.import_messages(session.id, [
            {"role": "user", "content": f"{n}: José 住在波尔图 near the river"} for n in range(50)])
        Store(db_path).close()  # this process opens the file again, and closes it
        # Another process: while `held` keeps its locks, it is not the file's last user,
        # so its close leaves the log where `held` reads it.
        subprocess.run([sys.executable, "-c", OPEN_AND_CLOSE, str(db_path)], check=True)
        assert log.exists()
        with Store(db_path) as other:
            other.sessions.delete_session("trip")
            other.sessions.create_session("next", "window")
        assert [row.name for row in held.sessions.list_sessions()] == ["next"]
        assert held.sessions.session("next").strategy == "window"


def test_the_kind_is_read_again_once_the_last_connection_closed(db_path: Path) -> None:
    from chatmem.store import cipher

    with Store(db_path), Store(db_path):
        assert cipher.file_kind(db_path) == "plain"
    # Nothing of this process holds it now: the header says, read again (the same file,
    # written over in place).
    db_path.write_text("not a database, but text long enough to read", encoding="utf-8")
    assert cipher.file_kind(db_path) == "other"


def test_the_vector_cache_opened_again_keeps_the_locks_of_a_connection_to_it(
        tmp_path: Path) -> None:
    import sqlite3

    from chatmem.store.vector_cache import VectorCacheFile

    path = tmp_path / "vectors.db"
    VectorCacheFile(path)
    held = sqlite3.connect(path)  # a lookup of another thread, under way
    try:
        held.execute("CREATE TABLE IF NOT EXISTS probe (x)")
        held.execute("INSERT INTO probe VALUES (1)")
        held.commit()
        VectorCacheFile(path)  # opened again in this process
        subprocess.run([sys.executable, "-c", OPEN_AND_CLOSE.replace("sessions", "probe"),
                        str(path)], check=True)
        assert path.with_name(path.name + "-wal").exists()
        assert held.execute("SELECT x FROM probe").fetchall() == [(1,)]
    finally:
        held.close()
