"""The pinned-facts block a summary strategy sends: one line per turn with its quote, the
tokens it costs, and which pins fit the pins' share of the budget (chatmem.memory.pins).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from chatmem.memory import quoting
from chatmem.memory.anchors import normal, present
from chatmem.memory.pins import Pin

if TYPE_CHECKING:
    from chatmem.tokens import TokenCounter



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
    # A value a later message replaced is history, never sent as if it were current.
    line = "- " + ", ".join(p.text if p.replaced is None else
                            f"{p.text} (replaced in turn {p.replaced})" for p in group)
    turn = group[0].turn
    # Each quote of the turn that holds a value no quote before it holds: one quote alone
    # could leave out a value it pins.
    quotes: list[str] = []
    # The quotes so far as `present` reads them, one text: asking each quote for each
    # pin cost pins × quotes (8,000 ids of one turn: 20 million asks, 30 s a fold).
    held, taken = "", set()
    for pin in group:
        if not pin.quote or (pin.quote in taken and present(pin.text, pin.quote)):
            continue  # no quote, or its own quote is there and holds it
        if not (quotes and _held(pin.text, held, quotes)):
            quotes.append(pin.quote)
            taken.add(pin.quote)
            held += _APART + normal(pin.quote)
    if quotes:
        where = f"from turn {turn}" if turn is not None else "quoted"
        line += f" ({where}: " + " ".join(f"\"{_data(q)}\"" for q in quotes) + ")"
    elif turn is not None:
        line += f" (turn {turn})"
    # Quotations of the conversation: they can never spell a template marker.
    return quoting.escape(line)


_APART = "\x00"
"""Between two quotes in `held`: no value holds it, so none is found across two quotes."""


def _held(value: str, held: str, quotes: Sequence[str]) -> bool:
    """Whether a quote of `quotes` (`held`: their `normal` forms, `_APART`) holds `value`."""
    needle = normal(value)
    if _APART in needle:
        return any(present(value, q) for q in quotes)
    return needle in held


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
