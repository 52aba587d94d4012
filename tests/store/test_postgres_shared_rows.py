"""What a sharer writes into his own shared session stays his: it never becomes the reader's
user profile, never breaks the reader's word scores or retention.

bob shares a session with ann and then writes into it by SQL what chatmem never writes:
a fact of scope 'user' (it read as ann's own /remember in every context of hers) and word
entries with absurd token counts (her retrieval failed 'bigint out of range'). Each is
refused; a database holding such rows from before the checks is upgraded so they do no
harm.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import invoke
from matches import matches
from pg import OldHistory, PostgresServer, Team, migrated_before
from registered import open_session

from chatmem import fts
from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import FactScope, Store
from chatmem.store.postgres_word_entries import MOST_TOKENS
from chatmem.store.postgres_words import TEXT_SEARCH, token_count
from chatmem.timestamps import utc_now

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

READER, SHARER = "ann", "bob"
CHECK_VIOLATION = "23514"
NOW = "2026-12-02T10:00:00.000+00:00"


def chat(url: str, name: str, line: str) -> int:
    """A session of the connecting role (user profile 'team') with one turn: its id."""
    with Store(url) as store:
        engine = open_session(store, Settings(user="team", user_facts=True),
                              ScriptedProvider(), name)
        engine.run_turn(line)
        return engine.session.id


def refused_by_check(url: str, sql: str, params: Any) -> str | None:
    """The SQLSTATE `sql` fails with as the role of `url` (None: it was carried out)."""
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            conn.execute(sql, params)
        except psycopg.Error as e:
            return e.sqlstate
    return None


PLANTED_FACT = ("INSERT INTO facts (scope, \"user\", session_id, key, value, created_at,"
                " updated_at) VALUES ('user', 'team', %s, 'city', '巴黎 (bob''s)', %s, %s)")


def test_a_sharer_cannot_put_facts_into_the_readers_profile(team: Team) -> None:
    ann, bob = team.url(READER), team.url(SHARER)
    chat(ann, "diary", "我们五月去杭州旅行")
    with Store(ann) as store:
        store.facts.upsert_fact("city", "杭州", scope=FactScope.USER, user="team")
    shared = chat(bob, "bobnotes", "hi")
    with Store(bob) as store:
        own = store.facts.upsert_fact("note", "mine", scope=FactScope.SESSION,
                                      session_id=shared)
    invoke("sessions", "share", "bobnotes", "--with", READER, "--write", "--db", bob, code=0)

    assert refused_by_check(bob, PLANTED_FACT, [shared, NOW, NOW]) == CHECK_VIOLATION
    assert refused_by_check(bob, "UPDATE facts SET scope = 'user', \"user\" = 'team'"
                                 " WHERE id = %s", [own.id]) == CHECK_VIOLATION
    with Store(ann) as store:
        assert [(f.key, f.value) for f in store.facts.facts(user="team")] == [("city", "杭州")]
        # Her profile is hers to change, and bob's session fact is his session's.
        store.facts.upsert_fact("city", "上海", scope=FactScope.USER, user="team")
        assert [(f.key, f.value) for f in store.facts.facts(user="team", session_id=shared)
                ] == [("city", "上海"), ("note", "mine")]


@pytest.fixture
def before_p013(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, "p013_profile_facts_have_no_session") as old:
        yield old


def test_a_planted_profile_fact_becomes_its_sessions_fact_on_upgrade(
        before_p013: OldHistory) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    bob = before_p013.url(SHARER)
    with psycopg.connect(bob, autocommit=True) as conn:
        shared = conn.execute("INSERT INTO sessions (name, strategy, \"user\", created_at,"
                              " updated_at) VALUES ('bobnotes', 'window', 'team', %s, %s)"
                              " RETURNING id", [NOW, NOW]).fetchone()[0]
        conn.execute("INSERT INTO session_shares (session_id, grantee, mode)"
                      " VALUES (%s, %s, 'read')", [shared, READER])
        planted = conn.execute(PLANTED_FACT + " RETURNING id",
                               [shared, NOW, NOW]).fetchone()[0]
    PostgresBackend(before_p013.url(before_p013.keeper)).close()

    with before_p013.server.admin(before_p013.database) as conn:
        assert conn.execute("SELECT scope, \"user\", session_id, key, value, owner FROM facts"
                            " WHERE id = %s", [planted]).fetchall() == [
            ("session", None, shared, "city", "巴黎 (bob's)", SHARER)]
    with Store(before_p013.url(READER)) as store:
        assert store.facts.facts(user="team") == []
        assert [f.value for f in store.facts.facts(user="team", session_id=shared)] == [
            "巴黎 (bob's)"]
        store.facts.upsert_fact("city", "杭州", scope=FactScope.USER, user="team")
        assert [f.value for f in store.facts.facts(user="team")] == ["杭州"]
    assert refused_by_check(bob, PLANTED_FACT, [shared, NOW, NOW]) == CHECK_VIOLATION


def test_a_profile_query_passes_over_a_user_fact_in_a_session(tmp_path: Path) -> None:
    """SQLite has no roles and no such CHECK (a table rebuild): its queries take a profile
    fact to be one without a session, as PostgreSQL's do."""
    with Store(tmp_path / "h.db") as store:
        session = store.sessions.create_session("日记", "window")
        store.facts.upsert_fact("城市", "杭州", scope=FactScope.USER, user="team")
        with store.db.write():
            store.db.execute(
                "INSERT INTO facts (scope, \"user\", session_id, key, value, created_at,"
                " updated_at) VALUES ('user', 'team', ?, '城市', '巴黎', ?, ?)",
                [session.id, NOW, NOW])
        assert [f.value for f in store.facts.facts(user="team")] == ["杭州"]
        assert store.facts.upsert_fact("城市", "上海", scope=FactScope.USER,
                                       user="team").value == "上海"
        assert [f.value for f in store.facts.facts(user="team", session_id=session.id)
                ] == ["上海"]


