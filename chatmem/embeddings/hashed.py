"""`hash`: a deterministic embedder for tests and demos, no model involved.

Each index term (see chatmem.fts) is hashed to a signed dimension; `aliases`
map words to a shared concept, so a test can say "sibling" means "brother"
and check that dense recall finds what word matching cannot.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from chatmem import fts
from chatmem.embeddings.base import normalised

if TYPE_CHECKING:
    import numpy as np

SLOTS_KEPT = 100_000
"""Terms whose dimension and sign are remembered (a few MB at most)."""


class HashEmbedder:
    def __init__(self, dimensions: int = 256, aliases: Mapping[str, str] | None = None) -> None:
        self.dimensions = dimensions
        self.aliases = dict(aliases or {})
        self.key = f"hash:{dimensions}" + (
            ":" + hashlib.sha1(repr(sorted(self.aliases.items())).encode()).hexdigest()[:8]
            if self.aliases else "")
        self.calls = 0
        """How many stored texts it has embedded: tests check each is embedded once."""
        self.queries = 0
        self._slots: dict[str, tuple[int, float]] = {}
        """term → (dimension, sign): a term's hash is computed once, not once per text."""

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        if query:
            self.queries += len(texts)
        else:
            self.calls += len(texts)
        at_row: list[int] = []
        at_slot: list[int] = []
        signs: list[float] = []
        for row, text in enumerate(texts):
            for term in fts.query_terms(text):
                slot, sign = self._slot_of(term)
                at_row.append(row)
                at_slot.append(slot)
                signs.append(sign)
        rows = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        # Unbuffered: a text whose terms share a dimension adds each of them (exact, ±1s).
        np.add.at(rows, (np.array(at_row, dtype=np.intp), np.array(at_slot, dtype=np.intp)),
                  np.array(signs, dtype=np.float32))
        return normalised(rows)

    def _slot_of(self, term: str) -> tuple[int, float]:
        found = self._slots.get(term)
        if found is None:
            if len(self._slots) >= SLOTS_KEPT:
                self._slots.clear()  # a long session's vocabulary stays bounded
            alias = self.aliases.get(term, term)
            digest = hashlib.blake2b(alias.encode(), digest_size=8).digest()
            found = self._slots[term] = (int.from_bytes(digest[:4], "little") % self.dimensions,
                                         1.0 if digest[4] & 1 else -1.0)
        return found
