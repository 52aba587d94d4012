"""Evals and replays of transcripts keep their vectors in the user's cache file: a second
eval embeds nothing, and `eval --jobs N` workers share the file safely."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import stat
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runner import invoke
from conftest import needs_sqlcipher

from chatmem.config.paths import vector_cache_path
from chatmem.embeddings.base import Remembering, text_digest
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.errors import StoreError
from chatmem.store.vector_cache import VectorCacheFile

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
pytestmark = pytest.mark.usefixtures("hash_embedder")


@pytest.fixture
def embedded(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many texts the hash embedder embeds in this process: 'stored' and 'query'."""
    counts: Counter[str] = Counter()
    real = HashEmbedder.embed

    def counting(self: HashEmbedder, texts: Sequence[str], *, query: bool = False) -> Any:
        counts["query" if query else "stored"] += len(texts)
        return real(self, texts, query=query)

    monkeypatch.setattr(HashEmbedder, "embed", counting)
    return counts


def evaluate(source: str) -> dict[str, Any]:
    result = invoke("eval", source, "-s", "retrieval", "-s", "window:k=2",
                    "--jobs", "1", "--provider", "scripted", "--json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_an_eval_run_twice_embeds_nothing_the_second_time(embedded: Counter[str],
                                                          tmp_path: Path) -> None:
    for name in ("long-chat", "travel-zh"):
        shutil.copy(SESSIONS / f"{name}.jsonl", tmp_path / f"{name}.jsonl")
    folder = str(tmp_path)
    first = evaluate(folder)
    assert embedded["stored"] > 0 and embedded["query"] > 0
    path = vector_cache_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    kept = VectorCacheFile(path).count()
    embedded.clear()
    second = evaluate(folder)
    assert embedded == Counter()  # neither a stored text nor a question
    assert second == first
    assert VectorCacheFile(path).count() == kept


