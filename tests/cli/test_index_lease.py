"""Real processes: the `chatmem index` that `sessions import` starts holds the backlog's
lease, a chat opened meanwhile embeds none of it, and a killed indexer's lease does not
keep the next process from resuming."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from chat_server import ChatServer
from cli_runner import invoke
from vectors import vector_models
from waiting import wait_until

from chatmem.embeddings.base import text_digest
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.store import LeaseHolder, Store

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
MODEL = "hash:256"
IMPORTED = 400
"""Messages in sessions/long-chat.jsonl."""


@pytest.fixture
def stored_texts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every stored text (not a query) the hash embedder embeds in this process."""
    seen: list[str] = []
    embed = HashEmbedder.embed

    def counting(self: HashEmbedder, texts: Sequence[str], *, query: bool = False):  # type: ignore[no-untyped-def]
        if not query:
            seen.extend(texts)
        return embed(self, texts, query=query)

    monkeypatch.setattr(HashEmbedder, "embed", counting)
    return seen


def import_in_background(db: Path, model: str = MODEL) -> int:
    """Import the long chat; the pid of the `chatmem index` it started to embed it with
    `model`."""
    result = invoke("sessions", "import", str(SESSIONS / "long-chat.jsonl"), "lc",
                    "--db", str(db))
    assert result.exit_code == 0, result.stderr
    found = re.search(rf"^400 messages of lc wait for vectors \({re.escape(model)}\): "
                      r".*\(process (\d+)\)", result.stderr, re.M)
    assert found, result.stderr
    return int(found[1])


def stop_between_writes(pid: int, db: Path) -> None:
    """SIGSTOP the process where it holds no write lock on the file (a stopped writer would
    keep every other process waiting)."""
    for _ in range(200):
        os.kill(pid, signal.SIGSTOP)
        with contextlib.closing(sqlite3.connect(db, timeout=0, isolation_level=None)) as conn:
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
                return
            except sqlite3.OperationalError:
                pass  # mid-write: let it finish
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.02)
    raise AssertionError("the indexer never left its write")


def reap(pid: int) -> int:
    """Wait for the indexer (a child of this process: CliRunner runs in it); its status."""
    _, status = os.waitpid(pid, 0)
    return status


def lease_holder(db: Path) -> LeaseHolder | None:
    with Store(db) as store:
        lease = store.leases.index_lease(store.sessions.session("lc").id, MODEL)
        return None if lease is None else lease.holder


@pytest.mark.usefixtures("retrieval_config")
def test_a_chat_opened_while_the_indexer_runs_embeds_none_of_its_backlog(
        tmp_path: Path, stored_texts: list[str]) -> None:
    db = tmp_path / "h.db"
    pid = import_in_background(db)
    stop_between_writes(pid, db)  # alive, holding its lease, between two of its writes
    try:
        assert lease_holder(db) == LeaseHolder.on_this_host(pid)
        chatted = invoke("chat", "lc", "--provider", "scripted", "--db", str(db),
                         input="when is the ferry?\n渡轮几点开？\n")
        assert chatted.exit_code == 0, chatted.stderr
    finally:
        os.kill(pid, signal.SIGCONT)
    assert stored_texts == []  # the chat left every stored text to the indexer
    assert (f"404 messages of session lc have no vector for {MODEL} yet: process {pid} is"
            " embedding them") in chatted.stderr.replace("\n", " ")
    assert reap(pid) == 0
    with Store(db) as store:
        # The indexer embedded the chat's four new messages too, and gave its lease back.
        assert vector_models(store) == {MODEL: IMPORTED + 4}
    assert lease_holder(db) is None


@pytest.fixture
def endpoint(retrieval_config: Path, chat_server: ChatServer) -> ChatServer:
    """`retrieval` with the `openai` embedder on a real local endpoint (CHATMEM_CONFIG), so
    a test decides when an indexer in another process gets its vectors."""
    retrieval_config.write_text(
        'strategy = "retrieval"\n[embeddings]\nprovider = "openai"\n'
        f'model = "nomic-embed-text"\nbase_url = "{chat_server.base_url}"\n', encoding="utf-8")
    return chat_server


