"""Pinned details: drift-guard anchors a summary dropped, listed and forgotten like facts.

The summary strategies keep them in their strategy state ("pinned": a list
of [text, summary version, pin id, turn, quote], oldest pin first) and send
them verbatim in a `facts` part, each with the turn it came from and a short
verbatim quote around it, so a bare "77 EUR" still says what it was. This
module lists them for /facts and `chatmem facts list` (id `p3`, source
`summary-buffer v2 (pinned)`) and unpins them for /forget and `chatmem facts
forget`. An unpinned detail is remembered as such, so the
drift guard does not pin it again when a later summary drops it once more.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from chatmem.fts import CJK
from chatmem.graphemes import grapheme_start
from chatmem.memory import quoting
from chatmem.memory.anchors import present

if TYPE_CHECKING:
    from chatmem.store.protocols import MemoryStateRepository, MemoryStore
    from chatmem.tokens import TokenCounter

PINNED_KEY = "pinned"
UNPINNED_KEY = "unpinned"
COUNTER = "pins"
"""Strategy-state namespace of the session's last pin id, shared by every summary strategy,
so that `p3` names one pin in a session even when two summary strategies have pins."""
_REF = re.compile(r"^[pP](\d+)$")
_CJK = re.compile(f"[{CJK}]")
_SENTENCE = re.compile(r"[^.!?。！？\n]*(?:[.!?](?=\s|$)|[。！？]|\n|$)")
_WORD_CHAR = re.compile(r"[A-Za-z0-9_\-./@#]")
QUOTE_WIDTH = 56
"""Longest quote, in columns: a CJK character counts two (it costs more tokens, too)."""


@dataclass(frozen=True)
class Pin:
    """One pinned detail as a summary strategy keeps it."""

    text: str
    version: int
    """The summary version that dropped it."""
    pin_id: int | None = None
    turn: int | None = None
    """The turn it was first said in, when known."""
    quote: str = ""
    """A short verbatim piece of that turn around the detail."""

    def stored(self) -> list[Any]:
        return [self.text, self.version, self.pin_id, self.turn, self.quote]


@dataclass(frozen=True)
class PinnedFact:
    session_id: int
    strategy: str
    text: str
    version: int
    pin_id: int | None
    """None only for pins stored before pins had ids; they are named by their text."""
    turn: int | None = None
    quote: str = ""

    @property
    def ref(self) -> str:
        return f"p{self.pin_id}" if self.pin_id is not None else ""

    @property
    def source(self) -> str:
        return f"{self.strategy} v{self.version} (pinned)"


def parse_pins(value: Any) -> list[Pin]:
    """The stored pin list, oldest first; pins stored before quotes existed have none."""
    out = []
    for item in value or []:
        turn = int(item[3]) if len(item) > 3 and item[3] is not None else None
        quote = str(item[4]) if len(item) > 4 and item[4] else ""
        pin_id = int(item[2]) if len(item) > 2 and item[2] is not None else None
        out.append(Pin(str(item[0]), int(item[1]), pin_id, turn, quote))
    return out


def quote_around(content: str, anchors: Sequence[str], width: int = QUOTE_WIDTH) -> str:
    """A verbatim piece of `content` around `anchors`, about `width` columns, on one line.

    The piece stays within the sentences that hold the anchors and grows
    evenly around them; cut ends are marked "…" and never split a Latin word,
    an id or a character (`_inside`). When the anchors lie too far apart, it is the first one's.
    """
    text = " ".join(content.split())
    folded = text.casefold()
    spans = []
    for anchor in anchors:
        needle = " ".join(anchor.split()).casefold()
        at = folded.find(needle)
        if at >= 0 and needle:
            spans.append((at, at + len(needle)))
    if not spans:
        return ""
    at, end = min(spans)[0], max(e for _, e in spans)
    if _columns(text[at:end]) > width:
        at, end = min(spans)
    start, stop = 0, len(text)
    for match in _SENTENCE.finditer(text):
        if match.end() <= at and match.group().strip():
            start = match.end()
        if match.end() >= end:
            stop = match.end()
            break
    while start < at and text[start].isspace():
        start += 1
    left, right = at, end
    room = width - _columns(text[at:end])
    while left > start or right < stop:  # grow evenly, left first
        grow_left = left > start and (right >= stop or at - left <= right - end)
        cost = _columns(text[left - 1] if grow_left else text[right])
        if cost > room:
            break
        room -= cost
        if grow_left:
            left -= 1
        else:
            right += 1
    while start < left < at and _inside(text, left):
        left += 1
    while end < right < stop and _inside(text, right):
        right -= 1
    piece = text[left:right].strip()
    return ("…" if left > start else "") + piece + ("…" if right < stop else "")


def _inside(text: str, at: int) -> bool:
    """Whether a cut at `at` splits an id, a Latin word or what a reader sees as one
    character (a flag, an emoji family, a letter and its accent)."""
    return not grapheme_start(text, at) or bool(_WORD_CHAR.match(text[at - 1])
                                                 and _WORD_CHAR.match(text[at]))


def _columns(text: str) -> int:
    return sum(2 if _CJK.match(c) else 1 for c in text)


def first_quotes(
    anchors: Iterable[str], said: Iterable[tuple[int | None, str]]
) -> dict[str, tuple[int | None, str]]:
    """Anchor → (turn, quote) from the earliest message in `said` ((turn, content), oldest
    first) that holds it; anchors first said in one message share one quote."""
    wanted = list(dict.fromkeys(anchors))
    found: dict[str, tuple[int | None, str]] = {}
    for turn, content in said:
        if len(found) == len(wanted):
            break
        here = [a for a in wanted if a not in found and present(a, content)]
        if here:
            quote = quote_around(content, here)
            found.update((a, (turn, quote)) for a in here)
    return found


def pin_lines(pins: Sequence[Pin]) -> list[str]:
    return [pin_line(group) for group in pin_groups(pins)]


def pin_groups(pins: Sequence[Pin]) -> list[list[Pin]]:
    """The pins of each line: one line per turn (a pin of no known turn alone), in
    conversation order, so the model reads them as they were said."""
    groups: dict[object, list[Pin]] = {}
    for index, pin in enumerate(pins):
        groups.setdefault(pin.turn if pin.turn is not None else ("unknown", index), []).append(pin)
    return sorted(groups.values(), key=lambda g: (g[0].turn is None, g[0].turn or 0))


def pin_line(group: Sequence[Pin]) -> str:
    line = "- " + ", ".join(p.text for p in group)
    turn = group[0].turn
    quote = next((p.quote for p in group if p.quote), "")
    if quote:
        where = f"from turn {turn}" if turn is not None else "quoted"
        line += f" ({where}: \"{_data(quote)}\")"
    elif turn is not None:
        line += f" (turn {turn})"
    # Quotations of the conversation: they can never spell a template marker.
    return quoting.escape(line)


FACTS_HEAD = "Details from earlier turns, kept verbatim, data:\n<facts>\n"
FACTS_TAIL = "</facts>"


def facts_text(pins: Sequence[Pin]) -> str:
    """The facts message's text: a delimited data block, quotations rather than instructions."""
    return FACTS_HEAD + "".join(line + "\n" for line in pin_lines(pins)) + FACTS_TAIL


