"""A write share revoked while the grantee's turn is in flight (PostgreSQL): his reply is
not stored in her session, and he is told so, naming it as he named it."""

from __future__ import annotations

from typing import Any

import pytest
from cli_runner import repl, run
from pg import Team

from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")


@pytest.mark.parametrize("strategy", ["summary", "buffer"])
def test_a_share_revoked_during_his_turn_is_said_and_nothing_is_stored(
        team: Team, strategy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ann, bob = team.url("ann"), team.url("bob")
    with Store(ann) as store:
        repl(store, "a", ["我们的预算是五千元。", "My order is ORD-7731."], strategy=strategy)
    run(ann, "sessions", "share", "a", "--with", "bob", "--write", code=0)
    before = team.rows("SELECT id, content FROM messages ORDER BY id")
    streamed = ScriptedProvider.stream

    def revoking(self: ScriptedProvider, messages: Any) -> Any:
        run(ann, "sessions", "unshare", "a", "--with", "bob", code=0)
        return streamed(self, messages)

    monkeypatch.setattr(ScriptedProvider, "stream", revoking)
    done = run(bob, "ask", "ann/a", "鲍勃：预算多少？", "--provider", "scripted")
    assert done.exit_code != 0 and "Traceback" not in done.stderr
    assert "ann/a" in done.stderr and "no longer shared" in done.stderr
    assert "not stored" in done.stderr
    assert team.rows("SELECT id, content FROM messages ORDER BY id") == before
