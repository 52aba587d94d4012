"""A PostgreSQL server that stops answering does not hang a turn for ever: chatmem's own
statement_timeout where none is set, TCP keepalives, and a Ctrl-C that reaches a frozen
backend said in chatmem's words (psycopg's warning is not printed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import suppress

import pytest
from waiting import HANG, ctrl_c_reaches_it

from chatmem.errors import StoreError, StoreFailure
from chatmem.store.postgres_backend import PostgresBackend


def test_a_statement_past_chatmems_limit_is_one_line_and_the_next_goes_on(
        pg_url: str) -> None:
    with PostgresBackend(pg_url, statement_timeout_ms=200) as db:
        with pytest.raises(StoreError) as caught:
            db.execute("SELECT pg_sleep(3)")
        assert caught.value.kind is StoreFailure.TIMED_OUT
        assert "chatmem's limit (200ms)" in caught.value.message
        assert "\n" not in caught.value.message
        assert db.execute("SELECT name FROM sessions").fetchall() == []


def test_chatmems_limit_and_keepalives_unless_the_url_or_role_sets_them(
        pg_url: str) -> None:
    with PostgresBackend(pg_url) as db:
        assert db.execute("SHOW statement_timeout").fetchone()[0] == "5min"
        given = db._conn.info.get_parameters()
        assert (given["keepalives_idle"], given["tcp_user_timeout"]) == ("30", "60000")
    with PostgresBackend(pg_url + "&options=-c%20statement_timeout%3D0&keepalives_idle=7") as db:
        assert db.execute("SHOW statement_timeout").fetchone()[0] == "0"
        assert db._conn.info.get_parameters()["keepalives_idle"] == "7"


_FROZEN = """
import os, signal, sys, threading
from chatmem.store.postgres_backend import PostgresBackend

with PostgresBackend(sys.argv[1]) as db:
    pid = int(db.execute("SELECT pg_backend_pid()").fetchone()[0])
    print(pid, flush=True)
    os.kill(pid, signal.SIGSTOP)  # this connection's server process only
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        db.execute("SELECT count(*) FROM sessions")
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    os.kill(pid, signal.SIGCONT)
    print(db.execute("SELECT pg_backend_pid()").fetchone()[0] != pid)
"""


def test_ctrl_c_on_a_frozen_backend_closes_the_connection_without_psycopgs_text(
        pg_url: str) -> None:
    """psycopg cancels, waits 5 s, then closes the connection and logs a warning that,
    with no logging set up (as in chatmem), Python printed as is."""
    child = subprocess.Popen([sys.executable, "-c", _FROZEN, pg_url], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_reaches_it)
    pid = int(child.stdout.readline()) if child.stdout else 0
    try:
        out, err = child.communicate(timeout=HANG)
    finally:
        if pid:
            with suppress(ProcessLookupError):  # gone, once its client closed
                os.kill(pid, signal.SIGCONT)
        child.kill()
    assert out.split() == ["interrupted", "True"], err
    assert err == ""
