"""Pinned details: drift-guard anchors a summary dropped, listed and forgotten like facts.

The summary strategies keep them in their strategy state ("pinned": a list
of [text, summary version, pin id, turn, quote], oldest pin first) and send
them verbatim in a `facts` part (chatmem.memory.pin_block), each with the turn it came
from and a short verbatim quote around it (chatmem.memory.pin_quotes). This
module lists them for /facts and `chatmem facts list` (id `p3`, source
`summary-buffer v2 (pinned)`) and unpins them for /forget and `chatmem facts
forget`. An unpinned detail is remembered as such, so the
drift guard does not pin it again when a later summary drops it once more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chatmem.memory.anchors import present

if TYPE_CHECKING:
    from chatmem.store.protocols import MemoryStateRepository, MemoryStore
    from chatmem.store.records import StateRow


PINNED_KEY = "pinned"
UNPINNED_KEY = "unpinned"
COUNTER = "pins"
"""Strategy-state namespace of the session's last pin id, shared by every summary strategy,
so that `p3` names one pin in a session even when two summary strategies have pins."""
_REF = re.compile(r"^[pP](\d+)$")


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
    replaced: int | None = None
    """The turn of a later message that replaced the value (chatmem.memory.replaced_values)."""

    def stored(self) -> list[Any]:
        stored = [self.text, self.version, self.pin_id, self.turn, self.quote]
        return stored if self.replaced is None else [*stored, self.replaced]


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
        replaced = int(item[5]) if len(item) > 5 and item[5] is not None else None
        out.append(Pin(str(item[0]), int(item[1]), pin_id, turn, quote, replaced))
    return out


def allocate_ids(store: MemoryStore, session_id: int, count: int) -> list[int]:
    """Fresh pin ids for this session; an id is never given out twice, even after an unpin."""
    if count <= 0:
        return []
    with store.write():  # read and bump under the lock: two processes never share an id
        last = max(int(store.memory.strategy_state(session_id, COUNTER).get("last", 0)),
                   store.memory.counted_elsewhere(session_id, COUNTER, "last"))
        store.memory.set_strategy_state(session_id, COUNTER, {"last": last + count},
                                        covers_turn=0)  # an id counter: no turn's content
    return list(range(last + 1, last + count + 1))


def is_unpinned(unpinned: Iterable[str], text: str) -> bool:
    """Whether the user unpinned this text (compared like the drift guard compares anchors)."""
    return any(present(u, text) and present(text, u) for u in unpinned)


UNREADABLE = (TypeError, ValueError, IndexError, KeyError, OverflowError)
"""What reading a stored value of the wrong shape (JSON, but not what chatmem stored) raises."""
NOT_AS_STORED = "is not in the form chatmem stores it in"


@dataclass(frozen=True)
class ReadPins:
    pins: list[PinnedFact]
    skipped: list[StateRow]
    """Pin lists in sessions others share with the user that cannot be read: passed over (a
    row a sharer wrote never blocks the user's own listing, erasure or export)."""


def rebuilt_pins(memory: MemoryStateRepository, session_id: int, strategy: str
                 ) -> tuple[list[Pin], list[str]] | None:
    """A summary strategy's pins when its state reads as absent while its summaries are the
    reader's own (memory.summary_state): what they dropped and no later one said again,
    bare (their quotes were in the state), less what the user unpinned (a row the grantee's
    upkeep leaves hers); with the unpins. None while another role wrote that row or it is
    not as stored: what she unpinned is not known, and no pin may bring one back."""
    kept, value = memory.own_state_value(session_id, strategy, UNPINNED_KEY)
    try:
        unpinned = [str(u) for u in value or []]
    except TypeError:
        kept = False
    if not kept:
        return None
    held: dict[str, Pin] = {}
    for record in memory.summaries(session_id, strategy):
        held = {a: p for a, p in held.items() if not present(a, record.text)}
        held.update({a: Pin(a, record.version) for a in record.dropped_anchors
                     if a not in held and not is_unpinned(unpinned, a)})
    return list(held.values()), unpinned


def read_pins(memory: MemoryStateRepository, session_id: int | None = None, *,
              drift_guard: bool = True) -> ReadPins:
    """The pins of one session, or of every session, by session, strategy and pin order. A pin
    list of the user's own session that cannot be read is one line naming it (StateRow.error:
    its owner can drop that state); one of another's session is passed over, in `skipped`.
    A strategy whose state another role's upkeep wrote lists the pins its contexts send,
    rebuilt from the reader's summaries (none with `drift_guard` off, as none are sent)."""
    pins: list[PinnedFact] = []
    skipped: list[StateRow] = []
    for row in memory.strategy_state_values(PINNED_KEY, session_id):
        try:
            if not row.readable:
                raise ValueError(row.key)
            parsed = parse_pins(row.value)
        except UNREADABLE:
            if row.shared_by is None:
                raise (row.error() if not row.readable
                       else row.error(NOT_AS_STORED)) from None
            skipped.append(row)
            continue
        pins += [PinnedFact(row.session_id, row.strategy, p.text, p.version, p.pin_id, p.turn,
                            p.quote) for p in parsed]
    for rebuilt_in, strategy in memory.summarized_without_state(session_id) if drift_guard \
            else ():
        rebuilt = rebuilt_pins(memory, rebuilt_in, strategy)
        pins += [PinnedFact(rebuilt_in, strategy, p.text, p.version, None)
                 for p in (rebuilt[0] if rebuilt else [])]
    return ReadPins(pins, skipped)


def pinned_facts(memory: MemoryStateRepository, session_id: int | None = None, *,
                 drift_guard: bool = True) -> list[PinnedFact]:
    """The pins of one session, or of every session (read_pins, without what it passed over)."""
    return read_pins(memory, session_id, drift_guard=drift_guard).pins


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

    In a session another role shares for writing (PostgreSQL) a grantee's unpin is written
    to his own copy of the strategy's state (store.writer_state.PER_WRITER), as his turns'
    upkeep writes it: the pin leaves his listing, the contexts his chatmem builds there and
    his copy of the session into a file; the owner's pins and unpins stay as she wrote them.
    """
    with store.write():
        values = store.memory.strategy_state(pin.session_id, pin.strategy)
        latest = store.memory.latest_summary(pin.session_id, pin.strategy)
        if latest is not None and "boundary_turn" not in values:
            # Rebuilt from her summaries (another's upkeep wrote the state): her own unpins,
            # and this one, are what she writes; her next update stores the rest.
            rebuilt = rebuilt_pins(store.memory, pin.session_id, pin.strategy)
            unpinned = [*(rebuilt[1] if rebuilt else []), pin.text]
            store.memory.set_strategy_state(pin.session_id, pin.strategy,
                                            {UNPINNED_KEY: unpinned},
                                            covers_turn=latest.last_turn or 0)
            return
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
