"""The day recalled messages were said, when it is not the day the input is said.

A message recalled days later may say "next Friday" or "the day after tomorrow":
without the day it was said, the model cannot tell which day that is. So each run of
recalled messages said on one earlier day opens with a line naming it (`said_line`:
`[2026-05-04 Monday]`, 9 tokens), sent above the first one's text; the stored message
is left as it is. The lines are counted in the recalled part's tokens, within its
budget: packing counts one as it keeps a day's first message (chatmem.memory.packing);
when they do not fit what was added after or cut since, the least relevant make room.

A day is the user's: the message's time read in the zone the request names
(`ContextRequest.zone`, the `timezone` setting or the system's; chatmem stamps UTC, and
a transcript's offset is only where the time was), "today" that of the input
(`ContextRequest.said_at`: a turn's when it is sent, a replayed one's its transcript time,
else the newest message's), the clock named times are read on (chatmem.memory.time_words):
a replayed conversation gets the same lines as it got then, told the same zone. The times
given here are already in that zone. Messages said today get no line, unless they follow
an earlier day's in the recalled part: that day's line would read as covering them too.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import date, datetime, tzinfo
from typing import TYPE_CHECKING

from chatmem.memory.context import Message, SaidDays
from chatmem.memory.day_stamps import opens_with_day
from chatmem.memory.packing import Ranked
from chatmem.memory.reasons import RecallRoute, RecallVerdict
from chatmem.timestamps import local_moment

if TYPE_CHECKING:
    from chatmem.memory.recall_sources import StoredRecall
    from chatmem.memory.state import SessionState

Stamped = Callable[[int, date], bool]
"""Whether the message at a position opens with the given day written out."""


class EarlierDays(dict[int, date | None]):
    """The day each position's message was said if before `today` (else None): a pool's
    read at once (`fill`), any other position's when first asked (`days_at`: StoredRecall's,
    the days in the user's zone, None where a time cannot be read)."""

    def __init__(self, days_at: Callable[[Sequence[int]], Mapping[int, date | None]],
                 today: date) -> None:
        super().__init__()
        self.days_at, self.today = days_at, today

    def fill(self, positions: Sequence[int]) -> None:
        days, today = self.days_at(positions), self.today
        for position in positions:
            day = days.get(position)
            self[position] = day if day is not None and day < today else None

    def __missing__(self, position: int) -> date | None:
        self.fill([position])
        return self[position]


def said_days(positions: Sequence[int], times: Mapping[int, date],
              today: date, stamped: Stamped | None = None) -> dict[int, date]:
    """Of `positions` (in conversation order), those that open a run said on one day, with
    that day: a day before `today`, or today after an earlier day's run. `times`: when
    each was said, a time or only its day. A message whose time cannot be read has no day,
    and ends a run. `stamped(position, day)`: whether that message opens with its day
    written out (chatmem.memory.day_stamps), when its run needs no line."""
    days: dict[int, date] = {}
    previous: date | None = None
    earlier = False  # a run of an earlier day came before
    for position in positions:
        moment = times.get(position)
        day = moment.date() if isinstance(moment, datetime) else moment
        if day is not None and day != previous and (day < today or earlier):
            earlier = True
            if stamped is None or not stamped(position, day):
                days[position] = day
        previous = day
    return days