HUGE = 9223372036854775807 - 100


def test_a_sharers_word_entries_do_not_break_the_readers_word_scores(team: Team) -> None:
    ann, bob = team.url(READER), team.url(SHARER)
    diary = chat(ann, "diary", "我们五月去杭州旅行，杭州很美")
    shared = chat(bob, "bobnotes", "杭州的酒店 hotel")
    invoke("sessions", "share", "bobnotes", "--with", READER, "--db", bob, code=0)

    for tokens in (HUGE, -5):  # the reviewer's move: one entry, near bigint's end
        assert refused_by_check(bob, "UPDATE message_words SET tokens = %s WHERE message_id ="
                                     " (SELECT min(message_id) FROM message_words"
                                     " WHERE session_id = %s)", [tokens, shared]
                                ) == CHECK_VIOLATION
    with psycopg.connect(bob, autocommit=True) as conn:  # the most a word entry counts
        assert conn.execute("UPDATE message_words SET tokens = %s WHERE session_id = %s",
                            [MOST_TOKENS, shared]).rowcount == 2
    with Store(ann) as store:
        assert "我们五月去杭州旅行，杭州很美" in [m.content for m, _ in
                                                   matches(store, diary, "杭州")]
    result = invoke("logs", "-q", "杭州", "--json", "--db", ann, code=0)
    assert "bobnotes" in result.stdout and "diary" in result.stdout


def test_an_out_of_bounds_word_entry_is_counted_again_on_upgrade(
        before_p013: OldHistory) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    bob, text = before_p013.url(SHARER), "杭州的酒店 hotel"
    with psycopg.connect(bob, autocommit=True) as conn:
        shared = conn.execute("INSERT INTO sessions (name, strategy, created_at, updated_at)"
                              " VALUES ('bobnotes', 'window', %s, %s) RETURNING id",
                              [NOW, NOW]).fetchone()[0]
        conn.execute("INSERT INTO session_shares (session_id, grantee, mode)"
                      " VALUES (%s, %s, 'read')", [shared, READER])
        message = conn.execute("INSERT INTO messages (session_id, position, turn, role,"
                               " content, created_at) VALUES (%s, 1, 1, 'user', %s, %s)"
                               " RETURNING id", [shared, text, NOW]).fetchone()[0]
        conn.execute("INSERT INTO message_words (message_id, session_id, terms, tokens)"
                     " VALUES (%s, %s, to_tsvector('english', %s), %s)",
                     [message, shared, fts.index_text(text), HUGE])
    PostgresBackend(before_p013.url(before_p013.keeper)).close()

    counted = token_count(fts.index_text(text))
    with before_p013.server.admin(before_p013.database) as conn:
        assert conn.execute("SELECT tokens FROM message_words").fetchall() == [(counted,)]
        assert conn.execute("SELECT entries, tokens FROM word_statistics").fetchall() == [
            (1, counted)]
    diary = chat(before_p013.url(READER), "diary", "我们五月去杭州旅行")
    with Store(before_p013.url(READER)) as store:
        assert "我们五月去杭州旅行" in [m.content for m, _ in matches(store, diary, "杭州")]
    assert refused_by_check(bob, "UPDATE message_words SET tokens = %s", [HUGE]
                            ) == CHECK_VIOLATION


