"""How fact keys compare: one rule for the facts strategies keep and the state that serves
them (a module of its own so both may use it without importing each other); the store
keeps one live fact per key by the same rule."""

from __future__ import annotations

from chatmem.store.fact_keys import key_identity, normalize_key, same_key

__all__ = ["key_identity", "normalize_key", "same_key"]
