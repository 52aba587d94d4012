"""How values are read from and written to a row's columns: JSON, enums and times that a hand or
another version may have written, each read into one clear error rather than a traceback."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from datetime import datetime
from enum import StrEnum
from functools import cache
from typing import Any, TypeVar

from chatmem.text import valid_text

E = TypeVar("E", bound=StrEnum)


def stored_enum(kind: type[E], value: Any, what: str) -> E:
    """A stored enum column's value; an unknown one (edited by hand, or by a newer chatmem) is
    one clear error naming the row, never a traceback."""
    try:
        return kind(value)
    except ValueError:
        from chatmem.errors import StoreError, StoreFailure

        raise StoreError(f"{what} is {value!r} in the history, which this chatmem does not know"
                         " (was it edited by hand?)", kind=StoreFailure.DAMAGED) from None


def json_text(value: Any, *, finite: bool = False) -> str:
    """JSON as stored: Chinese and other text stay readable in the file, not \\u-escaped. A
    lone surrogate (a plugin's reason text, say) would make the row unstorable: U+FFFD.
    `finite`: NaN and infinities raise ValueError, as what JSON cannot store (a set, bytes)
    raises TypeError: Python's json writes them as bare words no other reader takes."""
    return valid_text(json.dumps(value, ensure_ascii=False, allow_nan=not finite))


def stored_json(text: str | None, what: str, default: str = "null", *,
                way_on: str = "`chatmem sessions export` still reads the messages") -> Any:
    """A JSON column's value; a row edited outside chatmem is one clear error, not a traceback
    (StoreFailure.DAMAGED: a caller may pass over a row of another's session)."""
    try:
        return json.loads(text or default)
    except (ValueError, RecursionError):
        from chatmem.errors import StoreError, StoreFailure

        # "The history": a file or a PostgreSQL database alike.
        raise StoreError(f"{what} is not valid JSON in the history (was it edited by hand?);"
                         f" {way_on}", kind=StoreFailure.DAMAGED) from None


def unreadable_state(name: str, shared_by: str | None, strategy: str, key: str,
                     why: str = "is not valid JSON in the history") -> Exception:
    """A strategy state row chatmem cannot read, named with its session and the way out: its
    owner drops that strategy's state (`sessions reset-state`), which the strategy builds
    again from the turns. A grantee is told who can."""
    from chatmem.errors import StoreError, StoreFailure

    address = f"{shared_by}/{name}" if shared_by else name
    reset = f"`chatmem sessions reset-state {name} {strategy}`"
    way_on = (f"{reset} drops that state (never the turns) and the strategy builds it again"
              if shared_by is None else
              f"{shared_by}, its owner, can drop that state (never the turns) with {reset}")
    return StoreError(f"session {address!r}: {strategy} state {key!r} {why}"
                      f" (was it edited by hand?); {way_on}", kind=StoreFailure.DAMAGED)


def checked_time(value: Any, what: str) -> Any:
    """`value` when it is a time chatmem reads (ISO 8601), else one line naming the row: a
    row another role or a hand wrote never breaks a command with a traceback."""
    try:
        read_time(value)
    except (TypeError, ValueError):
        raise unreadable_time(value, what) from None
    return value


read_time = datetime.fromisoformat
"""Parses a stored time; bound once because every message read goes through it."""


def unreadable_time(value: Any, what: str) -> Exception:
    from chatmem.errors import StoreError, StoreFailure

    shown = value[:40] if isinstance(value, str) else value
    return StoreError(f"{what}: {shown!r} is not an ISO 8601 time (the row was written "
                      "outside chatmem)", kind=StoreFailure.DAMAGED)


def known_columns(cls: type, row: Mapping[str, Any]) -> dict[str, Any]:
    """The row's columns this record knows: a column added by hand or by a newer
    minor version is ignored, not a crash."""
    names = _field_names(cls)
    return {k: v for k, v in row.items() if k in names}


@cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))