def dated(kept: list[Ranked], times: Mapping[int, datetime], today: date, room: int,
          cost: Callable[[Ranked, date], int], held: Collection[int] = (),
          ) -> tuple[list[Ranked], dict[int, date]]:
    """The `kept` messages (in conversation order, the first a user's) that fit in `room`
    with their days' lines, and those days by position. `cost(r, day)`: the tokens of `r`
    sent below `day`'s line. The least relevant make room (the first is kept while another
    can go: a context never opens on a reply; those at `held` positions, brought by a
    better one, while others can); each one left out is marked so. A run whose first message
    opens with its day written out (chatmem.memory.day_stamps) needs no line."""
    texts = {r.position: r.text for r in kept}
    while kept:
        days = said_days([r.position for r in kept], times, today,
                         lambda position, day: opens_with_day(texts[position], day))
        costs = {r.position: cost(r, days[r.position]) for r in kept if r.position in days}
        used = sum(costs.get(r.position, r.tokens) for r in kept)
        if used <= room:
            for r in kept:
                r.tokens = costs.get(r.position, r.tokens)
            return kept, days
        # The least relevant goes; of equals the older, as packing keeps the fresher.
        spare = [r for r in kept[1:] if r.position not in held] or kept[1:] or kept
        least = min(spare, key=lambda r: (r.fused, r.position))
        least.kept, least.why = False, RecallVerdict.DAY_LINES
        kept = [r for r in kept if r is not least]
    return kept, {}


def redated(messages: Sequence[Message], said: SaidDays,
            cost: Callable[[Message], int]) -> tuple[Message, ...]:
    """Recalled `messages` (in conversation order) with the lines what is left of them
    calls for: a combination merges its members' recall and cuts it to its shared budget
    after each named the days, so a run's first message may be gone (the next one names
    the day), or the run before today's. `cost(m)`: the tokens of `m` as sent. A message
    whose time is not known (not stored, or unreadable) is taken as said on the day its
    member named, if it named one: that line stays while it still opens a run."""
    times: dict[int, date] = {}
    for i, m in enumerate(messages):
        if m.id is not None and m.id in said.times:
            times[i] = said.times[m.id]
        elif m.said_on is not None:
            times[i] = m.said_on
    days = said_days(range(len(messages)), times, said.today,
                     lambda i, day: opens_with_day(messages[i].content, day))
    return tuple(m if days.get(i) == m.said_on else with_day(m, days.get(i), cost)
                 for i, m in enumerate(messages))


def with_day(message: Message, day: date | None, cost: Callable[[Message], int]) -> Message:
    """`message` sent below `day`'s line (None: none), its tokens counted so."""
    dated = replace(message, said_on=day)
    return replace(dated, tokens=cost(dated))


def stored_times(state: SessionState, messages: Iterable[Message],
                 zone: tzinfo) -> dict[int, datetime]:
    """When the stored `messages` were said (by id; those whose time reads), in `zone`: a
    combination dates what every member recalled, not only what retrieval did. Read by
    their turns, one read per run of consecutive turns (a few messages a build)."""
    wanted = {m.id: m.turn for m in messages if m.id is not None and m.turn is not None}
    runs: list[list[int]] = []
    for n in sorted(set(wanted.values())):
        if runs and runs[-1][-1] == n - 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    found: dict[int, datetime] = {}
    for run in runs:
        for record in state.store.history.messages(state.session_id, run[0], run[-1]):
            moment = local_moment(record.created_at, zone) if record.id in wanted else None
            if moment is not None:
                found[record.id] = moment
    return found


def with_days(source: StoredRecall, kept: list[Ranked],
              message_at: Callable[[int], Message], room: int, zone: tzinfo,
              ) -> tuple[list[Ranked], dict[int, date], SaidDays | None]:
    """The kept messages that fit in `room` with the lines naming the earlier days they
    were said on (`dated`), those days by position, and when each
    kept one was said (for a combination to work the lines out again): days in the
    user's `zone`."""
    said = source.now() if kept else None
    if said is None:
        return kept, {}, None
    now = said.astimezone(zone)
    times = {p: t.astimezone(zone)
             for p, t in source.times_at([r.position for r in kept]).items()}
    said_at = SaidDays(now.date(), {r.key: times[r.position] for r in kept
                                    if r.position in times})
    if not times or min(times.values()).date() >= now.date():  # one zone: by wall time
        return kept, {}, said_at  # all said today: nothing to count again

    def cost(r: Ranked, day: date) -> int:
        return source.sent_tokens(replace(message_at(r.position), said_on=day))

    later = {r.position for r in kept if r.route is RecallRoute.LATER}
    kept, days = dated(kept, times, now.date(), room, cost, later)
    return kept, days, said_at
