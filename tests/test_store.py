"""The history file: pragmas, atomic turns, physical deletion, refusing foreign files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from cached_counts import cached_counts
from dialect import refuse_inserts, set_read_only, word_entries
from matches import matches

from chatmem.errors import (
    NotChatmemDatabase,
    NotFound,
    StoreError,
    StoreFailure,
    TurnNotCommittable,
    UsageError,
)
from chatmem.store import Store, TurnRecord

DISTINCT = "ZEBRA-XYZZY-42 杭州秘密"


def turn(session_id: int, text: str, reply: str | None = "ok", status: str = "ok") -> TurnRecord:
    return TurnRecord(session_id=session_id, status=status, input=text, reply=reply,
                      context={"parts": []}, strategy="buffer")


@pytest.mark.sqlite_only(reason="SQLite's own settings")
def test_pragmas(store: Store) -> None:
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.db.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert store.db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL, safe under WAL
    assert store.db.execute("PRAGMA secure_delete").fetchone()[0] == 1


@pytest.mark.sqlite_only(reason="SQLite's catalogue; PostgreSQL's: tests/store/test_postgres_*")
def test_tables_exist(store: Store) -> None:
    names = {r[0] for r in store.db.execute("SELECT name FROM sqlite_master")}
    assert {"sessions", "messages", "turns", "summaries", "facts", "messages_fts",
            "token_counts", "strategy_state", "chatmem_meta"} <= names


def test_commit_turn_stores_both_messages_and_the_turn(store: Store) -> None:
    session = store.sessions.create_session("s", "buffer")
    committed = store.turns.commit_turn(turn(session.id, "我的订单号是ORD-7731", "记下了"))
    messages = store.history.messages(session.id)
    assert [(m.role, m.content, m.turn, m.position) for m in messages] == [
        ("user", "我的订单号是ORD-7731", 1, 1), ("assistant", "记下了", 1, 2)]
    assert committed.number == 1 and committed.history_turn == 1
    assert (committed.user_message_id, committed.assistant_message_id) == (
        messages[0].id, messages[1].id)
    assert store.turns.turn(session.id).input == "我的订单号是ORD-7731"


@pytest.mark.parametrize("status", ["failed", "cancelled"])
def test_failed_and_cancelled_turns_record_only_the_turn_row(store: Store, status: str) -> None:
    session = store.sessions.create_session("s", "buffer")
    store.turns.record_turn(turn(session.id, "hello", reply=None, status=status))
    assert store.history.messages(session.id) == []
    assert word_entries(store) == 0
    assert [t.status for t in store.turns.turns(session.id)] == [status]
    with pytest.raises(TurnNotCommittable) as refused:
        store.turns.commit_turn(turn(session.id, "hello", reply=None, status=status))
    assert refused.value.status == status
    assert store.history.messages(session.id) == [] and len(store.turns.turns(session.id)) == 1


def test_a_turn_refused_by_the_database_keeps_why_through_its_wording(store: Store) -> None:
    session = store.sessions.create_session("s", "buffer")
    set_read_only(store, True)
    with pytest.raises(StoreError) as committed:
        store.turns.commit_turn(turn(session.id, "杭州 hello"))
    with pytest.raises(StoreError) as recorded:
        store.turns.record_turn(turn(session.id, "杭州 hello", reply=None, status="failed"))
    assert (committed.value.kind, recorded.value.kind) == (StoreFailure.READ_ONLY,) * 2
    set_read_only(store, False)
    assert store.history.messages(session.id) == [] and store.turns.turns(session.id) == []


def test_commit_is_all_or_nothing(store: Store) -> None:
    session = store.sessions.create_session("s", "buffer")
    store.turns.commit_turn(turn(session.id, "first"))
    # The turn row insert fails after the messages went in: all of it must roll back.
    refuse_inserts(store, "turns", "disk says no")
    with pytest.raises(StoreError, match="disk says no"):
        store.turns.commit_turn(turn(session.id, "second"))
    assert [m.content for m in store.history.messages(session.id)] == ["first", "ok"]
    assert word_entries(store) == 2
    assert len(store.turns.turns(session.id)) == 1


def test_delete_is_physical(db_path: Path) -> None:
    with Store(db_path) as store:
        gone = store.sessions.create_session("gone", "buffer", system=DISTINCT)
        kept = store.sessions.create_session("kept", "buffer")
        store.turns.commit_turn(turn(gone.id, f"remember {DISTINCT}", f"noted {DISTINCT}"))
        store.turns.record_turn(turn(gone.id, DISTINCT, reply=None, status="failed"))
        store.memory.add_summary(gone.id, "summary", DISTINCT, covered_ids=[1])
        store.facts.upsert_fact("secret", DISTINCT, scope="session", session_id=gone.id)
        store.turns.commit_turn(turn(kept.id, "keep me"))
        store.sessions.delete_session("gone")
        store.vacuum()
        with pytest.raises(NotFound):
            store.sessions.session("gone")
        assert [m.content for m in store.history.messages(kept.id)] == ["keep me", "ok"]
        assert list(matches(store, kept.id, "keep")) != []
    data = b"".join(p.read_bytes() for p in db_path.parent.glob(db_path.name + "*"))
    for needle in ("ZEBRA", "zebra", "xyzzy", "杭州", "秘密", "州秘"):
        assert needle.encode() not in data, needle


def test_a_foreign_sqlite_file_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(NotChatmemDatabase):
        Store(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


def test_an_empty_file_becomes_a_chatmem_database(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    with Store(path) as store:
        store.sessions.create_session("s", "buffer")
    with Store(path) as store:
        assert store.sessions.session("s").strategy == "buffer"


def test_token_counts_are_cached_per_tokenizer(store: Store) -> None:
    session = store.sessions.create_session("s", "buffer")
    record = turn(session.id, "a")
    record.tokenizer = "cl100k_base"
    store.turns.commit_turn(record, message_tokens=(7, 9))
    ids = [m.id for m in store.history.messages(session.id)]
    assert cached_counts(store, session.id, "cl100k_base") == {ids[0]: 7, ids[1]: 9}
    assert cached_counts(store, session.id, "llama:x") == {}


def test_session_names_are_unique_and_not_empty(store: Store) -> None:
    store.sessions.create_session("s", "buffer")
    with pytest.raises(StoreError, match="a session named 's' already exists"):
        store.sessions.create_session("s", "window")
    with pytest.raises(UsageError):  # blank: refused as a usage error, nothing stored
        store.sessions.create_session("  ", "window")
    assert [s.name for s in store.sessions.list_sessions()] == ["s"]


def test_messages_are_found_by_chinese_words(store: Store) -> None:
    session = store.sessions.create_session("s", "buffer")
    store.turns.commit_turn(turn(session.id, "我们五月去杭州旅行", "好的"))
    found = [m.content for m, _ in matches(store, session.id, "杭州")]
    assert found == ["我们五月去杭州旅行"]
