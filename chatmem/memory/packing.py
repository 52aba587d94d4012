"""How `retrieval` packs the best-ranked messages (chatmem.memory.ranking) into its budget.

Packing fills the room with the best-ranked messages; with vectors, MMR
(`mmr` = λ) trades relevance for diversity so near-duplicates do not crowd
out the rest. The kept messages are then sent in conversation order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from chatmem.memory.day_stamps import opens_with_day
from chatmem.memory.reasons import RecallRoute, RecallVerdict
from chatmem.plugin_calls import kind_of

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")

POOL = 300
"""Candidates considered for packing at most: the best-fused ones (MMR and budget work on
these); `pool_size` gives how many for a room."""
POOL_AT_LEAST = 150
ROOM_PER_CANDIDATE = 12
"""Tokens of room per candidate: about four candidates for each message that fits (LoCoMo's
messages average about 50 tokens)."""


def pool_size(room: int) -> int:
    """How many of the best-fused candidates packing considers for `room` tokens: about four
    for each message that fits, POOL_AT_LEAST to POOL. Reading, ranking and packing each
    candidate is most of a build's work, and a pool many times larger than what fits only
    costs: on the development set (benchmarks/recall.py --dev) id recall at 1,000 / 2,000 /
    4,000 tokens is the same with 150 candidates as with 300 (0.748 / 0.848 / 0.909); 100
    lose three ids at 4,000 tokens, where about 70 messages fit."""
    return min(POOL, max(POOL_AT_LEAST, room // ROOM_PER_CANDIDATE))


class _once(Generic[T]):  # lower case: a decorator, as functools.cached_property
    """functools.cached_property without its lock (Python 3.11 takes one lock of the class
    at each first read, 0.8 us): the value is kept in the instance's __dict__, which then
    answers every later read. Ranked is read on one thread."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self.compute, self.name = compute, compute.__name__

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> _once[T]: ...
    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> T | _once[T]:
        if instance is None:
            return self
        value: T = self.compute(instance)
        instance.__dict__[self.name] = value
        return value


@dataclass
class Known:
    """What earlier builds worked out of candidates' texts, by (message id, hash of the
    text): a session's pools overlap from turn to turn (97-99% on the benchmark's), and
    these were worked out again for every candidate of every build. Keyed by the text
    too, as MessageCounts' counts are, so a message rewritten meanwhile is worked out anew."""

    said: dict[tuple[int, int], int] = field(default_factory=dict)
    """`said_key` of each."""
    labels: dict[tuple[int, int], str | None] = field(default_factory=dict)
    """The speaker label each opens with, compared (chatmem.memory.speaker_prior)."""


@dataclass
class Ranked:
    """One candidate's scores, and whether it was sent."""

    key: int
    position: int
    turn: int
    role: str
    bm25: float
    words: float
    dense: float | None
    fused: float
    tokens: int = 0
    text: str | None = field(default=None, repr=False)
    """The message's text, which `said` keys (None: compared with none)."""
    kept: bool = False
    why: RecallVerdict | None = None
    route: RecallRoute | None = None
    known: Known | None = field(default=None, repr=False, compare=False)
    """Where what is worked out of `text` is kept across builds (None: nowhere)."""

    @_once
    def said(self) -> int | None:
        """What it says (`said_key`): one key for messages of one role saying the same text.
        Worked out for the candidates packing looks at, not the whole pool: 1.8 µs a
        message, 0.5 ms a build over 300 candidates; once per message where `known`."""
        if self.text is None:
            return None
        if self.known is None:
            return said_key(self.role, self.text)
        said, at = self.known.said, (self.key, hash(self.text))
        key = said.get(at)
        if key is None:
            key = said[at] = said_key(self.role, self.text)
        return key


def said_key(role: str, content: str) -> int:
    """One key for the messages of a role that say the same text, but for case and spacing
    (a question asked again word for word, the template pasted again)."""
    return hash((role, " ".join(content.casefold().split())))


def pool(fused: np.ndarray, size: int = POOL) -> list[int]:
    """Indexes of the best-fused candidates (score > 0), best first."""
    import numpy as np

    positive = np.flatnonzero(fused > 0)
    if len(positive) > size:
        # The size-th best score; of the candidates scoring just that, the latest.
        cut = -np.partition(-fused[positive], size - 1)[size - 1]
        above = positive[fused[positive] > cut]
        level = positive[fused[positive] == cut]
        positive = np.concatenate([above, level[len(level) - (size - len(above)):]])
    # Best first; among equals the later message, as it is the fresher statement.
    order = np.lexsort((-positive, -fused[positive]))
    return [int(i) for i in positive[order]]


