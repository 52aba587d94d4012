"""The `hash` embedder: each term a signed dimension, counted per text, rows normalised."""

from __future__ import annotations

import hashlib

import numpy as np

from chatmem import fts
from chatmem.embeddings import hashed
from chatmem.embeddings.hashed import HashEmbedder


def slot_by_hand(term: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(term.encode(), digest_size=8).digest()
    return int.from_bytes(digest[:4], "little") % dimensions, 1.0 if digest[4] & 1 else -1.0


def vector_by_hand(text: str, dimensions: int, aliases: dict[str, str]) -> np.ndarray:
    row = np.zeros(dimensions, dtype=np.float64)
    for term in fts.query_terms(text):
        slot, sign = slot_by_hand(aliases.get(term, term), dimensions)
        row[slot] += sign
    norm = np.linalg.norm(row)
    return row / norm if norm else row


TEXTS = ["the cat sat on the mat, cat and dog", "我们五月去杭州旅行，杭州很美", "", "my sibling",
         "brother brother sibling"]


def test_each_row_sums_its_terms_signed_dimensions_in_english_and_chinese() -> None:
    aliases = {"sibling": "brother"}
    embedder = HashEmbedder(dimensions=64, aliases=aliases)
    rows = embedder.embed(TEXTS)
    for text, row in zip(TEXTS, rows, strict=True):
        assert np.allclose(row, vector_by_hand(text, 64, aliases), atol=1e-6)
    # An alias shares its concept's dimension: "sibling" embeds like "brother".
    assert np.array_equal(embedder.embed(["sibling"]), embedder.embed(["brother"]))
    assert embedder.calls == len(TEXTS) + 2


def test_remembered_terms_give_the_same_vectors_and_stay_bounded(monkeypatch) -> None:
    monkeypatch.setattr(hashed, "SLOTS_KEPT", 5)
    embedder = HashEmbedder(dimensions=32)
    first = embedder.embed(TEXTS)
    assert len(embedder._slots) <= 5
    again = embedder.embed(list(reversed(TEXTS)))
    assert np.array_equal(first, again[::-1])
    assert np.array_equal(first, HashEmbedder(dimensions=32).embed(TEXTS))
