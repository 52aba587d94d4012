"""What a strategy's state may hold: values JSON stores as every reader reads them.

Python's json writes NaN and Infinity as bare words no JSON standard has: the history kept
them, `json.loads` read them back without a word, and every reader but Python's (jq, a
PostgreSQL `::jsonb` cast, an export's consumer) refuses the row.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from chatmem.errors import one_line


def unstorable(values: Mapping[str, Any]) -> str | None:
    """Why one of `values` cannot be stored as a state's key, naming the key; None when
    each can."""
    for key, value in values.items():
        try:
            json.dumps(value, allow_nan=False)
        except RecursionError:
            return f"key {key!r} holds {NESTED}, which JSON cannot store"
        except ValueError:  # a float out of JSON's range, a whole number too long, a loop
            try:
                odd = _non_finite(value, set())
                long = _too_long(value, set())
            except RecursionError:
                return f"key {key!r} holds {NESTED}, which JSON cannot store"
            held = (json.dumps(odd) if odd is not None
                    else f"a whole number of more than {sys.get_int_max_str_digits():,}"
                         " digits" if long
                    else "a value that holds itself")
            return f"key {key!r} holds {held}, which JSON cannot store"
        except TypeError as e:
            return f"key {key!r} holds what JSON cannot store ({one_line(e)})"
    return None


NESTED = "lists or dicts nested deeper than Python's recursion limit"
"""What a state value too deeply nested to convert holds (a plugin's update died with a bare
RecursionError, unnamed, and was told to reset a state that was never at fault)."""


def rekeyed(values: Mapping[str, Any]) -> str | None:
    """Why one of `values` would read back as another value, naming the key: a dict key that
    is not text (`{1: "a"}`), which JSON stores as text (`{"1": "a"}`, and `{1: x, "1": y}` as
    one key); None when none holds one. A plugin's update keyed its counts by turn number and
    found none of them on the next turn, or lost one of two keys, without a word."""
    for key, value in values.items():
        try:
            odd = next(_untexted_keys(value, set()), _NONE)
        except RecursionError:
            return f"key {key!r} holds {NESTED}, which JSON cannot store"
        if odd is not _NONE:
            return (f"key {key!r} holds a dict key {odd!r} ({type(odd).__name__}), which JSON"
                    f" stores as the text {json.dumps({odd: 0})[1:-4]}: the next"
                    " build and update would read that, not what was set")
    return None


_NONE = object()


def _too_long(value: Any, seen: set[int]) -> bool:
    """Whether a whole number inside `value` (dict values and keys, list items) is too long
    for Python to write as text (sys.get_int_max_str_digits: json.dumps raised ValueError,
    which read as a value holding itself)."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            str(value)
        except ValueError:
            return True
        return False
    if not isinstance(value, (dict, list, tuple)) or id(value) in seen:
        return False
    seen.add(id(value))
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else list(value)
    return any(_too_long(item, seen) for item in items)


def _untexted_keys(value: Any, seen: set[int]) -> Iterator[Any]:
    """The dict keys inside `value` that are not text, outermost first."""
    if not isinstance(value, (dict, list, tuple)) or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, dict):
        # Only the keys JSON writes as text: another (a tuple) is no JSON, `unstorable`'s.
        yield from (k for k in value if isinstance(k, (int, float, bool)) or k is None)
    for item in value.values() if isinstance(value, dict) else value:
        yield from _untexted_keys(item, seen)


def _non_finite(value: Any, seen: set[int]) -> float | None:
    """The first NaN or infinity inside `value` (dict values and keys, list items)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else value
    if not isinstance(value, (dict, list, tuple)) or id(value) in seen:
        return None
    seen.add(id(value))
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else list(value)
    return next((odd for item in items if (odd := _non_finite(item, seen)) is not None), None)
