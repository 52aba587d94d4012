"""What the tests count in a history's vectors (the package itself never needs it)."""

from __future__ import annotations

from chatmem.store import Store


def vector_models(store: Store) -> dict[str, int]:
    """Embedding model → how many messages have its vectors."""
    return {model: count for model, count in store.db.execute(
        "SELECT model, count(*) FROM message_vectors GROUP BY model ORDER BY model")}
