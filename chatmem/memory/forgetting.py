"""What `/forget REF` and `chatmem facts forget REF` act on: exactly one fact or pinned
detail, or a refusal that lists the candidates.

Forgetting is for good, so a reference that names several (a key shared by a session
fact and a profile fact, a pin id in two sessions) is never guessed: the user picks one
by id. One rule for the REPL and the CLI; each says how to narrow in its own terms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from chatmem.errors import UsageError
from chatmem.memory.facts import find_facts
from chatmem.memory.pins import PinnedFact, find_pins

if TYPE_CHECKING:
    from chatmem.store import FactRecord


def one_to_forget(
    ref: str,
    facts: Sequence[FactRecord],
    pinned: Sequence[PinnedFact],
    *,
    narrow: str,
    owner: Callable[[PinnedFact], str] | None = None,
) -> FactRecord | PinnedFact | None:
    """The one fact or pin `ref` names (an id, a key, p3 or a pin's text); None when it
    names none. UsageError listing the candidates when it names more than one; `narrow`
    ends that message ("give an id or --session"), `owner` says whose each pin is."""
    matched = find_facts(facts, ref)
    pins = find_pins(pinned, ref)
    count = len(matched) + len(pins)
    if count == 0:
        return None
    if count > 1:
        if not pins:
            ids = ", ".join(str(f.id) for f in matched)
            raise UsageError(f"key {ref!r} names {count} facts (ids {ids}); {narrow}")
        named = [str(f.id) for f in matched] + [
            (p.ref or p.text) + (f" of {owner(p)}" if owner else "") for p in pins]
        raise UsageError(f"{ref!r} names {count} facts ({', '.join(named)}); {narrow}")
    return matched[0] if matched else pins[0]
