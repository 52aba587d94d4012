"""Message vectors as the store keeps them (VectorRow): each text embedded once, in
batches, as float16 blobs, and the context vector derived rather than embedded. The
backlog (chatmem.memory.vector_backlog) and `chatmem index` both store vectors this way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from chatmem.embeddings.base import text_digest
from chatmem.indexing_notices import VectorsResized
from chatmem.store import PendingText, VectorRow

if TYPE_CHECKING:
    from chatmem.embeddings import Embedder
    from chatmem.store.protocols import MemoryStore

INLINE_BATCH = 32
"""Messages per embedder call outside the background thread (inline runs, `chatmem index`)."""


def embed_pending(embedder: Embedder, pending: Sequence[PendingText],
                  batch: int = INLINE_BATCH,
                  known: Mapping[str, bytes] | None = None) -> list[VectorRow]:
    """Message vectors for `pending`, in batches, as float16 blobs, each message's text
    embedded once; a text whose digest is in `known` (stored vectors, see
    `known_vectors`) is not embedded at all.

    The stored context vector is derived, not embedded: the normalized sum of the
    message's vector and the previous message's (one embedding per message instead of
    two, the second of two texts; recall derives it again from the vectors it holds,
    see chatmem.memory.ranking.dense_scores, and stores it for a database that finds
    nearest vectors by it)."""
    import numpy as np

    known = dict(known or {})
    rows: list[VectorRow] = []
    for start in range(0, len(pending), batch):
        chunk = pending[start : start + batch]
        digests = [text_digest(p.content) for p in chunk]
        # The previous message's vector: in this chunk, stored, or embedded with the chunk.
        previous = [text_digest(p.previous) if p.previous else None for p in chunk]
        todo = list(dict.fromkeys(
            text for text, digest in [*((p.content, d) for p, d in zip(chunk, digests,
                                                                        strict=True)),
                                      *((p.previous, d) for p, d in zip(chunk, previous,
                                                                        strict=True)
                                        if p.previous and d not in digests)]
            if digest is not None and digest not in known))
        if todo:
            vectors = embedder.embed(todo)
            known.update((text_digest(text), np.asarray(v, dtype=np.float16).tobytes())
                         for text, v in zip(todo, vectors, strict=True))
        for p, digest, before in zip(chunk, digests, previous, strict=True):
            own = known[digest]
            rows.append(VectorRow(p.message_id, own,
                                  derived_context(own, known[before] if before else None),
                                  digest))
    return rows


def derived_context(own: bytes, previous: bytes | None) -> bytes:
    """The context vector stored beside a message's own: its vector and the previous
    message's, summed and normalized (float16 blobs)."""
    import numpy as np

    vector = np.frombuffer(own, dtype=np.float16).astype(np.float32)
    # One of another size is another version's (an embedder changed under its key): it
    # cannot be summed, and it is about to be embedded again.
    if previous is not None and len(previous) == len(own):
        vector = vector + np.frombuffer(previous, dtype=np.float16).astype(np.float32)
    length = float(np.linalg.norm(vector))
    return np.asarray(vector / (length or 1.0), dtype=np.float16).tobytes()


def known_vectors(store: MemoryStore, model: str, pending: Sequence[PendingText],
                  dimensions: int = 0) -> dict[str, bytes]:
    """The stored vectors of `pending`'s texts and of the messages before them, by digest;
    with `dimensions`, only those of that size."""
    return store.vectors.cached_vectors(model, [
        text_digest(text) for p in pending
        for text in (p.content, p.previous) if text], dimensions)


def embedder_name(embedder: Embedder) -> str:
    """The name the embedder is registered under (`[embeddings] provider`): a plugin's as
    guarded (embeddings.guarded), else its key's provider part."""
    name = getattr(embedder, "registered_name", None)
    if isinstance(name, str):
        return name
    inner = getattr(embedder, "inner", None)  # embeddings.base.Remembering
    return embedder_name(inner) if inner is not None else embedder.key.partition(":")[0]


def resized(store: MemoryStore, embedder: Embedder,
            session_id: int | None = None) -> VectorsResized | None:
    """The embedder's vectors stored in another size than it gives now (of one session, or
    all), if any: they count as missing and are embedded again (store.vectors._without).
    None too while the size is not known (an endpoint's, before its first answer)."""
    dimensions = embedder.dimensions
    stale = store.vectors.stale_vectors(embedder.key, dimensions, session_id) \
        if dimensions else {}
    if not stale:
        return None
    return VectorsResized(embedder_name(embedder), embedder.key, dimensions,
                          sum(stale.values()), tuple(stale))


def save_rows(store: MemoryStore, model: str, rows: Sequence[VectorRow]) -> None:
    """Store vectors; their size comes from the rows, not from an embedder another
    thread may be updating (an endpoint learns its dimensions from its first answer)."""
    if rows:
        store.vectors.save_vectors(model, len(rows[0].vector) // 2, rows)
