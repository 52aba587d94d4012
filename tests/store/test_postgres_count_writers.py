"""Who wrote a token count, as the server says it (p026): the role that inserted or changed
the row, whatever its statement names. A reader trusts a count only as it or the session's
owner wrote it; any other reads as not counted (and is counted again). An older database
upgrades to it losing nothing, its counts read as before; a database so upgraded is refused
by an older chatmem, as any newer one is."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from grantees import shared_session, sql_as
from pg import OldHistory, PostgresServer, add_messages, migrated_before, older_chatmem_refuses

from chatmem.store import Store

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

P026 = "p026_token_counts_say_who_wrote_them"
COUNTS = "SELECT message_id, tokenizer, tokens, owner FROM token_counts ORDER BY message_id"
SAID = ["我叫安娜，住在杭州。", "好的，安娜。", "I work on the compiler team.", "Noted."]


@pytest.fixture
def before_p026(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, P026) as old:
        yield old


def count(url: str, message_id: int, tokens: int) -> None:
    assert sql_as(url, "INSERT INTO token_counts (message_id, tokenizer, tokens)"
                       " VALUES (%s, 'cl100k_base', %s) ON CONFLICT (message_id, tokenizer)"
                       " DO UPDATE SET tokens = excluded.tokens", [message_id, tokens]) == 1


def counts(url: str, session_id: int) -> list[int | None]:
    """Each message's count as `url`'s role reads it, where a turn's context reads it, where
    recall reads it and where a purge reads it."""
    with Store(url) as store:
        read = [n for _, n in store.history.counted_messages(session_id, 1, 2, "cl100k_base")]
        rows = {r[0]: r[5] for r in store.recall.candidate_rows(session_id, range(1, 5),
                                                                  "cl100k_base")}
        assert [rows[p] for p in range(1, 5)] == read
        return read


def test_an_older_databases_counts_read_as_before_and_new_ones_say_who(
        before_p026: OldHistory, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p026
    ann, bob = old.url("ann"), old.url("bob")
    session_id = shared_session(ann, "tokens")
    ids = add_messages(ann, session_id, SAID)
    for message_id, tokens in zip(ids[:3], (12, 5, 8), strict=True):
        count(ann, message_id, tokens)
    count(bob, ids[3], 0)  # before p026: read as before
    with old.server.admin(old.database) as conn:
        stored = conn.execute(COUNTS).fetchall()
    before = [12, 5, 8, 0]  # what chatmem before p026 read: every count

    PostgresBackend(old.url(old.keeper)).close()

    with old.server.admin(old.database) as conn:
        assert conn.execute(COUNTS).fetchall() == stored
        assert conn.execute("SELECT DISTINCT writer FROM token_counts").fetchall() == [(None,)]
    assert counts(ann, session_id) == before == counts(bob, session_id)
    # From now on a count he changes or inserts is his: not hers, his own to read.
    assert sql_as(bob, "UPDATE token_counts SET tokens = 0 WHERE message_id = %s",
                  [ids[0]]) == 1
    assert counts(ann, session_id) == [None, 5, 8, 0]
    assert counts(bob, session_id) == [0, 5, 8, 0]
    # He cannot name her as its writer.
    assert sql_as(bob, "UPDATE token_counts SET writer = 'ann'") == "42501"
    assert sql_as(bob, "INSERT INTO token_counts (message_id, tokenizer, tokens, writer)"
                       " VALUES (%s, 'o200k_base', 1, 'ann')", [ids[1]]) == "42501"
    # Her count replaces his, and is his to read too.
    count(ann, ids[0], 12)
    assert counts(ann, session_id) == before == counts(bob, session_id)
    with old.server.admin(old.database) as conn:
        assert conn.execute("SELECT tokens, writer FROM token_counts WHERE message_id = %s",
                            [ids[0]]).fetchall() == [(12, "ann")]
    # An older chatmem (one that knows no p026) refuses the upgraded database.
    older_chatmem_refuses(ann, P026, monkeypatch)
