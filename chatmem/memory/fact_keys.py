"""How fact keys compare: one rule for the facts strategies keep and the state that serves
them (a module of its own so both may use it without importing each other)."""

from __future__ import annotations


def normalize_key(key: str) -> str:
    """Keys compare case- and space-insensitively: 'Order  ID' is 'order id'."""
    return " ".join(key.split()).lower()
