"""What a strategy's state may hold: values JSON stores as every reader reads them.

Python's json writes NaN and Infinity as bare words no JSON standard has: the history kept
them, `json.loads` read them back without a word, and every reader but Python's (jq, a
PostgreSQL `::jsonb` cast, an export's consumer) refuses the row.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

from chatmem.errors import one_line


def unstorable(values: Mapping[str, Any]) -> str | None:
    """Why one of `values` cannot be stored as a state's key, naming the key; None when
    each can."""
    for key, value in values.items():
        try:
            json.dumps(value, allow_nan=False)
        except ValueError:  # a float out of JSON's range, or a value holding itself
            odd = _non_finite(value, set())
            held = "a value that holds itself" if odd is None else json.dumps(odd)
            return f"key {key!r} holds {held}, which JSON cannot store"
        except (TypeError, RecursionError) as e:
            return f"key {key!r} holds what JSON cannot store ({one_line(e)})"
    return None


def rekeyed(values: Mapping[str, Any]) -> str | None:
    """Why one of `values` would read back as another value, naming the key: a dict key that
    is not text (`{1: "a"}`), which JSON stores as text (`{"1": "a"}`, and `{1: x, "1": y}` as
    one key); None when none holds one. A plugin's update keyed its counts by turn number and
    found none of them on the next turn, or lost one of two keys, without a word."""
    for key, value in values.items():
        for odd in _untexted_keys(value, set()):
            return (f"key {key!r} holds a dict key {odd!r} ({type(odd).__name__}), which JSON"
                    f" stores as the text {json.dumps({odd: 0})[1:-4]}: the next"
                    " build and update would read that, not what was set")
    return None


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