class PinCost:
    """Tokens of the facts message for a set of pins, as `fit_pins` asks for candidate sets.

    With an additive tokenizer (tiktoken's cl100k_base never merges tokens across a
    line break followed by "- " or "</") the message costs its frame plus each of its
    lines, and a line is counted once however many candidates hold it: fitting is
    dictionary lookups, not a re-tokenization per candidate. Otherwise every
    candidate's text is counted whole.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.additive = counter.additive

    def __call__(self, pins: Sequence[Pin]) -> int:
        if not self.additive:
            return self.counter.count_message("system", facts_text(pins))
        return self.frame() + sum(self.line(group) for group in pin_groups(pins))

    def frame(self) -> int:
        """The message with no lines (additive counters only)."""
        return self._count(("frame",), lambda: self.counter.count_message(
            "system", FACTS_HEAD + FACTS_TAIL))

    def line(self, group: Sequence[Pin]) -> int:
        """One line's tokens (additive counters only)."""
        line = pin_line(group)
        return self._count(line, partial(self.counter.count_text, line + "\n"))

    def _count(self, what: object, count: Callable[[], int]) -> int:
        # Shared by every PinCost of a tokenizer: the same pins are fitted turn after turn.
        key = (self.counter.key, what)
        found = _LINE_COUNTS.get(key)
        if found is None:
            if len(_LINE_COUNTS) >= _LINE_COUNTS_KEPT:
                _LINE_COUNTS.clear()
            found = _LINE_COUNTS[key] = count()
        return found


