"""/remember in a session another shell deleted meanwhile says so, as the next turn does.

Review: it said "error: database error: FOREIGN KEY constraint failed" (SQLite; row security
on PostgreSQL), naming neither the session nor what happened; a turn says "session 'live'
was deleted meanwhile".
"""

from __future__ import annotations

import pytest
from conftest import History
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.errors import ExitCode
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render import make_console
from chatmem.repl.loop import Repl
from chatmem.store import Store

GONE = ("error: session 'live' was deleted meanwhile (or is no longer shared with you):"
        " nothing was remembered; /new live starts it again, /switch SESSION goes on in"
        " another")


def test_remember_in_a_session_deleted_meanwhile_says_so(
        store: Store, history: History, capsys: pytest.CaptureFixture[str]) -> None:
    engine = open_session(store, Settings(user_facts=True), ScriptedProvider(), "live",
                          strategy="entity")
    repl = Repl(engine, make_console(), make_console(stderr=True))
    repl.loop(["hello"])
    with history.open() as other:
        other.sessions.delete_session("live")
    capsys.readouterr()
    repl.loop(["/remember city: Oslo", "/remember --user name: Zebulon"])
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert errors == [GONE, GONE]
    assert store.facts.facts(include_deleted=True) == []


def test_a_message_in_a_session_deleted_meanwhile_says_how_to_go_on(
        store: Store, history: History, capsys: pytest.CaptureFixture[str]) -> None:
    """It said only "nothing was sent", and the chat stayed on the deleted session: each
    message met the same line, none said what to do."""
    engine = open_session(store, Settings(), ScriptedProvider(), "旅行", strategy="window")
    repl = Repl(engine, make_console(), make_console(stderr=True))
    repl.loop(["你好"])
    with history.open() as other:
        other.sessions.delete_session("旅行")
    capsys.readouterr()
    repl.loop(["还在吗？", "/new 旅行", "重新开始"])
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert errors == ["error: session '旅行' was deleted meanwhile (or is no longer shared with"
                      " you): nothing was sent; /new 旅行 starts it again, /switch SESSION goes"
                      " on in another"]
    assert repl.exit_code == ExitCode.ERROR
    assert [m.content for m in store.history.messages(store.sessions.session("旅行").id)] == [
        "重新开始", "echo #2: 重新开始"]
