"""Inputs asked at a set time: a conversation imported with its times, asked on its own day."""

from __future__ import annotations

from datetime import datetime

from chatmem.store import Store
from chatmem.timestamps import parse_time


def asked_at(store: Store, moment: datetime | str) -> None:
    """`store`'s clock stopped at `moment`: an input built or sent now is said then (the
    day recall's day lines count from, the clock its time words are read on)."""
    at = parse_time(moment) if isinstance(moment, str) else moment
    store.connection.clock = lambda: at


def asked_after(store: Store, session_id: int) -> None:
    """`store`'s clock stopped at the session's newest message: asked right after it."""
    asked_at(store, store.history.messages(session_id)[-1].created_at)
