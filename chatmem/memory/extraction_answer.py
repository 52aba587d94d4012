"""The fact extractor's answer (chatmem.memory.extraction): the changes it may make, and
the check its JSON passes before any is stored. An answer not valid is rejected whole; a
fact too long to keep is dropped from a valid one (`Extraction.too_long`), not the answer.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace

from chatmem.errors import ProviderResponseError
from chatmem.memory.fact_keys import key_identity, normalize_key
from chatmem.memory.said_values import said_in
from chatmem.reasoning import without_reasoning
from chatmem.store.records import FactScope

MAX_KEY_CHARS = 80
MAX_VALUE_CHARS = 1000
SCOPES = tuple(FactScope)


@dataclass(frozen=True)
class FactChange:
    key: str
    value: str
    scope: FactScope
    turn: int
    same_as: str | None = None
    """The existing key the extractor says names this same fact (another language)."""


@dataclass(frozen=True)
class FactRetraction:
    key: str
    turn: int


@dataclass
class Extraction:
    set: list[FactChange] = field(default_factory=list)
    retract: list[FactRetraction] = field(default_factory=list)
    too_long: list[str] = field(default_factory=list)
    """The keys of facts dropped for a key or value over MAX_KEY_CHARS, MAX_VALUE_CHARS."""


_FENCED = re.compile(r"```(?:json)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)


def parse_extraction(text: str, turns: Sequence[int],
                     current: Collection[tuple[str, str]] = ()) -> Extraction:
    """Validate the model's answer; raises ProviderResponseError naming what is wrong.

    `current`: the facts the request held, as (key_identity, value) pairs; a fact of the
    answer that repeats one of them as it stands, under a turn not given, is passed over.
    """
    data = _answer_json(without_reasoning(text))
    if not isinstance(data, dict):
        raise _bad("expected a JSON object with 'set' and 'retract'")
    unknown = set(data) - {"set", "retract"}
    if unknown:
        raise _bad(f"unknown field {sorted(unknown)[0]!r} (valid: set, retract)")
    # Models one step off the schema ("retract": null, "scope": "User", "turn": "1") had the
    # whole answer rejected, each of its facts lost, and the same answer came again.
    # Only null: an object where a list goes ({"set": {}}) is off in shape, not empty.
    sets, retracts = ([] if data.get(f) is None else data[f] for f in ("set", "retract"))
    if not isinstance(sets, list) or not isinstance(retracts, list):
        raise _bad("'set' and 'retract' must be lists")
    latest = max(turns) if turns else 0
    result = Extraction()
    for i, item in enumerate(sets):
        if not isinstance(item, dict):
            raise _bad(f"set[{i}] must be an object")
        key, value = item.get("key"), item.get("value")
        if isinstance(value, int | float) and not isinstance(value, bool) \
                and math.isfinite(value):
            # An age or a count written as a JSON number ("value": 30): the whole answer
            # was rejected for it, each of its facts lost. said_in still checks it was said.
            value = str(value)
        if not isinstance(key, str) or not normalize_key(key):
            raise _bad(f"set[{i}].key must be a non-empty string")
        if not isinstance(value, str) or not value.strip():
            raise _bad(f"set[{i}].value must be a non-empty string")
        if len(key) > MAX_KEY_CHARS or len(value) > MAX_VALUE_CHARS:
            # A statement too long to be a fact; the answer's other facts stand (rejecting
            # it whole, the same answer came every turn and none was kept).
            result.too_long.append(normalize_key(key))
            continue
        scope = item.get("scope") or "session"
        scope = scope.strip().lower() if isinstance(scope, str) else scope
        if scope not in SCOPES:
            raise _bad(f"set[{i}].scope must be 'user' or 'session', got {scope!r}")
        turn = _turn(item.get("turn", latest))
        if not isinstance(turn, int) or isinstance(turn, bool) or turn not in turns:
            if (key_identity(key), value.strip()) in current:
                # Models asked to keep a table answer with the whole table, each current
                # fact under the turn it came from: rejected whole for it, every answer
                # was, and after MAX_REJECTIONS no new fact was read.
                continue
            raise _bad(f"set[{i}].turn must be one of the given turns, got {turn!r}")
        same_as = item.get("same_as")
        if same_as is not None and not isinstance(same_as, str):
            raise _bad(f"set[{i}].same_as must be a key or null, got {same_as!r}")
        result.set.append(FactChange(normalize_key(key), value.strip(), FactScope(scope), turn,
                                     normalize_key(same_as) if same_as else None))
    for i, item in enumerate(retracts):
        # A bare key is accepted too; it then counts as said in the latest turn.
        if isinstance(item, dict):
            key, turn = item.get("key"), _turn(item.get("turn", latest))
        else:
            key, turn = item, latest
        if not isinstance(key, str) or not normalize_key(key):
            raise _bad(f"retract[{i}] must be a key or an object with a non-empty key")
        if not isinstance(turn, int) or isinstance(turn, bool) or turn not in turns:
            raise _bad(f"retract[{i}].turn must be one of the given turns, got {turn!r}")
        result.retract.append(FactRetraction(normalize_key(key), turn))
    return result


def _answer_json(text: str) -> object:
    """The answer's JSON: the whole text, else the first fenced block in it that is JSON,
    else the object its first { opens. Small and reasoning models write a line before the
    object ("Here are the facts:") or after it: rejected whole, such an answer came every
    turn, and after MAX_REJECTIONS its turns were passed over with their facts unread."""
    try:
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            whole = e
        for fenced in _FENCED.finditer(text):
            try:
                return json.loads(fenced.group(1))
            except json.JSONDecodeError:
                continue
        start = text.find("{")
        if start >= 0:
            try:
                return json.JSONDecoder().raw_decode(text, start)[0]
            except json.JSONDecodeError:
                pass
    except RecursionError:
        # Not a failed update to try again every turn: an answer, and no valid one.
        raise _bad("JSON nested too deeply") from None
    raise _bad(f"not JSON ({whole.msg} at char {whole.pos})")


def only_said(extraction: Extraction, said: Sequence[str]) -> tuple[Extraction, list[str]]:
    """The extraction minus facts whose value no text of `said` holds (in a form
    `said_values.said_in` allows: width, case, spacing, punctuation, numbers in words),
    and their keys. Values are copied from the user's words (the prompt says so): one that
    is not is the helper's own (a name it misheard, a value it translated, a table it made
    up: 800 facts from "I live in Paris"), and kept it was sent every turn as a fact the
    user stated."""
    kept, unsaid = [], []
    for change in extraction.set:
        if said_in(change.value, said):
            kept.append(change)
        else:
            unsaid.append(change.key)
    return replace(extraction, set=kept), unsaid


def _turn(value: object) -> object:
    """A turn written as a string of digits ("1") read as the number; anything else as it is."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value.strip())
    return value


def _bad(why: str) -> ProviderResponseError:
    return ProviderResponseError(f"fact extraction answer rejected: {why}")
