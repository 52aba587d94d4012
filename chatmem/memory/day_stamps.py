"""Whether a message opens with the day it was said: a stamped transcript's own date.

Recall sends a line naming the day above each run of messages said on an earlier day
(chatmem.memory.recall_days), so "next Friday" in it can be read. A message whose text
opens with that very day written out in full (`(8 May 2023) Caroline: …`, `2023-05-08
13:56 bob: …`, `May 8, 2023 — …`, `2023年5月8日 小明：…`), as an imported, exported or
pasted chat log stamps each line, already tells the model: a line above it would say the
day twice, ~9 tokens a run that a recalled message could use. Only a whole date with its
year counts, opening the text (after brackets or a weekday's name, in its first
STAMP_WITHIN characters), and only when it is the day the message was said on: a date the
text mentions further on, a day and month without a year, a number
format that reads two ways (08/05/2023) or a relative word (yesterday) leave the line.
"""

from __future__ import annotations

import re
from datetime import date

from chatmem.lazy_patterns import lazy

STAMP_WITHIN = 40
"""Characters of a message's opening a stamp is looked for in."""

_MONTHS = {name: number for number, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
    ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
    ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
    ("december", "dec")), start=1) for name in names}
_MONTH = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"

_WEEKDAY = (r"(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?\.?,?\s+"
            r"|(?:星期|周|礼拜)[一二三四五六日天]\s*")
_STAMP = lazy(
    rf"[\W_]*(?:{_WEEKDAY})?(?:"
    r"(?P<iy>\d{4})-(?P<im>\d{2})-(?P<id>\d{2})(?![\d-])"
    rf"|(?P<dd>{_DAY})\s+(?P<dm>{_MONTH}),?\s+(?P<dy>\d{{4}})(?!\d)"
    rf"|(?P<mm>{_MONTH})\s+(?P<md>{_DAY}),?\s+(?P<my>\d{{4}})(?!\d)"
    r"|(?P<zy>\d{4})\s*年\s*(?P<zm>\d{1,2})\s*月\s*(?P<zd>\d{1,2})\s*[日号])",
    re.IGNORECASE)


def _number(text: str) -> int:
    return int(text.rstrip("stndrhSTNDRH"))


def stamped_day(text: str) -> date | None:
    """The day a whole date opening `text` names, or None."""
    found = _STAMP.match(text[:STAMP_WITHIN])
    if found is None:
        return None
    g = found.groupdict()
    try:
        if g["iy"]:
            return date(int(g["iy"]), int(g["im"]), int(g["id"]))
        if g["dy"]:
            return date(int(g["dy"]), _MONTHS[g["dm"].rstrip(".").casefold()],
                        _number(g["dd"]))
        if g["my"]:
            return date(int(g["my"]), _MONTHS[g["mm"].rstrip(".").casefold()],
                        _number(g["md"]))
        return date(int(g["zy"]), int(g["zm"]), int(g["zd"]))
    except ValueError:  # 31 February: no day, no stamp
        return None


def opens_with_day(text: str | None, day: date) -> bool:
    """Whether `text` opens with `day` written out as a whole date (see the module)."""
    return text is not None and stamped_day(text) == day
