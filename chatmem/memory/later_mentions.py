"""Later mentions: what the user said later about a recalled statement of theirs.

Recall ranks each message on its own, so it can send "I eat a lot of meat, steak is my
favourite" and leave out "I no longer eat meat, I went vegetarian last month", said
later: the first matches the question better, and the model then answers from what
is no longer true. So for the best recalled user messages (retrieval's `later`), the
user's latest later message holding their rarest words comes too, as its own route
(RecallRoute.LATER), the least relevant messages making room for it.

The earlier message's words are searched in the words index as recall searches the
input (stemmed, CJK as bigrams: no model). A later message counts when it holds two
of its rare words (one, when it has one): words at most `RARE` messages of the
conversation say, so a later message sharing its common words (a name said all the
time, `thanks`) does not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, is_not
from typing import TYPE_CHECKING

from chatmem import fts
from chatmem.memory.packing import Ranked
from chatmem.memory.reasons import RecallRoute, RecallVerdict

if TYPE_CHECKING:
    from chatmem.store.recall import WordMatches

RARE = 5
"""A word said in at most this many messages of the conversation is one of its rare ones."""
READS = 3
"""Later messages read at most per earlier message, to find the user's holding its rare
words (the index does not know who said a message, nor which of its words it holds)."""

# Keys read in C: a lambda or a generator here was a Python call a candidate, each build
# (~430 of a retrieval build's ~3,100 calls went to this module).
_RELEVANCE = attrgetter("fused", "position")
_POSITION = attrgetter("position")
_TOKENS = attrgetter("tokens")


@dataclass(frozen=True)
class Lookup:
    """What finding later mentions reads: `search(text)` the earlier messages holding the
    words of `text` at most RARE messages hold (WordMatches.entries: those words);
    `text_at` and `ranked_at` a message outside the ranked candidates."""

    search: Callable[[str], WordMatches]
    text_at: Callable[[int], str]
    ranked_at: Callable[[int], Ranked]


def pull_in(kept: list[Ranked], ranked: list[Ranked], lookup: Lookup, room: int,
            limit: int = 0, *, sources: int,
            lines: Callable[[list[Ranked]], int] = lambda kept: 0) -> list[Ranked]:
    """`kept` (in conversation order, the first a user's) with the later mentions of its
    best `sources` user messages (a search of the words index each) that fit in `room`
    (and `limit` messages, if not 0), in conversation order. A pulled message is marked
    kept by RecallRoute.LATER and added to `ranked` if it was not there; those that made
    room for it are marked so. The first kept message, the sources and what was pulled
    are never the ones making room, nor the reply to what was pulled, nor a message more
    relevant than the source. `lines(messages)`: the tokens of the lines naming the days
    `messages` were said (chatmem.memory.recall_days), counted in `room` too."""
    # Most relevant first, the later first among equals (positions differ: no ties).
    users = sorted([r for r in kept if r.role == "user"], key=_RELEVANCE,
                   reverse=True)[:sources]
    if not users:
        return kept
    held = {r.position for r in (*kept[:1], *users)}
    said = {r.said for r in kept}
    for source in users:
        matches = lookup.search(lookup.text_at(source.position))
        later = _latest_mention(source, set(matches.entries), matches.scores, ranked, lookup)
        if later is None or later.kept or later.said in said:
            continue
        held.add(later.position + 1)  # its reply, if recalled, stays beside it
        freed = _room_for(later, source, kept, held, room, limit, lines)
        if freed is None:
            continue
        for other in freed:
            other.kept, other.why = False, RecallVerdict.LATER_ROOM
        if all(map(is_not, ranked, repeat(later))):
            ranked.append(later)
        later.kept, later.why, later.route = True, RecallVerdict.KEPT, RecallRoute.LATER
        held.add(later.position)
        said.add(later.said)
        kept = sorted([r for r in (*kept, later) if r.kept], key=_POSITION)
    return kept


def _latest_mention(source: Ranked, rare: set[str], scores: Mapping[int, float],
                    ranked: list[Ranked], lookup: Lookup) -> Ranked | None:
    """The user's latest message after `source` holding two of its `rare` words (one, if
    it has one), of the `READS` later messages that match those words best."""
    if not rare:
        return None
    needed = min(2, len(rare))
    by_position = {r.position: r for r in ranked}
    # Best first, equal scores in the search's order (a stable sort, reversed stably).
    after = source.position
    best = sorted([p for p in scores if p > after], key=scores.__getitem__, reverse=True)
    for position in sorted(best[:READS], reverse=True):
        found = by_position.get(position) or lookup.ranked_at(position)
        if found.role == "user" and len(rare.intersection(
                fts.search_terms(lookup.text_at(position)))) >= needed:
            return found
    return None


def _room_for(later: Ranked, source: Ranked, kept: list[Ranked], held: set[int], room: int,
              limit: int, lines: Callable[[list[Ranked]], int]) -> list[Ranked] | None:
    """The kept messages to leave out for `later` to fit with the lines of their days (the
    least relevant first, less relevant than `source`), or None when it cannot."""
    left = [*kept, later]
    used, count = sum(map(_TOKENS, left)) + lines(left), len(kept)
    freed: list[Ranked] = []
    spare = sorted([r for r in kept if r.position not in held and r.fused < source.fused],
                   key=_RELEVANCE)
    for other in spare:
        if used <= room and not (limit and count >= limit):
            break
        freed.append(other)
        left = [r for r in left if r is not other]
        used, count = sum(map(_TOKENS, left)) + lines(left), count - 1
    if used > room or (limit and count >= limit):
        return None
    return freed