def test_a_killed_indexers_lease_ends_with_it_and_the_next_process_resumes(
        tmp_path: Path, endpoint: ChatServer) -> None:
    # The indexer stores its first batch of 64 messages (two requests of 32 texts; their
    # context vectors are derived, not embedded) and is killed waiting for the next answer:
    # midway however fast or busy the machine (stepping it with SIGCONT/SIGSTOP was not).
    model, first_batch = "openai:nomic-embed-text", 64
    endpoint.plan = [*["ok"] * 2, "hang"]
    db = tmp_path / "h.db"
    pid = import_in_background(db, model)

    def stored() -> int:
        with Store(db) as store:
            return vector_models(store).get(model, 0)

    wait_until(lambda: len(endpoint.requests) == 3 and stored() == first_batch,
               "the indexer stored its first batch and waits for the next")
    os.kill(pid, signal.SIGKILL)
    status = reap(pid)  # reaped: a zombie would still answer as a process
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    with Store(db) as store:
        session_id = store.sessions.session("lc").id
        left = store.vectors.count_without_vectors(model, session_id)
        assert left == IMPORTED - first_batch
        # Its row is still there, but a holder that ended holds nothing.
        assert store.db.execute("SELECT pid FROM index_leases").fetchall() == [(pid,)]
        assert store.leases.index_lease(session_id, model) is None
        embedded_before = {digest for digest, in store.db.execute(
            "SELECT digest FROM vector_cache WHERE model = ?", [model])}
    asked = len(endpoint.requests)
    resumed = invoke("index", "lc", "--db", str(db), "--json")
    assert resumed.exit_code == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert (report["embedded"], report["elsewhere"]) == (left, [])
    # It embedded what the killed one left (texts repeated in the chat are embedded once:
    # at most one per message), and not one text the killed one had stored.
    texts = [text for request in endpoint.requests[asked:] for text in request["input"]]
    assert 0 < len(texts) <= left
    assert {text_digest(text) for text in texts} & embedded_before == set()
    with Store(db) as store:
        assert vector_models(store) == {model: IMPORTED}
        lease = store.leases.index_lease(store.sessions.session("lc").id, model)
    assert lease is None


def test_index_leaves_a_session_another_live_indexer_holds(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    config = tmp_path / "c.toml"
    config.write_text('[embeddings]\nprovider = "hash"\n', encoding="utf-8")
    elsewhere = LeaseHolder(4242, "indexer-host.invalid")
    with Store(db) as store:
        for name in ("held", "旅行"):
            session = store.sessions.create_session(name, "retrieval")
            store.history.import_messages(session.id, [
                {"role": "user", "content": f"{name}: 我们五月去杭州旅行。"},
                {"role": "assistant", "content": f"{name}: noted, Hangzhou in May."}])
        assert store.leases.take_index_lease(store.sessions.session("held").id, MODEL,
                                             elsewhere) is None
    common = ["--db", str(db), "--config", str(config)]
    done = invoke("index", "--json", *common)
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["embedded"] == 2  # 旅行's two messages; `held` is the other's
    assert report["elsewhere"] == [{"session": "held", "pid": 4242,
                                    "host": "indexer-host.invalid"}]
    again = invoke("index", "held", *common)
    assert again.exit_code == 0, again.stderr
    assert again.stdout.split("\n")[0] == ("session held: left to process 4242 on"
                                            " indexer-host.invalid, which is embedding it")
    with Store(db) as store:
        assert store.vectors.count_without_vectors(MODEL, store.sessions.session("held").id) == 2
        assert store.vectors.count_without_vectors(MODEL, store.sessions.session("旅行").id) == 0
