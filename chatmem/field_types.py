"""Whether a stored value's fields hold values of their types: a part's reason or a
dropped note (`memory.reasons`), a context's warning (`context_warnings`).

A reason is read back from the turn's stored JSON, which a hand's edit or a write-share
grantee's SQL may have written: `{"kind": "newest_turns", "turns": "x"}` built a
NewestTurns whose run was a string, and wording it was an IndexError traceback in
`inspect` (an int where a run goes a TypeError, 10**30 an OverflowError). A reason whose
values do not fit is read as the text it is stored as, as a kind this version does not know;
so is a warning ("tokens": "x" was a ValueError in its format).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

LARGEST = 2**63 - 1
"""The largest whole number a store's integer holds: past it, wording a run of turns
(`range`) overflows, and chatmem never writes one."""
_HINTS: dict[type, dict[str, Any]] = {}
"""Each class's field types, read once."""


def fitting(value: Any) -> bool:
    """Whether every field of the dataclass `value` holds a value of its type."""
    cls = type(value)
    hints = _HINTS.get(cls) or _HINTS.setdefault(cls, typing.get_type_hints(cls))
    return all(_fits(getattr(value, f.name), hints[f.name]) for f in dataclasses.fields(value))


def _fits(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin is types.UnionType or origin is typing.Union:
        return any(_fits(value, arm) for arm in typing.get_args(hint))
    if origin is tuple:
        arms = typing.get_args(hint)
        if not isinstance(value, tuple):
            return False
        if len(arms) == 2 and arms[1] is Ellipsis:
            return all(_fits(item, arms[0]) for item in value)
        return len(value) == len(arms) and all(map(_fits, value, arms))
    if hint is type(None):
        return value is None
    if hint is bool:
        return type(value) is bool
    if hint is int:
        return type(value) is int and -LARGEST <= value <= LARGEST  # bool is no count
    if hint is float:
        return type(value) in (int, float)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True  # Any
