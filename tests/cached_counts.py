"""The token counts a history holds for a session's messages, as chatmem reads them
(store.history.counted_messages): message id to count, the uncounted left out."""

from __future__ import annotations

from chatmem.store import Store


def cached_counts(store: Store, session_id: int, tokenizer: str) -> dict[int, int]:
    """Every cached count of the session's messages (replaced ones aside) under `tokenizer`."""
    counted = store.history.counted_messages(session_id, 1, 2**62, tokenizer)
    return {message.id: tokens for message, tokens in counted if tokens is not None}
