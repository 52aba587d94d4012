"""Times as chatmem stores and reads them: one format, one parser, one rule for a naive time.

Stored: ISO 8601 in UTC to the millisecond (`2026-01-05T08:00:00.000+00:00`), written by
`stamp`. Read: any ISO 8601 date and time Python's `datetime.fromisoformat` accepts (a
trailing `Z` included), by `parse_time`.

The rule for a time without a zone (only an imported transcript's `ts` can be one; chatmem
never writes one): `parse_time` reads it as UTC. Where a guessed zone would mislead, a caller
asks `has_zone` first (a sitting's pause is not drawn from a guess).

A date without a time (`2026-03-07`) names a day, not an instant, in no zone: the stored `ts`
stays as the transcript gave it (an export gives it back) and means that date on every machine,
after a move and in a replay. Two readings of it:
- `local_moment` (the user's days: the lines naming the day a recalled message was said, the
  times an input names, inspect's said-at): noon of that date in the user's zone, so it is that
  date in every zone. Any fixed instant is the day before or after somewhere: midnight UTC
  west of UTC ("what did I do on March 8?" found nothing said on the 8th), noon UTC from
  UTC+12 on (New Zealand's summer, Fiji, Tonga, Kiritimati).
- `parse_time` / `dated_time` (an instant, for ordering and lengths of time that no zone
  enters: a transcript's order, retention, a sitting's pause): noon UTC of that date.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta, tzinfo

LONGEST_DURATION = timedelta(days=365_000)
"""A thousand years: any time chatmem stores, plus this, stays within the calendar."""
LONGEST_DAYS = LONGEST_DURATION.days
"""The longest retention, fact life or other length of time chatmem keeps, in days."""
MIDDAY = time(12, tzinfo=UTC)
"""The instant a date alone (`2026-03-07`) is read at: see the module's docstring."""
EARLIEST = datetime(2, 1, 1, tzinfo=UTC)
LATEST = datetime(9998, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
"""The times chatmem dates things by: within them, a time moves into any zone (a day either
way at most) and stays in the calendar's years 1–9999. Year 1 and 9999 (an exporter's zero
time, a "never" sentinel) do not: in New York 0001-01-01T00:00Z is before the calendar."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def stamp(moment: datetime) -> str:
    """How times are stored: ISO 8601 in UTC, to the millisecond."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def stamp_seconds(moment: datetime) -> str:
    """How times are shown and exported (an expiry, an archive's date): `stamp` to the second."""
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def now() -> str:
    """The stored form of the current time."""
    return stamp(utc_now())


def parse_time(text: str) -> datetime:
    """An ISO 8601 time as an aware datetime; one without a zone is UTC, a date alone its
    noon UTC.

    Raises ValueError when `text` is not an ISO 8601 date (and time).
    """
    if is_date(text):
        return datetime.combine(date.fromisoformat(text), MIDDAY)
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def in_every_zone(moment: datetime) -> bool:
    """Whether `moment` (aware) can be shown in any zone: between EARLIEST and LATEST."""
    return EARLIEST <= moment <= LATEST


def dated_time(text: str | None) -> datetime | None:
    """A stored time as chatmem dates things by (`parse_time`); None, undated, for one that
    does not read or lies outside EARLIEST–LATEST (an exporter's zero time, which an import
    keeps as written, warning once): every conversion of it into the user's zone would
    overflow."""
    if not text:
        return None
    try:
        moment = parse_time(text)
    except ValueError:
        return None
    return moment if in_every_zone(moment) else None


def local_moment(text: str | None, zone: tzinfo) -> datetime | None:
    """A stored time in the user's `zone` (None: undated, as `dated_time`); a date alone
    is noon of that date in `zone`, that date whatever the zone (see the module's docstring)."""
    moment = dated_time(text)
    if moment is None or text is None:
        return None
    if is_date(text):
        return datetime.combine(moment.date(), time(12), tzinfo=zone)
    return moment.astimezone(zone)


def local_moments(texts: Iterable[str | None], zone: tzinfo) -> list[datetime | None]:
    """`local_moment` of each of `texts`, the same values in one call: recall reads the
    times of a build's new candidates (some hundred in a session's first turns), and the
    four calls a time took through dated_time were most of what a first read cost."""
    moments: list[datetime | None] = []
    for text in texts:
        if not text:
            moments.append(None)
            continue
        try:
            day = date.fromisoformat(text)  # a date alone (is_date)
        except ValueError:
            try:
                moment = datetime.fromisoformat(text)
            except ValueError:
                moments.append(None)
                continue
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            moments.append(moment.astimezone(zone) if EARLIEST <= moment <= LATEST else None)
            continue
        noon = datetime.combine(day, MIDDAY)
        moments.append(datetime.combine(day, time(12), tzinfo=zone)
                       if EARLIEST <= noon <= LATEST else None)
    return moments


def is_date(text: str) -> bool:
    """Whether `text` is an ISO 8601 date alone (`2026-03-07`), with no time of day."""
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def has_zone(text: str) -> bool:
    """Whether an ISO 8601 time names its zone (False for one that cannot be read)."""
    try:
        return datetime.fromisoformat(text).tzinfo is not None
    except ValueError:
        return False


def is_time(text: str) -> bool:
    """Whether `parse_time` reads `text`."""
    try:
        parse_time(text)
    except ValueError:
        return False
    return True
