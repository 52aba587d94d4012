"""A fork and a purge of a long history copy and rewrite its messages in batches: on a
server each statement is a round trip, and each index statement updates the session's word
statistics row, so their statements must not grow with every message (a 20,000-turn fork
ran 160,000 of them). Each test also checks that the batches keep what one at a time kept:
positions, turns, times, the word index, token counts."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from cached_counts import cached_counts
from dialect import word_entries
from matches import matches
from meter import metered

from chatmem.store import Store, contexts
from chatmem.store.fork import COPIED_TOGETHER
from chatmem.store.redaction import REWRITTEN_TOGETHER
from chatmem.store.redaction_plan import Place

TURNS = 600
"""1,200 messages: more than two batches of each."""
TOKENIZER = "cl100k_base"


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[Store]:
    with Store(pg_url) as store:
        yield store


def long_history(store: Store, name: str = "long", turns: int = TURNS) -> int:
    session = store.sessions.create_session(name, "window", {})
    ids = store.history.import_messages(session.id, [
        {"role": role, "content": text,
         "created_at": f"2026-05-01T10:{i // 60 % 60:02d}:{i % 60:02d}.000+00:00"}
        for i in range(turns)
        for role, text in (("user", f"My order number is ORD-{i} and I live in 杭州"),
                           ("assistant", f"Noted ORD-{i}."))])
    with store.db.write():
        contexts.save_token_counts(store.db, TOKENIZER, {i: 7 for i in ids})
    return session.id


def test_a_fork_copies_a_long_history_in_a_few_statements_a_batch(pg_store: Store) -> None:
    long_history(pg_store, "short", 1)
    with metered(pg_store) as short:
        pg_store.forks.fork_session("short", "short-copy")
    source = long_history(pg_store)
    told: list[tuple[int, int]] = []
    with metered(pg_store) as meter:
        report = pg_store.forks.fork_session("long", "copy",
                                             progress=lambda *step: told.append(step))
    assert report.messages == 2 * TURNS
    assert told == [(500, 1200), (1000, 1200), (1200, 1200)]  # a step a batch
    # An INSERT and an index statement a batch more than a one-turn fork; no more.
    more_batches = math.ceil(2 * TURNS / COPIED_TOGETHER) - 1
    assert meter.statements <= short.statements + 2 * more_batches, (meter, short)

    fork = pg_store.sessions.session("copy").id
    shape = [(m.position, m.turn, m.role, m.content, m.created_at)
             for m in pg_store.history.messages(source)]
    copies = pg_store.history.messages(fork)
    assert [(m.position, m.turn, m.role, m.content, m.created_at) for m in copies] == shape
    assert word_entries(pg_store) == 2 * 2 * (TURNS + 1)
    assert {m.content for m, _ in matches(pg_store, fork, "ORD-599")} == {
        "My order number is ORD-599 and I live in 杭州", "Noted ORD-599."}
    assert cached_counts(pg_store, fork, TOKENIZER) == {
        m.id: 7 for m in copies}


def test_a_purge_rewrites_a_long_history_in_a_few_statements_a_batch(pg_store: Store) -> None:
    short_id = long_history(pg_store, "short", 1)
    with metered(pg_store) as short:
        pg_store.redactions.rewrite_stored_text(
            [short_id], None, ["杭州"], lambda text: text.replace("杭州", "[forgotten]"))
    source = long_history(pg_store)
    with metered(pg_store) as meter:
        done = pg_store.redactions.rewrite_stored_text(
            [source], None, ["杭州"], lambda text: text.replace("杭州", "[forgotten]"))
    assert len(done.rows[Place.MESSAGES]) == TURNS
    # An UPDATE, an index statement, a DELETE and a read of the counts the purge's turns
    # sent (kept in their contexts, store.sent_counts) a batch more than a one-message purge.
    more_batches = math.ceil(TURNS / REWRITTEN_TOGETHER) - 1
    assert meter.statements <= short.statements + 4 * more_batches, (meter, short)

    messages = pg_store.history.messages(source)
    assert [m.content for m in messages[:2]] == [
        "My order number is ORD-0 and I live in [forgotten]", "Noted ORD-0."]
    assert list(matches(pg_store, source, "杭州")) == []
    assert len(list(matches(pg_store, source, "forgotten"))) > 0
    counts = cached_counts(pg_store, source, TOKENIZER)
    assert counts == {m.id: 7 for m in messages if m.role == "assistant"}