_LINE_COUNTS: dict[tuple[str, object], int] = {}
_LINE_COUNTS_KEPT = 8192


def _data(quote: str) -> str:
    # A quote stays inside the data block: it can never close or reopen it.
    return re.sub(r"(?i)</?\s*facts\s*>", "[facts]", quote)


def fit_pins(
    pins: Sequence[Pin], limit: int, cost: Callable[[Sequence[Pin]], int]
) -> tuple[list[Pin], list[Pin]]:
    """(shown, released): the pins as they fit `cost` ≤ `limit`, and those let go.

    Quotes give way before pins do: the oldest turns' pins lose their quotes
    first (they keep their turn number); if the pins still do not fit, the
    oldest are released, and the room that frees gives quotes back, newest first.
    Stripping or releasing more never costs more, so both are binary searches:
    a few cost calls, not one per pin. With an additive PinCost a candidate's
    cost is a sum of line costs counted once (prefix sums for the searches, one
    difference per turn given its quote back), and a fit is remembered: the same
    pins meet the same limits on every turn until a fold changes them.
    """
    if not pins:
        return [], []
    lines = cost if isinstance(cost, PinCost) and cost.additive else None
    if lines is not None:
        # The same pins are fitted to the same limits turn after turn, until a fold.
        key = (lines.counter.key, tuple(pins), limit)
        if key not in _FITS:
            if len(_FITS) >= _FITS_KEPT:
                _FITS.clear()
            _FITS[key] = _fit(pins, limit, cost, lines)
        shown, released = _FITS[key]
        return list(shown), list(released)
    return _fit(pins, limit, cost, None)


_FITS: dict[tuple[str, tuple[Pin, ...], int], tuple[list[Pin], list[Pin]]] = {}
_FITS_KEPT = 64


def _fit(pins: Sequence[Pin], limit: int, cost: Callable[[Sequence[Pin]], int],
         lines: PinCost | None) -> tuple[list[Pin], list[Pin]]:
    turns = list(dict.fromkeys(p.turn for p in pins))
    if cost(pins) <= limit:
        return list(pins), []
    if lines is not None:
        # A line's cost is its own: each turn's quoted and bare line is counted once,
        # and stripping the oldest n turns' quotes costs a prefix sum.
        quoted, plain = _turn_costs(pins, lines)
        prefix = [lines.frame() + sum(quoted.values())]
        for turn in turns:
            prefix.append(prefix[-1] - quoted[turn] + plain[turn])
        strip = _first(1, len(turns), lambda n: prefix[n] <= limit)
    else:
        strip = _first(1, len(turns), lambda n: cost(_bare(pins, set(turns[:n]))) <= limit)
    # The fewest oldest turns whose quotes must go (all of them if even that is not enough).
    stripped = set(turns[:strip])
    shown = _bare(pins, stripped)
    released = 0
    if lines is None or prefix[strip] > limit:
        released = _first(0, len(pins), lambda n: cost(shown[n:]) <= limit)
    kept = list(pins[released:])
    giving_back = reversed([t for t in turns if t in stripped])
    if lines is not None:
        quoted, plain = _turn_costs(kept, lines)
        used = cost(shown[released:])
        for turn in giving_back:
            extra = quoted.get(turn, 0) - plain.get(turn, 0)
            if used + extra <= limit:
                stripped.discard(turn)
                used += extra
        return _bare(kept, stripped), list(pins[:released])
    shown = shown[released:]
    for turn in giving_back:
        trial = _bare(kept, stripped - {turn})
        if cost(trial) <= limit:
            stripped.discard(turn)
            shown = trial
    return shown, list(pins[:released])