def pack(
    ranked: Sequence[Ranked], room: int, *, mmr: float, vectors: np.ndarray | None,
    limit: int = 0, days: Sequence[date | None] = (), line: int = 0,
) -> None:
    """Mark which of `ranked` (best first) are kept within `room` tokens, and why not.

    With `vectors` (rows aligned with `ranked`) and `mmr` < 1, each pick is the
    candidate with the best λ·relevance − (1−λ)·(similarity to what is kept). With
    `mmr` < 1, a message saying what a kept one says (`said`) is too similar outright:
    an embedder that puts unrelated messages at cosine 0.75–0.84 (e5-small) leaves a
    copy's penalty at 1.0 about 0.07 above theirs at λ 0.6, so five copies of one
    exchange filled a budget.

    `days` (aligned with `ranked`; empty: none): the earlier day a candidate was said on,
    whose line of `line` tokens (chatmem.memory.recall_days) the first one kept of that
    day pays for, unless its text opens with that day written out (chatmem.memory.day_stamps);
    recall_days works the lines out exactly on what is kept.
    """
    import numpy as np

    relevance = np.array([r.fused for r in ranked], dtype=np.float32)
    diverse = vectors is not None and mmr < 1
    # The MMR score of each open candidate, closed ones at -inf: it changes only when a
    # candidate is kept, so a pick that does not fit costs one argmax, not a new score.
    wanted = mmr * relevance
    score = wanted.copy() if diverse else -np.arange(len(ranked), dtype=np.float32)
    # (1−mmr)·similarity to the closest kept, kept in place: the rows scaled once, so a
    # kept pick costs a product, a maximum and a difference.
    scaled = None if vectors is None or not diverse else vectors * np.float32(1 - mmr)
    penalty = np.zeros(len(ranked), dtype=np.float32)
    used = kept = 0
    left = len(ranked)
    said: set[int | None] | None = set() if mmr < 1 else None
    smallest = min([r.tokens for r in ranked], default=0)
    named: set[date] = set()  # the days whose line a kept message pays
    while left and room - used >= smallest:
        pick = int(score.argmax())
        # Closed for good: -inf in what each new score is computed from, too.
        score[pick] = wanted[pick] = -np.inf
        left -= 1
        candidate = ranked[pick]
        if said and candidate.said in said:  # keyed only once there is one to compare
            candidate.why = RecallVerdict.TOO_SIMILAR
            continue
        day = days[pick] if days else None
        if day is not None and day not in named and opens_with_day(candidate.text, day):
            day = None  # its own text names the day: no line to pay
        cost = candidate.tokens + (line if day is not None and day not in named else 0)
        if used + cost > room:
            candidate.why = RecallVerdict.DOES_NOT_FIT
            continue
        candidate.kept, candidate.why = True, RecallVerdict.KEPT
        if said is not None and candidate.said is not None:
            said.add(candidate.said)
        if day is not None:
            named.add(day)
        used += cost
        kept += 1
        if scaled is not None:
            assert vectors is not None
            # BLAS, not `similarities`: the pool holds at most POOL rows (see there).
            np.maximum(penalty, scaled @ vectors[pick], out=penalty)
            np.subtract(wanted, penalty, out=score)
        if limit and kept >= limit:
            break
    lowest_kept = max([i for i, r in enumerate(ranked) if r.kept], default=-1)
    for i, candidate in enumerate(ranked):
        if candidate.kept or candidate.why:
            continue
        if limit and kept >= limit:
            candidate.why = RecallVerdict.TOP_K
        elif i < lowest_kept:
            candidate.why = RecallVerdict.TOO_SIMILAR
        else:
            candidate.why = RecallVerdict.NO_ROOM


def as_json(ranked: Sequence[Ranked], top_k: int = 0) -> list[dict[str, Any]]:
    """The rows `inspect` shows and the turn stores; `why` by value (render words it)."""
    # Enum's `_value_`, not the `.value` descriptor (a Python call), and the optional keys
    # set after, not two dicts unpacked into each row: ~160 rows a build.
    rows = [{"id": r.key, "turn": r.turn, "role": r.role, "bm25": round(r.bm25, 4),
             "words": round(r.words, 4), "dense": None if r.dense is None else round(r.dense, 4),
             "fused": round(r.fused, 4), "tokens": r.tokens, "kept": r.kept,
             "why": None if r.why is None else r.why._value_} for r in ranked]
    for r, row in zip(ranked, rows, strict=True):
        if r.route is not None:
            row["route"] = r.route._value_
        if r.why is RecallVerdict.TOP_K:
            row["top_k"] = top_k
    return rows


_NUMBER = (int, float)
RECALL_ROW_KEYS: dict[str, tuple[tuple[type, ...], bool]] = {
    "id": ((int,), True), "turn": ((int,), True), "role": ((str,), False),
    "bm25": (_NUMBER, False), "words": (_NUMBER, False), "dense": (_NUMBER, True),
    "fused": (_NUMBER, False), "tokens": ((int,), False), "kept": ((bool,), False),
    "why": ((str,), True)}
"""Each key `as_json` gives a recall row: the types its value may have, and whether it may
be None (a combination's row may lack an id)."""


def wrong_recall(rows: object) -> str | None:
    """What makes `rows` (a context's recall, a plugin's given to assemble) no recall rows
    as `as_json` makes them, or None: they are stored as JSON with the turn (a set there
    lost the paid turn) and `inspect` reads each key (a missing one crashed it)."""
    if not isinstance(rows, tuple | list):
        return f"recall rows that are {kind_of(rows)}, not a list"
    for row in rows:
        if not isinstance(row, dict):
            return f"a recall row that is {kind_of(row)}, not a dict"
        missing = [key for key in RECALL_ROW_KEYS if key not in row]
        if missing:
            return (f"a recall row without {', '.join(missing)} (as "
                    "chatmem.memory.packing.as_json makes them)")
        for key, (types, none_ok) in RECALL_ROW_KEYS.items():
            value = row[key]
            if value is None and none_ok:
                continue
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                return f"a recall row whose {key} is {kind_of(value)}"
        wrong = _not_json(row)
        if wrong is not None:
            return f"a recall row holding {wrong}, which JSON cannot store"
    return None


def _not_json(value: object, depth: int = 0) -> str | None:
    """The first part of `value` that json.dumps cannot write (a set, a date, a tuple key)."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None  # NaN too: as json.dumps writes it, and as chatmem's own rows may hold
    if depth > 20:
        return "values nested too deep"
    if isinstance(value, list | tuple):
        return next((w for v in value if (w := _not_json(v, depth + 1)) is not None), None)
    if isinstance(value, dict):
        if not all(k is None or isinstance(k, str | int | float) for k in value):
            return "a key that is not text or a number"
        return next((w for v in value.values() if (w := _not_json(v, depth + 1)) is not None),
                    None)
    return kind_of(value)
