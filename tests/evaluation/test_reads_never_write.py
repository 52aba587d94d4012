"""Reads never write: inspect, what-ifs, replay and eval leave the history file byte-identical.

Derived data (token counts, sitting gaps) is written on a turn's own write
path; a build that finds some missing (an imported session, another
tokenizer) computes it in memory only.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import cli_runner
import pytest
from cached_counts import cached_counts
from file_hash import checkpointed_hash
from vectors import vector_models

from chatmem.store import Store

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
SUPPORT = str(SESSIONS / "support.jsonl")
TRAVEL_ZH = str(SESSIONS / "travel-zh.jsonl")
STRATEGIES = ["window", "tokens", "summary-buffer", "entity", "retrieval:mode=bm25"]


def invoke(*args: str) -> None:
    cli_runner.invoke(*args, "--provider", "scripted", code=0)



@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """A replayed session, its fork and an imported (Chinese) session, in one file."""
    db = tmp_path / "h.db"
    invoke("replay", SUPPORT, "-s", "window:k=2", "--save-as", "rs", "--db", str(db))
    fork = cli_runner.invoke("sessions", "fork", "rs", "rs-fork", "--db", str(db))
    assert fork.exit_code == 0, fork.stderr
    imported = cli_runner.invoke("sessions", "import", TRAVEL_ZH, "zh", "--db", str(db))
    assert imported.exit_code == 0, imported.stderr
    return db


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_inspect_replay_and_eval_leave_the_file_byte_identical(stored: Path,
                                                               strategy: str) -> None:
    db = str(stored)
    before = checkpointed_hash(stored)
    invoke("inspect", "rs", "--db", db)
    for what_if in ("window:k=2", "summary-buffer", strategy):
        invoke("inspect", "rs", "--turn", "5", "--strategy", what_if, "--db", db)
    assert checkpointed_hash(stored) == before
    # The fork and the import have no recorded turns: what would be sent next.
    for session in ("rs", "rs-fork", "zh"):
        invoke("inspect", session, "--next", "What was my order number?", "--db", db)
        for what_if in ("window:k=2", "summary-buffer", strategy):
            invoke("inspect", session, "--next", "我的预算是多少？", "--strategy", what_if,
                   "--db", db)
        invoke("replay", session, "-s", strategy, "--db", db)
        assert checkpointed_hash(stored) == before, session
    invoke("eval", "zh", "-s", strategy, "--db", db)  # the imported session keeps its probes
    invoke("eval", "zh", "-s", strategy, "--probes-only", "--db", db)
    assert checkpointed_hash(stored) == before


def test_a_turn_writes_its_own_token_counts_and_gaps(stored: Path) -> None:
    """What reads no longer write is written where the messages are: commit, fork, import."""
    with Store(stored) as store:
        for name in ("rs", "rs-fork"):
            session = store.sessions.session(name)
            ids = [m.id for m in store.history.messages(session.id)]
            counts = cached_counts(store, session.id, session.tokenizer or "")
            assert sorted(counts) == sorted(ids), name
    connection = sqlite3.connect(stored)
    try:
        unknown = connection.execute("SELECT count(*) FROM messages WHERE gap_s IS NULL")
        assert unknown.fetchone() == (0,)
    finally:
        connection.close()


def test_recall_by_meaning_reads_vectors_and_never_writes_them(
    stored: Path, hash_embedder_config: Path
) -> None:
    """The imported session has no vectors: builds rank it by words, and embed nothing."""
    db, config = str(stored), str(hash_embedder_config)
    before = checkpointed_hash(stored)
    for session in ("rs", "zh"):
        invoke("inspect", session, "--next", "我的预算是多少？", "--strategy", "retrieval",
               "--db", db, "--config", config)
        invoke("replay", session, "-s", "retrieval", "--db", db, "--config", config)
    invoke("eval", "zh", "-s", "retrieval", "--db", db, "--config", config)
    assert checkpointed_hash(stored) == before
    with Store(stored) as store:
        assert vector_models(store) == {}
