"""Migrations run by chatmem's own runner, in the bookkeeping sqlite-utils' Migrations kept."""

from __future__ import annotations

import sqlite3
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlite_utils
from conftest import History
from matches import matches
from sqlite_utils.migrations import Migrations

from chatmem.errors import NotFound
from chatmem.store import FactScope, Store
from chatmem.store.schema import MIGRATIONS, pending_migrations


def made_by_sqlite_utils(path: Path, upto: int) -> None:
    """A file as chatmem wrote it through sqlite-utils' Migrations: the first `upto` applied."""
    old = Migrations("chatmem")
    for fn in MIGRATIONS[:upto]:
        old(name=fn.__name__)(fn)
    db = sqlite_utils.Database(path)
    old.apply(db)
    db.conn.execute("INSERT INTO sessions (name, strategy, created_at, updated_at)"
                    " VALUES ('kept', 'window', '2026-01-05T08:00:00+00:00',"
                    " '2026-01-05T08:00:00+00:00')")
    db.conn.commit()
    db.close()


def applied(path: Path) -> list[tuple[int, str, str]]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.execute("SELECT id, migration_set, name FROM _sqlite_migrations"
                                 " ORDER BY id"))
    finally:
        conn.close()


def test_a_file_migrated_by_sqlite_utils_opens_and_upgrades(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    made_by_sqlite_utils(path, len(MIGRATIONS) - 1)
    before = applied(path)
    assert len(before) == len(MIGRATIONS) - 1
    with Store(path) as store:
        assert store.sessions.session("kept").strategy == "window"
        store.sessions.create_session("new", "buffer")
    after = applied(path)
    assert after[: len(before)] == before  # its rows are kept as they were
    assert [name for _, _, name in after] == [fn.__name__ for fn in MIGRATIONS]
    assert {migration_set for _, migration_set, _ in after} == {"chatmem"}
    # sqlite-utils reads chatmem's bookkeeping as its own: nothing left pending.
    assert Migrations("chatmem").pending(sqlite_utils.Database(path)) == []


def test_a_new_file_gets_the_table_sqlite_utils_would_create(tmp_path: Path) -> None:
    reference = sqlite_utils.Database(memory=True)
    Migrations("chatmem").ensure_migrations_table(reference)
    path = tmp_path / "new.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    try:
        made = sorted(sql for (sql,) in conn.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = '_sqlite_migrations'"))
    finally:
        conn.close()
    assert made == sorted(sql for (sql,) in reference.execute(
        "SELECT sql FROM sqlite_master WHERE tbl_name = '_sqlite_migrations'"))
    assert pending_migrations({name for _, _, name in applied(path)}) == []


# Entries as chatmem wrote them before m014/p010: marks split words into letters, no run's
# last character alone, full-width as it was typed.
OLD_ENTRIES = {
    "我家的猫叫小白，我每天喝茶。": "我家 家的 的猫 猫叫 叫小 小白 我每 每天 天喝 喝茶",
    "मेरा नाम राहुल है": "म र न म र ह ल ह",
    "ผมชื่อสมชาย": "ผมช อสมชาย",
    "订单ＯＲＤ７７３１": "订单 ｏｒｄ７７３１",
    "plain words": "kept as it was",
}


def test_an_old_historys_messages_are_found_after_the_upgrade(history: History) -> None:
    with history.open() as store:
        session = store.sessions.create_session("旧的", "retrieval")
        store.history.import_messages(session.id, [{"role": "user", "content": text}
                                                   for text in OLD_ENTRIES])
        ids = {text: message_id for message_id, text in store.db.execute(
            "SELECT id, content FROM messages ORDER BY id").fetchall()}
        with store.db.write():
            store.db.unindex_words(list(ids.values()))
            store.db.index_words([(ids[text], old) for text, old in OLD_ENTRIES.items()])
            bookkeeping = "_sqlite_migrations" if history.is_file else "chatmem_migrations"
            store.db.execute(f"DELETE FROM {bookkeeping} WHERE name IN"
                             " ('m014_folded_words', 'p010_folded_words')")
        # 猫 is a bigram's prefix there; 茶 ends its run, which the old entry does not hold.
        assert [m.content for m, _ in matches(store, session.id, "茶")] == []
    with history.open() as store:
        def found(query: str) -> list[str]:
            return [m.content for m, _ in matches(store, session.id, query)]

        assert found("猫") == found("茶") == ["我家的猫叫小白，我每天喝茶。"]
        assert found("राहुल") == ["मेरा नाम राहुल है"]
        assert found("สมชาย") == ["ผมชื่อสมชาย"]
        assert found("ORD7731") == ["订单ＯＲＤ７７３１"]
        # A message whose terms did not change is not written again.
        assert found("kept") == ["plain words"]


# Entries as chatmem wrote them before m016/p011: Vietnamese and Greek accents kept, a word
# split at a zero-width space.
ENTRIES_BEFORE_M016 = {
    "Nguyễn Văn An sống ở Hà Nội": "nguyễn van an sống ở ha nội",
    unicodedata.normalize("NFD", "Ο Σίσυφος ἀγαθός"): "ο σίσυφος ἀγαθός",
    "我叫李\u200b雷，来自北京": "我叫 叫李 李 雷 来自 自北 北京 京",
    "my friend A\u200bda called": "my friend a da called",
    "Café au lait": "kept as it was",
}


def index_as_before(store: Store, history: History, entries: list[tuple[int, str]],
                    *migrations: str) -> None:
    """Index entries as an earlier chatmem wrote them, and the migrations that write them
    again (SQLite's and PostgreSQL's) not yet run: the next open runs them."""
    with store.db.write():
        store.db.unindex_words([message_id for message_id, _ in entries])
        store.db.index_words(entries)
        bookkeeping = "_sqlite_migrations" if history.is_file else "chatmem_migrations"
        marks = ", ".join("?" for _ in migrations)
        store.db.execute(f"DELETE FROM {bookkeeping} WHERE name IN ({marks})", list(migrations))


def test_greek_vietnamese_and_split_words_of_an_old_history_are_found_after_the_upgrade(
        history: History) -> None:
    with history.open() as store:
        session = store.sessions.create_session("旧的", "retrieval")
        store.history.import_messages(session.id, [{"role": "user", "content": text}
                                                   for text in ENTRIES_BEFORE_M016])
        ids = {text: message_id for message_id, text in store.db.execute(
            "SELECT id, content FROM messages ORDER BY id").fetchall()}
        index_as_before(store, history, [(ids[text], old) for text, old
                                         in ENTRIES_BEFORE_M016.items()],
                        "m016_words_folded_again", "p011_words_folded_again")
        assert [m.content for m, _ in matches(store, session.id, "Nguyen")] == []
    with history.open() as store:
        def found(query: str) -> list[str]:
            return [m.content for m, _ in matches(store, session.id, query)]

        assert found("Nguyen Noi") == found("Nguyễn") == ["Nguyễn Văn An sống ở Hà Nội"]
        assert found("σισυφος") == found("Σίσυφος") == [
            unicodedata.normalize("NFD", "Ο Σίσυφος ἀγαθός")]
        assert found("李雷") == ["我叫李\u200b雷，来自北京"]
        assert found("Ada") == ["my friend A\u200bda called"]
        assert store.logs.sessions_matching("nguyen", limit=5) == ["旧的"]
        # A message whose terms did not change (accents folded since m014) is not written.
        assert found("kept") == ["Café au lait"]


def test_traditional_chinese_of_an_old_history_is_found_after_the_upgrade(
        history: History) -> None:
    said = "表妹的婚禮在臺北，禮金包兩萬元。"
    with history.open() as store:
        session = store.sessions.create_session("舊的", "retrieval")
        store.history.import_messages(session.id, [{"role": "user", "content": said},
                                                   {"role": "user", "content": "今天天气不错"}])
        message_id = {text: i for i, text in store.db.execute(
            "SELECT id, content FROM messages").fetchall()}[said]
        # The entry as chatmem wrote it before m018/p016: the bigrams unfolded.
        index_as_before(store, history, [(message_id, " ".join(
            said[i:i + 2] for i in range(len(said) - 1)))],
                        "m018_traditional_chinese_folded", "p016_traditional_chinese_folded")
        assert [m.content for m, _ in matches(store, session.id, "台北")] == []
    with history.open() as store:
        assert [m.content for m, _ in matches(store, session.id, "台北")] == [said]
        assert [m.content for m, _ in matches(store, session.id, "禮金")] == [said]
        assert store.logs.sessions_matching("婚礼", limit=5) == ["舊的"]


def test_half_width_kana_arabic_and_dotless_i_of_an_old_history_are_found_after_the_upgrade(
        history: History) -> None:
    said = ["わたしはﾀﾅｶです", "اتصل بي يا أحمد", "اسمه علی", "Işık geldi", "今天天气不错"]
    with history.open() as store:
        session = store.sessions.create_session("古い", "retrieval")
        store.history.import_messages(session.id, [{"role": "user", "content": text}
                                                   for text in said])
        ids = {text: i for i, text in store.db.execute(
            "SELECT id, content FROM messages").fetchall()}
        # The entries as chatmem wrote them before m020/p019: ﾀﾅｶ one word, hamza, ی, ı kept.
        index_as_before(store, history, [
            (ids[said[0]], "わた たし しは はで です す ﾀﾅｶ"), (ids[said[1]], "اتصل بي يا أحمد"),
            (ids[said[2]], "اسمه علی"), (ids[said[3]], "isık geldi")],
                        "m020_kana_arabic_and_dotless_i_folded",
                        "p019_kana_arabic_and_dotless_i_folded")
        assert [m.content for m, _ in matches(store, session.id, "タナカ")] == []
    with history.open() as store:
        def found(query: str) -> list[str]:
            return [m.content for m, _ in matches(store, session.id, query)]

        assert found("タナカ") == found("ﾀﾅｶ") == [said[0]]
        assert found("احمد") == found("أحمد") == [said[1]]
        assert found("علي") == [said[2]]
        assert found("IŞIK") == [said[3]]
        assert store.logs.sessions_matching("タナカ", limit=5) == ["古い"]


def test_an_erased_facts_id_is_never_given_to_another(history: History) -> None:
    """A stale id (MCP's forget, `facts forget ID`) erased another session's fact: SQLite gave
    the next fact the id of the one just erased."""
    with history.open() as store:
        甲 = store.sessions.create_session("甲", "entity")
        乙 = store.sessions.create_session("乙", "entity")
        first = store.facts.upsert_fact("电话备注", "找王经理", scope=FactScope.SESSION,
                                        session_id=甲.id)
        store.facts.forget_fact(first.id, purge=True)
        second = store.facts.upsert_fact("航班号", "MU5137", scope=FactScope.SESSION,
                                         session_id=乙.id)
        assert second.id > first.id
        with pytest.raises(NotFound):
            store.facts.fact(first.id)


BEFORE_M015 = [fn.__name__ for fn in MIGRATIONS].index("m015_fact_ids_never_reused")
"""How many migrations a file made before m015 has."""


def test_the_upgrade_keeps_every_fact_its_history_and_ids(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    made_by_sqlite_utils(path, BEFORE_M015)
    conn = sqlite3.connect(path)
    conn.executescript("""
        INSERT INTO facts (id, scope, "user", key, value, created_at, updated_at)
            VALUES (3, 'user', 'me', '城市', '杭州', '2026-01-05', '2026-01-06'),
                   (7, 'user', 'me', 'pet', 'cat', '2026-01-05', '2026-01-05');
        INSERT INTO fact_history (fact_id, key, value, stated_at, replaced_at)
            VALUES (3, '城市', '上海', '2026-01-04', '2026-01-06');
        DELETE FROM facts WHERE id = 7;""")
    conn.commit()
    before = conn.execute("SELECT * FROM facts").fetchall()
    conn.close()
    with Store(path) as store:
        assert store.facts.fact(3).value == "杭州"
        assert [h.value for h in store.facts.fact_history([3])[3]] == ["上海"]
        fresh = store.facts.upsert_fact("language", "中文", scope=FactScope.USER, user="me")
        assert fresh.id == 4  # the ids a file gave before the upgrade are not known to it
        store.facts.forget_fact(fresh.id, purge=True)
        assert store.facts.upsert_fact("tea", "绿茶", scope=FactScope.USER, user="me").id == 5
        store.facts.forget_fact(3, purge=True)  # its history goes with it, as before
        assert store.facts.fact_history([3]) == {}
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert before == [(3, "user", "me", None, "城市", "杭州", None, None, "2026-01-05",
                       "2026-01-06", None, None, None, None)]
    conn.close()


def test_an_id_erased_before_the_upgrade_is_not_given_again(tmp_path: Path) -> None:
    """m015 copied the facts into an AUTOINCREMENT table, whose sequence then began at the
    highest id that survived: fact 2, purged before the upgrade and named in the turn that
    sent it, was the next fact's id after it ("remembered fact 2")."""
    path = tmp_path / "old.db"
    made_by_sqlite_utils(path, BEFORE_M015)
    sent = ('{"format": 2, "parts": [{"kind": "system"}, {"kind": "facts", "fact_ids": [1, 5],'
            ' "messages": [{"role": "system", "content": "{\\"id\\": 5, \\"purged\\": true}"}]}]}')
    conn = sqlite3.connect(path)
    conn.execute("""INSERT INTO facts (id, scope, session_id, key, value, created_at,
                    updated_at) VALUES (1, 'session', 1, 'color', 'blue', '2026-01-05',
                    '2026-01-05')""")
    conn.execute("""INSERT INTO turns (session_id, number, status, input, context, strategy,
                                       created_at)
                    VALUES (1, 1, 'ok', 'hello', ?, 'entity', '2026-01-05'),
                           (1, 2, 'ok', '你好', '{"parts": [{"fact_ids": [1]}, "x"]}',
                            'entity', '2026-01-05'),
                           (1, 3, 'ok', 'damaged', '{"fact_ids": [', 'entity', '2026-01-05')
                 """, [sent])
    conn.commit()
    conn.close()
    with Store(path) as store:
        plan = store.facts.upsert_fact("plan", "星期二", scope=FactScope.SESSION, session_id=1)
        assert plan.id == 6
        assert store.facts.fact(1).value == "blue"
    other = tmp_path / "history-only.db"
    made_by_sqlite_utils(other, BEFORE_M015)
    conn = sqlite3.connect(other)  # a history row whose fact another tool erased
    conn.execute("INSERT INTO fact_history (fact_id, key, value, stated_at, replaced_at)"
                 " VALUES (8, '城市', '上海', '2026-01-04', '2026-01-05')")
    conn.commit()
    conn.close()
    with Store(other) as store:
        assert store.facts.upsert_fact("城市", "杭州", scope=FactScope.SESSION,
                                       session_id=1).id == 9


def test_the_upgrade_takes_a_file_with_references_another_tool_left_dangling(
        tmp_path: Path) -> None:
    """sqlite3's shell runs with foreign keys off: one fact pointing at a message gone made
    m015's copy fail, and every command refused the file ("FOREIGN KEY constraint failed")."""
    path = tmp_path / "old.db"
    made_by_sqlite_utils(path, BEFORE_M015)
    conn = sqlite3.connect(path)  # foreign keys off, as in the shell
    conn.executescript("""
        INSERT INTO facts (id, scope, "user", session_id, key, value, source_message_id,
                           source_session_id, created_at, updated_at)
            VALUES (1, 'user', 'me', NULL, '城市', '杭州', 999999, 888, '2026-01-05',
                    '2026-01-05'),
                   (2, 'session', NULL, 777, '航班', 'MU5137', NULL, NULL, '2026-01-05',
                    '2026-01-05');
        INSERT INTO fact_history (fact_id, key, value, source_session_id, stated_at,
                                  replaced_at)
            VALUES (1, '城市', '上海', 888, '2026-01-04', '2026-01-05'),
                   (42, 'gone', 'x', NULL, '2026-01-04', '2026-01-05');""")
    conn.commit()
    conn.close()
    with Store(path) as store:
        kept = store.facts.fact(1)
        assert (kept.value, kept.source_message_id, kept.source_session_id) == ("杭州", None, None)
        assert [h.value for h in store.facts.fact_history([1])[1]] == ["上海"]
        with pytest.raises(NotFound):
            store.facts.fact(2)  # of a session gone: what ON DELETE CASCADE does
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute("SELECT fact_id FROM fact_history").fetchall() == [(1,)]
    conn.close()


BEFORE_M004 = [fn.__name__ for fn in MIGRATIONS].index("m004_fact_provenance")


def test_profile_facts_the_old_extractor_made_go_back_to_their_session(tmp_path: Path) -> None:
    """Before m004 the extractor filed a name or an allergy under the profile: after the
    upgrade 名字=李雷 of session travel-zh was sent to every new session, opted in or not.
    /remember's facts (no source turn) were the user's own choice of the profile: they stay."""
    path = tmp_path / "old.db"
    made_by_sqlite_utils(path, BEFORE_M004)
    conn = sqlite3.connect(path)
    conn.executescript("""
        INSERT INTO sessions (id, name, strategy, created_at, updated_at)
            VALUES (2, 'travel-zh', 'entity', '2026-01-05', '2026-01-05');
        INSERT INTO messages (id, session_id, position, turn, role, content, created_at)
            VALUES (1, 2, 1, 1, 'user', '你好，我叫李雷。', '2026-01-05'),
                   (2, 2, 3, 2, 'user', '我对花生过敏。', '2026-01-05'),
                   (3, 2, 5, 3, 'user', 'My name is Lei.', '2026-01-05');
        INSERT INTO facts (id, scope, "user", session_id, key, value, source_message_id,
                           source_turn, created_at, updated_at, deleted_at)
            VALUES (1, 'user', 'default', NULL, '名字', '李雷', 1, 1,
                    '2026-01-05T08:00:00.107+00:00', '2026-01-05T08:00:00.107+00:00', NULL),
                   (2, 'user', 'default', NULL, '过敏', '花生', NULL, 2,
                    '2026-01-05T08:01:00.000+00:00', '2026-01-05T08:01:00.000+00:00', NULL),
                   (3, 'user', 'default', NULL, '生日', '5月3日', NULL, NULL,
                    '2026-01-05T08:02:00.000+00:00', '2026-01-05T08:02:00.000+00:00', NULL),
                   (4, 'session', NULL, 2, 'Order ID', 'A-7', 3, 3,
                    '2026-01-05T08:03:00.000+00:00', '2026-01-05T08:03:00.000+00:00', NULL),
                   (5, 'user', 'default', NULL, 'order id', 'B-9', 3, 3,
                    '2026-01-05T08:04:00.000+00:00', '2026-01-05T08:04:00.000+00:00', NULL),
                   (6, 'user', 'default', NULL, 'pet', 'cat', 3, 3,
                    '2026-01-05T08:05:00.000+00:00', '2026-01-05T08:05:00.000+00:00',
                    '2026-01-06T08:00:00.000+00:00'),
                   (7, 'user', 'default', NULL, 'city', 'Paris', NULL, 4,
                    '2026-01-05T08:06:00.000+00:00', '2026-01-05T08:06:00.000+00:00', NULL);
        UPDATE facts SET source_message_id = 2 WHERE id = 2;
        -- made long before this chatmem brought m004 (the test makes it a moment before)
        UPDATE _sqlite_migrations SET applied_at = '2026-01-05 07:00:00.000000'
            WHERE name = 'm001_initial';""")
    conn.commit()
    conn.close()
    with Store(path) as store:
        elsewhere = store.facts.facts(user="default", session_id=1)
        # /remember's 生日; 'order id', which would be a second order id in travel-zh; and
        # 'Paris', whose session was deleted before the upgrade (no session to go back to).
        assert [(f.id, f.scope) for f in elsewhere] == [
            (3, FactScope.USER), (5, FactScope.USER), (7, FactScope.USER)]
        there = store.facts.facts(session_id=2)
        assert [(f.id, f.key, f.value, f.source_turn) for f in there] == [
            (1, "名字", "李雷", 1), (2, "过敏", "花生", 2), (4, "Order ID", "A-7", 3)]
        assert all(f.user is None and f.session_id == 2 for f in there)
        forgotten = store.facts.fact(6)
        assert (forgotten.scope, forgotten.session_id, forgotten.user) == (
            FactScope.SESSION, 2, None)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.close()


def _made_before_m019_with_a_profile_fact(path: Path, key: str, value: str, at: str) -> Path:
    """A history made with every migration before m019, holding one profile fact of the
    default user, made at `at` from turn 1 of session 1."""
    made_by_sqlite_utils(path, [fn.__name__ for fn in MIGRATIONS].index(
        "m019_extracted_profile_facts_in_their_session"))
    conn = sqlite3.connect(path)
    conn.execute("""INSERT INTO facts (scope, "user", key, value, source_turn,
                    source_session_id, created_at, updated_at)
                    VALUES ('user', 'default', ?, ?, 1, 1, ?, ?)""", [key, value, at, at])
    conn.commit()
    conn.close()
    return path


def test_profile_facts_restored_into_a_history_made_with_m004_stay(tmp_path: Path) -> None:
    """An archive restored into a new history keeps its facts' created_at: a profile fact the
    extractor made for a user who opted in, older than this file's m004, is no fact of an
    old extractor (the file was made with m004 in it) and stays in the profile."""
    path = _made_before_m019_with_a_profile_fact(tmp_path / "restored.db", "过敏", "花生",
                                                 "2025-06-01T08:00:00.000+00:00")
    with Store(path) as store:
        [kept] = store.facts.facts(user="default")
        assert (kept.scope, kept.user, kept.session_id) == (FactScope.USER, "default", None)


def test_profile_facts_made_after_facts_stayed_in_their_session_stay(tmp_path: Path) -> None:
    """A profile fact the extractor made since (user_facts = true opted in) is the user's
    choice: only what came before m004 was applied moves."""
    path = _made_before_m019_with_a_profile_fact(
        tmp_path / "opted-in.db", "名字", "李雷",
        datetime.now(UTC).isoformat(timespec="milliseconds"))
    with Store(path) as store:
        [kept] = store.facts.facts(user="default")
        assert (kept.scope, kept.user, kept.session_id) == (FactScope.USER, "default", None)


def unindexed_references(path: Path) -> list[tuple[str, str]]:
    """(table, column) of each foreign key no index leads with: a deletion of what it names
    scans the whole table once per row deleted."""
    conn = sqlite3.connect(path)
    try:
        found = []
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            leading = {conn.execute(f"PRAGMA index_info('{index[1]}')").fetchone()[2]
                       for index in conn.execute(f"PRAGMA index_list('{table}')")}
            found += [(table, key[3]) for key in conn.execute(
                f"PRAGMA foreign_key_list('{table}')") if key[3] not in leading]
        return sorted(found)
    finally:
        conn.close()


def test_every_reference_a_deletion_follows_has_an_index(tmp_path: Path) -> None:
    """Deleting a session of 10,000 messages with vectors took 18 s of CPU: message_vectors
    is keyed (model, message_id), so each cascaded message scanned every vector."""
    Store(tmp_path / "new.db").close()
    assert unindexed_references(tmp_path / "new.db") == []
    old = tmp_path / "old.db"
    made_by_sqlite_utils(old, [fn.__name__ for fn in MIGRATIONS].index(
        "m021_vectors_and_fact_history_found_by_what_they_name"))
    assert unindexed_references(old) == [("fact_history", "source_session_id"),
                                         ("message_vectors", "message_id")]
    Store(old).close()
    assert unindexed_references(old) == []