def test_a_sharers_unreadable_session_time_does_not_break_the_readers_prune(
        team: Team) -> None:
    ann, bob = team.url(READER), team.url(SHARER)
    chat(ann, "diary", "我们五月去杭州旅行")
    chat(ann, "today", "hello")
    chat(bob, "bobnotes", "hi")
    invoke("sessions", "share", "bobnotes", "--with", READER, "--write", "--db", bob, code=0)
    with psycopg.connect(ann, autocommit=True) as conn:
        conn.execute("UPDATE sessions SET updated_at = '2020-01-01T00:00:00.000+00:00'"
                     " WHERE name = 'diary'")
    with psycopg.connect(bob, autocommit=True) as conn:
        assert conn.execute("UPDATE sessions SET updated_at = 'garbage'"
                            " WHERE name = 'bobnotes'").rowcount == 1

    with Store(ann) as store:
        assert [s.name for s in store.retention.idle_sessions(utc_now(), 30)] == ["diary"]
    result = invoke("sessions", "prune", "--older-than", "30d", "--dry-run", "--json",
                    "--db", ann, code=0)
    assert [s["name"] for s in json.loads(result.stdout)["sessions"]] == ["diary"]


def test_every_persons_traditional_chinese_is_indexed_again_by_a_migrating_owner(
        pg_server: PostgresServer) -> None:
    """p016, run by the tables' owner who is not a superuser, read `messages` under forced
    row security: it wrote the owner's own entries again, was recorded as done, and ann's
    stayed as they were (台北 never found her 臺北)."""
    from chatmem.store.postgres_backend import PostgresBackend

    said = "表妹的婚禮在臺北"
    with migrated_before(pg_server, "p016_traditional_chinese_folded") as old:
        planted = {}
        for role in (old.keeper, READER):
            with psycopg.connect(old.url(role), autocommit=True) as conn:
                session = conn.execute(
                    "INSERT INTO sessions (name, strategy, created_at, updated_at) VALUES"
                    " ('婚禮', 'window', %s, %s) RETURNING id", [NOW, NOW]).fetchone()[0]
                message = conn.execute(
                    "INSERT INTO messages (session_id, position, turn, role, content,"
                    " created_at) VALUES (%s, 1, 1, 'user', %s, %s) RETURNING id",
                    [session, said, NOW]).fetchone()[0]
                # The entry as chatmem wrote it before p016: traditional characters kept.
                old_terms = " ".join(said[i:i + 2] for i in range(len(said) - 1))
                conn.execute("INSERT INTO message_words (message_id, session_id, terms, tokens)"
                             f" VALUES (%s, %s, to_tsvector('{TEXT_SEARCH}', %s), %s)",
                             [message, session, old_terms, token_count(old_terms)])
                planted[role] = session
        PostgresBackend(old.url(old.keeper)).close()

        with pg_server.admin(old.database) as conn:
            assert conn.execute(
                "SELECT bool_and(relforcerowsecurity) FROM pg_class WHERE relname IN"
                " ('messages', 'message_words') AND relkind = 'r'").fetchone() == (True,)
        for role in (old.keeper, READER):
            with Store(old.url(role)) as store:
                assert [m.content for m, _ in matches(store, planted[role], "台北")] == [said]
