"""The PostgreSQL backend's vector search: pgvector's HNSW indexes over `message_vectors`
and the nearest messages recall takes as candidates (`PostgresVectors`, part of
`PostgresBackend`)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from chatmem.store import postgres_embeddings
from chatmem.store.postgres_writers import trusted_entry

EF_SEARCH = 400
"""HNSW candidates kept per search: above recall's pool (300), so one pass finds a pool's
worth; pgvector's largest (1000) cost 3x the time for no candidate more in the benchmark."""


class PostgresVectors:
    """The vector-search methods of `Backend`, for PostgreSQL."""

    ranks_vectors: bool
    _conn: Any
    _indexed: set[int]

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def _value(self, sql: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def write(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def has_column(self, table: str, column: str) -> bool:
        raise NotImplementedError

    def _has_vector_copies(self) -> bool:
        if not self.has_column("message_vectors", "embedding"):
            return False
        self._tune_vector_search()
        return True

    def _tune_vector_search(self) -> None:
        # Exact enough for recall at the sizes one session reaches; iterative scans keep a
        # session filter from starving the search (pgvector 0.8).
        self._conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        self._conn.execute("SET hnsw.iterative_scan = relaxed_order")

    def nearest_vectors(self, model: str, dimensions: int, session_id: int,
                        last_position: int, query: Sequence[float],
                        limit: int) -> list[int] | None:
        """Positions (up to `last_position`) of the session's `limit` messages nearest to
        `query` by their own vector, then those nearest by their context vector (each by
        cosine, through an HNSW index); None when pgvector is not here.

        They are candidates: recall scores each exactly from its vector and its
        neighbours' (chatmem.memory.ranking.dense_scores), so the best by that score are
        nearly all among them (a message outside both lists has `limit` others closer on
        each of the two vectors searched).
        """
        if not self.ranks_vectors or not 0 < dimensions <= postgres_embeddings.MOST_DIMENSIONS:
            return None
        self._index_dimensions(int(dimensions))
        wanted = "[" + ",".join(repr(float(x)) for x in query) + "]"
        found: dict[int, None] = {}
        for column in ("embedding", "context_embedding"):
            for (position,) in self.execute(
                    "SELECT m.position FROM message_vectors v JOIN messages m"
                    " ON m.id = v.message_id WHERE v.model = ? AND v.dimensions ="
                    f" {int(dimensions)} AND v.{column} IS NOT NULL"
                    " AND m.session_id = ? AND m.position <= ?"
                    f" AND {trusted_entry('v')} ORDER BY v.{column}::halfvec({int(dimensions)})"
                    f" <=> ?::halfvec({int(dimensions)}) LIMIT ?",
                    [model, session_id, last_position, wanted, limit]):
                found[int(position)] = None
        return list(found)

    def _index_dimensions(self, dimensions: int) -> None:
        """The HNSW indexes (cosine) for vectors of `dimensions`, made once if this role owns
        the table (another role ranks without them until the owner's first search)."""
        if dimensions in self._indexed:
            return
        names = [f"message_vectors_{column}_{dimensions}"
                 for column in ("embedding", "context_embedding")]
        present = int(self._value("SELECT count(*) FROM pg_indexes WHERE schemaname ="
                                  " current_schema() AND indexname = ANY(?)", [names]))
        if present < len(names) and self._value(
                "SELECT pg_has_role(current_user, relowner, 'USAGE') FROM pg_class"
                " WHERE oid = 'message_vectors'::regclass"):
            with self.write():
                for name, column in zip(names, ("embedding", "context_embedding"),
                                        strict=True):
                    self.execute(
                        f"CREATE INDEX IF NOT EXISTS {name} ON message_vectors USING hnsw"
                        f" (({column}::halfvec({dimensions})) halfvec_cosine_ops)"
                        f" WHERE dimensions = {dimensions}")
                # Fresh statistics, or the planner cannot tell that the index pays.
                self.execute("ANALYZE message_vectors")
            present = len(names)
        if present == len(names):
            self._indexed.add(dimensions)

