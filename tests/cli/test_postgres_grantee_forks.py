"""A grantee's fork of the owner's session (PostgreSQL): her words stay hers in his copy.
The copy keeps who wrote each message (the server's `writer`, carried from the message it
copies: p024), so her "My name is Ann." is not his, and neither are her facts."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run
from grantees import profile, session_facts, shared_after, sql_as
from pg import NOW, Team

from chatmem.store import Store

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")


@pytest.mark.parametrize(("hers", "key", "her_value", "at"), [
    ("My name is Ann.", "name", "Ann", ()),
    ("我住在杭州。", "城市", "杭州", ()),
    # Forked before her later turn: his copy's extractor reads her words again.
    ("My name is Ann.", "name", "Ann", ("--at-turn", "1")),
    ("我住在杭州。", "城市", "杭州", ("--at-turn", "1")),
])
def test_a_grantees_fork_keeps_her_words_hers(
        team: Team, tmp_path: Path, hers: str, key: str, her_value: str,
        at: tuple[str, ...]) -> None:
    ann, bob, config = shared_after(team, tmp_path, hers)
    c = ("--config", str(config))
    run(ann, "ask", "proj", "ok", *c, code=0)
    forked = run(bob, "sessions", "fork", "ann/proj", "我的", *at, *c, code=0)
    # Named as he named it: a plain `proj` is his own, which he has none of.
    assert forked.stderr.splitlines()[0].startswith("forked session ann/proj → 我的 ")
    assert forked.stderr.splitlines()[-1] == "turn records (what was sent) stay with ann/proj"
    with Store(bob) as store:
        fork = store.sessions.find_session("我的")
        assert fork is not None
        said = store.history.messages(fork.id)
        assert store.history.speakers(fork.id, [m.id for m in said if m.role == "user"]) \
            == {m.id: "ann" for m in said if m.role == "user"}
    run(bob, "ask", "我的", "hi", *c, code=0)
    assert profile(bob, config) == {}
    assert session_facts(bob, "我的", config).get(key) in (None, (her_value, "ann"))
    assert profile(ann, config) == {key: her_value}


def test_a_copy_names_only_the_words_it_copies(team: Team, tmp_path: Path) -> None:
    """`copied_from` carries a writer only into one's own session, from a message one reads
    with the very words: no role makes new words, or words in her session, anyone's but his."""
    _, bob, config = shared_after(team, tmp_path, "我叫安娜。")
    (hers, proj), = team.rows("SELECT m.id, m.session_id FROM messages m"
                              " WHERE m.role = 'user'")
    run(bob, "ask", "自己的", "你好", "--config", str(config), code=0)
    (own, position), = team.rows("SELECT s.id, max(m.position) FROM sessions s JOIN"
                                 " messages m ON m.session_id = s.id WHERE s.owner = 'bob'"
                                 " GROUP BY s.id")
    insert = ("INSERT INTO messages (session_id, position, turn, role, content, created_at,"
              " copied_from) VALUES (%s, %s, %s, 'user', %s, %s, %s)")
    assert sql_as(bob, insert, [own, position + 1, 9, "我叫小偷。", NOW, hers]) == 1
    assert sql_as(bob, insert, [own, position + 2, 10, "我叫安娜。", NOW, hers]) == 1
    (last, turn), = team.rows("SELECT max(position), max(turn) FROM messages"
                              " WHERE session_id = %s", [proj])
    assert sql_as(bob, insert, [proj, last + 1, turn + 1, "我叫安娜。", NOW, hers]) == 1
    assert team.rows("SELECT content, writer, copied_from FROM messages WHERE writer IS NOT"
                     " NULL AND content LIKE '我叫%%' ORDER BY id") == [
        ("我叫安娜。", "ann", None), ("我叫小偷。", "bob", None), ("我叫安娜。", "ann", None),
        ("我叫安娜。", "bob", None)]
