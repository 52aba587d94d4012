"""What a history file holds, as one hash: the tests that reading commands never write."""

from __future__ import annotations

from chatmem.store.sqlite_files import checkpointed_hash

__all__ = ["checkpointed_hash"]
