"""What a strategy's state may hold: values JSON stores as every reader reads them.

Python's json writes NaN and Infinity as bare words no JSON standard has: the history kept
them, `json.loads` read them back without a word, and every reader but Python's (jq, a
PostgreSQL `::jsonb` cast, an export's consumer) refuses the row.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
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


def _non_finite(value: Any, seen: set[int]) -> float | None:
    """The first NaN or infinity inside `value` (dict values and keys, list items)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else value
    if not isinstance(value, (dict, list, tuple)) or id(value) in seen:
        return None
    seen.add(id(value))
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else list(value)
    return next((odd for item in items if (odd := _non_finite(item, seen)) is not None), None)