def test_an_eval_writes_the_cache_a_few_hundred_vectors_at_a_time(
        embedded: Counter[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each write is a transaction synced to disk: written after every turn's messages and
    every query, a cold eval of the LoCoMo dev set spent about a sixth of its time there."""
    from chatmem.embeddings.base import KEEP_EVERY

    writes: list[int] = []
    real = VectorCacheFile.keep

    def counting(self: VectorCacheFile, model: str, query: bool,
                 vectors: Sequence[tuple[str, bytes]]) -> None:
        writes.append(len(vectors))
        real(self, model, query, vectors)

    monkeypatch.setattr(VectorCacheFile, "keep", counting)
    evaluate(str(SESSIONS / "long-chat.jsonl"))
    vectors = embedded["stored"] + embedded["query"]
    assert vectors > KEEP_EVERY  # so that one write is not all there is
    assert sum(writes) == vectors == VectorCacheFile(vector_cache_path()).count()
    assert len(writes) <= 2 * (vectors // KEEP_EVERY + 1)  # stored texts apart from queries


def test_a_replay_reuses_what_an_eval_embedded(embedded: Counter[str]) -> None:
    source = str(SESSIONS / "long-chat.jsonl")
    evaluate(source)
    embedded.clear()
    result = invoke("replay", source, "-s", "retrieval", "--provider", "scripted",
                    "--json")
    assert result.exit_code == 0, result.stderr
    assert embedded["stored"] == 0


def test_a_cached_vector_is_what_the_first_run_used(tmp_path: Path) -> None:
    texts = ["Ingrid lives in Oslo.", "她住在奥斯陆。"]
    first = Remembering(HashEmbedder(), VectorCacheFile(tmp_path / "v.sqlite"))
    again = Remembering(HashEmbedder(), VectorCacheFile(tmp_path / "v.sqlite"))
    for query in (False, True):
        made = first.embed(texts, query=query)
        assert made.dtype == np.float32 and made.shape == (2, 256)
        assert again.embed(texts, query=query).tolist() == made.tolist()
    assert again.inner.calls == 0 and again.inner.queries == 0  # type: ignore[attr-defined]
    # Queries keep full precision; stored texts are kept as they are stored (float16).
    exact = HashEmbedder().embed(texts, query=True)
    assert first.embed(texts, query=True).tolist() == exact.tolist()


def test_the_file_keeps_at_most_its_bound_dropping_the_oldest(tmp_path: Path) -> None:
    cache = VectorCacheFile(tmp_path / "v.sqlite", most=5)
    for n in range(12):
        cache.keep("m", False, [(text_digest(str(n)), bytes([n]))])
    assert cache.count() == 5
    found = cache.cached("m", False, [text_digest(str(n)) for n in range(12)])
    assert sorted(found.values()) == [bytes([n]) for n in range(7, 12)]
    assert cache.cached("m", True, [text_digest("11")]) == {}
    assert cache.cached("other", False, [text_digest("11")]) == {}


def test_a_file_that_is_not_a_cache_is_named_in_one_error(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    path.write_bytes(b"not a database, just bytes " * 100)
    with pytest.raises(StoreError) as raised:
        VectorCacheFile(path)
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)
    assert path.read_bytes() == b"not a database, just bytes " * 100


def test_an_unusable_cache_fails_the_eval_with_one_line(embedded: Counter[str]) -> None:
    path = vector_cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"garbage " * 200)
    result = invoke("eval", str(SESSIONS / "long-chat.jsonl"), "-s", "retrieval",
                    "--provider", "scripted")
    assert result.exit_code != 0
    lines = [line for line in result.stderr.splitlines() if str(path) in line]
    assert len(lines) == 1


def _writer(path: str, start: int, count: int) -> None:
    cache = VectorCacheFile(Path(path))
    for n in range(start, start + count):
        cache.keep("m", False, [(text_digest(f"{n}-{i}"), n.to_bytes(4, "little"))
                                for i in range(20)])
        cache.cached("m", False, [text_digest(f"{n - 1}-0")])


def test_two_processes_write_the_cache_at_once_and_nothing_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    VectorCacheFile(path)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(path), start, 60))
               for start in (0, 1000)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    cache = VectorCacheFile(path)
    assert cache.count() == 2 * 60 * 20
    wanted = [text_digest(f"{n}-{i}") for start in (0, 1000)
              for n in range(start, start + 60) for i in range(20)]
    found = cache.cached("m", False, wanted)
    assert len(found) == len(wanted)
    assert found[text_digest("1059-3")] == (1059).to_bytes(4, "little")
    assert os.stat(path).st_mode & 0o077 == 0


def test_an_erasure_empties_the_cache_that_may_hold_what_it_erased(tmp_path: Path) -> None:
    """The cache keeps vectors and sha256 digests of what evals and replays embedded: after
    forget-me, a locker code was recovered from a digest left there."""
    db = str(tmp_path / "h.db")
    said = "我的储物柜密码是 8812，别告诉别人\nhello there\n"
    for session in ("甲", "乙"):
        chatted = invoke("chat", session, "-s", "retrieval", "--provider", "scripted",
                         "--db", db, input=said)
        assert chatted.exit_code == 0, chatted.stderr
    for erase in (["sessions", "delete", "甲", "--yes"], ["forget-me", "--yes"]):
        replayed = invoke("replay", "乙", "-s", "retrieval",
                          "--provider", "scripted", "--db", db)
        assert replayed.exit_code == 0, replayed.stderr
        assert VectorCacheFile(vector_cache_path()).count() > 0
        erased = invoke(*erase, "--db", db)
        assert erased.exit_code == 0, erased.stderr
        assert not vector_cache_path().exists(), erase


@needs_sqlcipher
def test_an_encrypted_history_keeps_no_vector_outside_it(tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    env = {"CHATMEM_KEY": "a long enough passphrase 口令"}
    chatted = invoke("chat", "密", "-s", "retrieval", "--provider", "scripted", "--db", db,
                     input="我的储物柜密码是 8812\n", env=env)
    assert chatted.exit_code == 0, chatted.stderr
    replayed = invoke("replay", "密", "-s", "retrieval", "--provider", "scripted", "--db", db,
                      env=env)
    assert replayed.exit_code == 0, replayed.stderr
    assert not vector_cache_path().exists()


@needs_sqlcipher
def test_encrypting_a_history_drops_the_cache_its_plain_replays_filled(tmp_path: Path) -> None:
    """A replay of the plain history cached a digest of "my door code is 4711"; `encrypt`
    left it there, though the cache is never written for an encrypted history (which is
    why decrypt and rekey leave it be)."""
    db = str(tmp_path / "h.db")
    chatted = invoke("chat", "diary", "-s", "retrieval", "--provider", "scripted",
                     "--db", db, input="my door code is 4711\n")
    assert chatted.exit_code == 0, chatted.stderr
    replayed = invoke("replay", "diary", "-s", "retrieval", "-s", "window",
                      "--provider", "scripted", "--db", db)
    assert replayed.exit_code == 0, replayed.stderr
    assert VectorCacheFile(vector_cache_path()).count() > 0
    done = invoke("encrypt", "--db", db, env={"CHATMEM_KEY": "a long enough passphrase 口令"})
    assert done.exit_code == 0, done.stderr
    assert not vector_cache_path().exists()
    # Said, with where it was: the next eval embeds everything again.
    assert f"deleted the vector cache {vector_cache_path()}" in done.stderr.replace("\n", "")


def test_a_cache_another_process_erased_meanwhile_is_made_again_private(
        tmp_path: Path) -> None:
    """An erasure in another chatmem deletes the cache while an eval holds it: the eval's
    next write made a new file with the umask's mode and no table, and every later lookup
    failed, so the rest of the eval ranked by words alone."""
    path = tmp_path / "v.sqlite"
    cache = VectorCacheFile(path)
    cache.keep("m", False, [(text_digest("甲"), b"\x01\x00\x00\x00")])
    for part in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        part.unlink(missing_ok=True)
    assert cache.cached("m", False, [text_digest("甲")]) == {}
    cache.keep("m", False, [(text_digest("乙"), b"\x02\x00\x00\x00")])
    assert cache.cached("m", False, [text_digest("乙")]) == {text_digest("乙"): b"\x02\x00\x00\x00"}
    assert os.stat(path).st_mode & 0o077 == 0


def test_a_cache_that_cannot_be_made_is_said_and_the_eval_runs_without_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache folder that cannot be written (a full disk, a read-only home, a file where
    the folder goes) stopped every eval and replay ('delete the file to start a new one',
    of a file that was not there); the cache only saves work."""
    source = str(SESSIONS / "travel-zh.jsonl")
    scores = evaluate(source)
    blocked = tmp_path / "not a folder"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    for args in (["eval", source, "-s", "retrieval", "-s", "window:k=2", "--jobs", "1"],
                 ["replay", source, "-s", "retrieval"]):
        result = invoke(*args, "--provider", "scripted", "--json")
        assert result.exit_code == 0, result.stderr
        assert result.stderr.splitlines() == [
            f"{blocked}/chatmem/vectors.sqlite: the vector cache cannot be used ([Errno 20] Not"
            f" a directory: '{blocked}/chatmem'); this run embeds every text, and keeps none"
            " for the next"], args
    assert json.loads(result.stdout) and evaluate(source) == scores


def test_processes_opening_a_new_cache_at_once_all_get_it(tmp_path: Path) -> None:
    """An eval's two jobs opening a new cache together: about one open in ten failed at once
    with "database is locked" (and told the user to delete the file), failing that job's
    transcript; SQLite does not wait on the busy timeout while WAL mode and the table are
    being made. Threads open it here as processes do: each with its own connection."""
    import threading

    failed: list[BaseException] = []
    for round_ in range(100):
        path = tmp_path / str(round_) / "vectors.sqlite"
        together = threading.Barrier(3)

        def open_it(path: Path = path, together: threading.Barrier = together) -> None:
            together.wait()
            try:
                VectorCacheFile(path).keep("m", False, [(text_digest("甲"), b"\x01\x00\x00\x00")])
            except StoreError as e:
                failed.append(e)

        threads = [threading.Thread(target=open_it) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failed == []
