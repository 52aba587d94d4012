"""Who stated a session fact, as the server says it (p024): a role other than the session's
owner who inserts a fact, or changes its key, value or speaker, is its speaker, whatever his
statement names. An older database upgrades to it losing nothing, its facts read as
before; a database so upgraded is refused by an older chatmem, as any newer one is."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from grantees import INSUFFICIENT_PRIVILEGE, shared_session, sql_as
from pg import NOW, OldHistory, PostgresServer, migrated_before, older_chatmem_refuses

from chatmem.store import Store

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

P024 = "p024_grantee_facts_are_his"
FACTS = "SELECT key, value, speaker, owner FROM facts ORDER BY id"
MESSAGES = "SELECT id, content, owner, writer FROM messages ORDER BY id"


@pytest.fixture
def before_p024(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, P024) as old:
        yield old



def add_fact(url: str, session_id: int, key: str, value: str, speaker: str | None,
             source: int | None = None) -> None:
    assert sql_as(url, "INSERT INTO facts (scope, session_id, key, value, created_at,"
                       " updated_at, speaker, source_message_id)"
                       " VALUES ('session', %s, %s, %s, %s, %s, %s, %s)",
                  [session_id, key, value, NOW, NOW, speaker, source]) == 1


def add_message(url: str, session_id: int, position: int, role: str, text: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return int(conn.execute(
            "INSERT INTO messages (session_id, position, turn, role, content, created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
            [session_id, position, position, role, text, NOW]).fetchone()[0])


def test_an_older_databases_facts_read_as_before_and_new_ones_say_who(
        before_p024: OldHistory, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p024
    ann, bob = old.url("ann"), old.url("bob")
    session_id = shared_session(ann)
    add_fact(ann, session_id, "名字", "安娜", None)
    add_fact(bob, session_id, "城市", "深圳", "bob")  # as chatmem's client wrote his
    add_fact(bob, session_id, "爱好", "滑雪", None)  # the hole: read as hers, and kept so
    earlier = add_message(ann, session_id, 1, "user", "我叫安娜。")
    with old.server.admin(old.database) as conn:
        before = conn.execute(FACTS).fetchall()
        messages = conn.execute(MESSAGES).fetchall()
    assert messages == [(earlier, "我叫安娜。", "ann", "ann")]
    assert before == [("名字", "安娜", None, "ann"), ("城市", "深圳", "bob", "ann"),
                      ("爱好", "滑雪", None, "ann")]

    PostgresBackend(old.url(old.keeper)).close()

    with old.server.admin(old.database) as conn:
        assert conn.execute(FACTS).fetchall() == before
        assert conn.execute(MESSAGES).fetchall() == messages
    # From now on: his new fact, and her fact he rewrites, are his; hers stay hers.
    add_fact(bob, session_id, "name", "Mallory", None)
    add_fact(bob, session_id, "工作", "厨师", "ann")
    add_fact(ann, session_id, "宠物", "猫", None)
    # What his client's catch-up of her words writes stays hers: a value her message (not
    # a reply, not his) holds; one it does not hold is his.
    said = add_message(ann, session_id, 2, "user", "我对青霉素过敏。I love Tea.")
    replied = add_message(ann, session_id, 3, "assistant", "记住了：你叫 Mallory。")
    his = add_message(bob, session_id, 4, "user", "ann 的名字是 Mallory。")
    add_fact(bob, session_id, "过敏", "青霉素", None, said)
    add_fact(bob, session_id, "drink", "tea", None, said)
    add_fact(bob, session_id, "名", "Mallory", None, said)
    add_fact(bob, session_id, "名", "Mallory", None, replied)
    add_fact(bob, session_id, "名", "Mallory", None, his)
    # Her fact he would rewrite (p024 made it his, hers gone) is refused since p033.
    assert sql_as(bob, "UPDATE facts SET value = '小偷', speaker = NULL WHERE key = '名字'"
                  ) == INSUFFICIENT_PRIVILEGE
    assert sql_as(bob, "UPDATE facts SET used_at = %s WHERE key = '爱好'", [NOW]) == 1
    with old.server.admin(old.database) as conn:
        assert conn.execute(FACTS).fetchall() == [
            ("名字", "安娜", None, "ann"), ("城市", "深圳", "bob", "ann"),
            ("爱好", "滑雪", None, "ann"), ("name", "Mallory", "bob", "ann"),
            ("工作", "厨师", "bob", "ann"), ("宠物", "猫", None, "ann"),
            ("过敏", "青霉素", None, "ann"), ("drink", "tea", None, "ann"),
            ("名", "Mallory", "bob", "ann"), ("名", "Mallory", "bob", "ann"),
            ("名", "Mallory", "bob", "ann")]
    # Nor does he make her cited fact say what her words do not.
    assert sql_as(bob, "UPDATE facts SET value = '花粉' WHERE key = '过敏'"
                  ) == INSUFFICIENT_PRIVILEGE
    with old.server.admin(old.database) as conn:
        assert conn.execute("SELECT value, speaker FROM facts WHERE key = '过敏'"
                            ).fetchall() == [("青霉素", None)]
    # His fork of her session: her message hers (the copy's writer), his kept as his by
    # position (as a fork kept it before), her reply nobody's.
    with Store(bob) as store:
        store.forks.fork_session("ann/旅行", "分支")
        forked = store.sessions.find_session("分支")
        assert forked is not None
        copies = [m.id for m in store.history.messages(forked.id)]
        assert store.history.speakers(forked.id, copies) == {
            copies[0]: "ann", copies[1]: "ann", copies[3]: "bob"}
    with old.server.admin(old.database) as conn:
        assert conn.execute("SELECT content, writer, copied_from FROM messages"
                            " WHERE owner = 'bob' ORDER BY position").fetchall() == [
            ("我叫安娜。", "ann", None), ("我对青霉素过敏。I love Tea.", "ann", None),
            ("记住了：你叫 Mallory。", "ann", None), ("ann 的名字是 Mallory。", "bob", None)]
        # Her facts copied into his fork are hers (no speaker was the session owner's).
        assert conn.execute("SELECT key, speaker FROM facts WHERE owner = 'bob'"
                            " AND speaker IS DISTINCT FROM 'bob' ORDER BY id").fetchall() == [
            ("名字", "ann"), ("爱好", "ann"), ("宠物", "ann"), ("过敏", "ann"),
            ("drink", "ann")]
    # An older chatmem (one that knows no p024) refuses the upgraded database.
    older_chatmem_refuses(ann, P024, monkeypatch)