def _bare(some: Sequence[Pin], turns: set[int | None]) -> list[Pin]:
    """`some` without the quotes of the pins of `turns` (and of pins of no known turn)."""
    return [replace(p, quote="") if p.turn in turns or p.turn is None else p for p in some]


def _turn_costs(pins: Sequence[Pin], cost: PinCost) -> tuple[dict[object, int], dict[object, int]]:
    """Tokens of each turn's line with its quote and without (pins of no known turn are
    counted bare both ways: stripping quotes always strips theirs)."""
    quoted: dict[object, int] = {}
    plain: dict[object, int] = {}
    for group in pin_groups(pins):
        turn = group[0].turn
        bare = cost.line(_bare(group, {turn}))
        plain[turn] = plain.get(turn, 0) + bare
        quoted[turn] = quoted.get(turn, 0) + (cost.line(group) if turn is not None else bare)
    return quoted, plain


def _first(low: int, high: int, fits: Callable[[int], bool]) -> int:
    """The smallest n in low..high for which `fits(n)` (which stays true once true), else high."""
    while low < high:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle + 1
    return low


def allocate_ids(store: MemoryStore, session_id: int, count: int) -> list[int]:
    """Fresh pin ids for this session; an id is never given out twice, even after an unpin."""
    if count <= 0:
        return []
    with store.write():  # read and bump under the lock: two processes never share an id
        last = int(store.memory.strategy_state(session_id, COUNTER).get("last", 0))
        store.memory.set_strategy_state(session_id, COUNTER, {"last": last + count})
    return list(range(last + 1, last + count + 1))


def is_unpinned(unpinned: Iterable[str], text: str) -> bool:
    """Whether the user unpinned this text (compared like the drift guard compares anchors)."""
    return any(present(u, text) and present(text, u) for u in unpinned)


def pinned_facts(memory: MemoryStateRepository, session_id: int | None = None
                 ) -> list[PinnedFact]:
    """The pins of one session, or of every session, by session, strategy and pin order."""
    return [
        PinnedFact(sid, strategy, p.text, p.version, p.pin_id, p.turn, p.quote)
        for sid, strategy, value in memory.strategy_state_values(PINNED_KEY, session_id)
        for p in parse_pins(value)
    ]


def find_pins(pins: Sequence[PinnedFact], ref: str) -> list[PinnedFact]:
    """The pins `ref` names: an id like p3, or the pinned text (case and spacing aside)."""
    ref = ref.strip()
    by_id = _REF.match(ref)
    if by_id:
        return [p for p in pins if p.pin_id == int(by_id.group(1))]
    return [p for p in pins if is_unpinned([ref], p.text)]


def unpin(store: MemoryStore, pin: PinnedFact) -> None:
    """Stop sending a pin, and keep the drift guard from pinning the same text again.

    Read and written under the write lock: a fold another process commits
    meanwhile is neither undone nor able to undo this.
    """
    with store.write():
        values = store.memory.strategy_state(pin.session_id, pin.strategy)
        kept = [p.stored() for p in parse_pins(values.get(PINNED_KEY)) if p.text != pin.text]
        unpinned = [str(u) for u in values.get(UNPINNED_KEY, [])]
        if not is_unpinned(unpinned, pin.text):
            unpinned.append(pin.text)
        store.memory.set_strategy_state(pin.session_id, pin.strategy,
                                        {PINNED_KEY: kept, UNPINNED_KEY: unpinned})


def pinned_at(memory: MemoryStateRepository, pins: Sequence[PinnedFact]
              ) -> dict[PinnedFact, str]:
    """Pin → when the summary version that dropped it was made (a pin's age)."""
    made: dict[tuple[int, str, int], str] = {}
    for session_id, strategy in dict.fromkeys((p.session_id, p.strategy) for p in pins):
        for record in memory.summaries(session_id, strategy):
            made[(session_id, strategy, record.version)] = record.created_at
    return {p: made[key] for p in pins if (key := (p.session_id, p.strategy, p.version)) in made}
