"""`chatmem index` as a use case: what waits for a vector is read once, then embedded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from vectors import vector_models

from chatmem.app import Workspace
from chatmem.app.indexing import index_sessions, pending_vectors
from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.errors import EmbedderFailed


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    settings = Settings(provider="scripted", db=str(tmp_path / "h.db"),
                        embeddings=EmbeddingsSection(provider="hash"))
    with Workspace(settings) as workspace:
        for name, texts in (("trip", ["我们五月去杭州旅行。", "好的。"]),
                            ("work", ["My brother is a dentist.", "Noted.", "And you?"])):
            session = workspace.store.sessions.create_session(name, "retrieval")
            workspace.store.history.import_messages(session.id, [
                {"role": "user" if i % 2 == 0 else "assistant", "content": text}
                for i, text in enumerate(texts)])
        yield workspace


def test_every_session_waiting_is_listed_once_for_the_count_and_the_work(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    listed = []
    listing = ws.store.vectors.sessions_without_vectors

    def counted(model: str, dimensions: int = 0) -> list[int]:
        listed.append(model)
        return listing(model, dimensions)

    monkeypatch.setattr(ws.store.vectors, "sessions_without_vectors", counted)
    pending = pending_vectors(ws, None)
    assert (pending.model, pending.total, len(pending.session_ids)) == ("hash:256", 5, 2)
    done = index_sessions(ws, pending)
    assert done.embedded == 5
    assert listed == ["hash:256"]  # it was read three times: twice to count, once to embed
    assert vector_models(ws.store) == {"hash:256": 5}
    assert pending_vectors(ws, None).total == 0


def test_one_session_is_counted_and_embedded_alone(ws: Workspace) -> None:
    pending = pending_vectors(ws, "trip")
    assert (pending.total, pending.session_ids) == (2, (ws.store.sessions.session("trip").id,))
    assert index_sessions(ws, pending).embedded == 2
    assert pending_vectors(ws, None).total == 3


def test_an_embedder_failing_while_indexing_is_one_error_naming_it(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """A built-in embedder is not guarded as a plugin's is (a local model's runtime may raise
    anything): what it raises is still one line, never a traceback, and the lease is given
    back so the next `chatmem index` need not wait for it to expire."""

    def broken(self: HashEmbedder, texts: object, *, query: bool = False) -> None:
        raise RuntimeError("the runtime could not allocate 2 GB")

    monkeypatch.setattr(HashEmbedder, "embed", broken)
    pending = pending_vectors(ws, "trip")
    with pytest.raises(EmbedderFailed, match=r"^embedder 'hash' failed while indexing: "
                       r"RuntimeError: the runtime could not allocate 2 GB$"):
        index_sessions(ws, pending)
    assert ws.store.leases.index_lease(pending.session_ids[0], "hash:256") is None


def test_a_batch_whose_vectors_never_count_is_not_embedded_again_forever(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unguarded embedder whose size is a numpy integer (sqlite3 binds it as a BLOB, which
    no stored size equals): the vectors it saves never count as there, and index went back
    to the same batch at full CPU forever. Each batch starts past the one before."""
    import numpy as np

    embedder = ws.embedder
    assert isinstance(embedder, HashEmbedder)
    embedder.dimensions = np.int64(256)  # type: ignore[assignment]
    reads = []
    reading = ws.store.vectors.texts_without_vectors

    def read(*args: object, **options: object) -> object:
        reads.append(options.get("after_id"))
        if len(reads) > 10:
            raise AssertionError("the same batch was read again and again")
        return reading(*args, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(ws.store.vectors, "texts_without_vectors", read)
    assert index_sessions(ws, pending_vectors(ws, "trip")).embedded == 2
    assert len(reads) == 2



def test_a_session_deleted_before_its_turn_is_passed_over_and_the_rest_embedded(
        ws: Workspace) -> None:
    # An archive's restore embeds its sessions in turn, in one process: one deleted meanwhile
    # failed that process as it came to it (its lease could not be written), and the
    # sessions after it were never embedded.
    ws.store.sessions.create_session("later", "retrieval")
    later = ws.store.sessions.session("later").id
    ws.store.history.import_messages(later, [{"role": "user", "content": "我弟弟是牙医。"}])
    pending = pending_vectors(ws, ["trip", "work", "later"])

    def delete_work(_: int) -> None:
        if ws.store.sessions.find_session("work") is not None:
            ws.store.sessions.delete_session("work")

    done = index_sessions(ws, pending, progress=delete_work)
    assert done.embedded == 3
    assert pending_vectors(ws, None).total == 0
    assert vector_models(ws.store) == {"hash:256": 3}
