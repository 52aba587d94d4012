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

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        if query:
            self.queries += len(texts)
        else:
            self.calls += len(texts)
        rows = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in fts.query_terms(text):
                term = self.aliases.get(term, term)
                digest = hashlib.blake2b(term.encode(), digest_size=8).digest()
                slot = int.from_bytes(digest[:4], "little") % self.dimensions
                rows[row, slot] += 1.0 if digest[4] & 1 else -1.0
        return normalised(rows)
