"""A phone number a purge erases in every way it is written, and the forms it only reports.

People write one number many ways: +1 415 555 0134, (415) 555-0134, 415.555.0134,
+14155550134, １３８ ００１３ ８０００. A value that is a phone number (with its country
code and valid, or without one and valid in a region `unnamed_details` tries) is also
mentioned by any digit run that is the same number (phonenumbers: the same country code
and national number, a run without a country code read in the value's country), and by
nothing else: a purge must never erase another number. A run that may be the number and
may be another one is kept and reported (`Found.unsure`), as a spelling search reads alike
is: the number's end without its area code (555-0134), a longer run it is only part of
(415 555 0134 5), the digits of a value given without a country code written with one, or
the number after another country's exit code (0014155550134).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from chatmem import fts

if TYPE_CHECKING:
    from phonenumbers import PhoneNumber

_GAP = r"[ \u00a0\u3000().\-/\u2010\u2011\u2013\uff08\uff09\uff0d\uff0e]{1,3}"
"""What may stand between two digit groups of one number: a space, a dash, a dot, a slash,
a parenthesis, in ASCII or full width, up to three of them (`) `, ` - `); never a newline."""
_RUN = re.compile(rf"[+\uff0b]?[(\uff08]?\d+(?:{_GAP}\d+)*")
_GROUP = re.compile(r"\d+")
_UNSPACED = re.compile(rf"[{fts.CJK}\u1100-\u11ff\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff]")
"""Scripts written without spaces: a number may stand right beside their words."""
_SHAPE = re.compile(rf"[+\uff0b]?[(\uff08]?\d+(?:{_GAP}\d+)*[)\uff09]?")
MIN_DIGITS, MAX_DIGITS = 7, 15
_LONGEST = MAX_DIGITS + 3
"""The most digits a number is written with: E.164's 15 after an exit code (00, 011)."""
_SHORTEST_PART = 6
"""Fewer digits of a number's end (0134, 55 0134) are too common to report as perhaps it."""


@dataclass(frozen=True)
class Number:
    """A value read as a phone number."""

    digits: str
    """Its national number (without country code and trunk prefix), or, given without a
    country code, its digits as written."""
    parsed: PhoneNumber | None
    """The number, when the value gives its country code."""
    region: str | None
    """Where a run without a country code is read (the number's country)."""


@dataclass(frozen=True)
class Found:
    """Where a text writes a number: `same` (erased) and `unsure` (kept, shown)."""

    same: tuple[tuple[int, int], ...] = ()
    unsure: tuple[tuple[int, int], ...] = ()


def _ascii_digits(text: str) -> str:
    return "".join(str(unicodedata.decimal(ch)) for ch in text if ch.isdecimal())


@lru_cache(maxsize=256)
def number_of(value: str) -> Number | None:
    """`value` as a phone number, or None when it is not one (a date, too few digits, words)."""
    import phonenumbers

    from chatmem.privacy.secret_names import DATE
    from chatmem.privacy.unnamed_details import PHONE_REGIONS

    value = unicodedata.normalize("NFKC", value.strip())
    if not _SHAPE.fullmatch(value) or re.fullmatch(DATE, value):
        return None
    digits = _ascii_digits(value)
    if not MIN_DIGITS <= len(digits) <= MAX_DIGITS:
        return None
    if value.startswith("+"):
        try:
            parsed = phonenumbers.parse("+" + digits, None)
        except phonenumbers.NumberParseException:
            return None
        if not phonenumbers.is_valid_number(parsed):
            return None
        region = phonenumbers.region_code_for_number(parsed)
        return Number(phonenumbers.national_significant_number(parsed), parsed,
                      region if region and region.isalpha() and region != "ZZ" else None)
    for region in PHONE_REGIONS:
        try:
            if phonenumbers.is_valid_number(phonenumbers.parse(digits, region)):
                return Number(digits, None, None)
        except phonenumbers.NumberParseException:
            continue
    return None


def needle(value: str) -> str | None:
    """What every run of ASCII digits writing the number holds: its last two digits (no
    layout parts them); None when `value` is no phone number."""
    number = number_of(value)
    return None if number is None else number.digits[-2:]


def last_part(value: str) -> str | None:
    """The last group of digits `value`'s number is written with (0134 of (415) 555-0134):
    what `logs -q` finds every form by, those a purge keeps too; None for no phone number."""
    import phonenumbers

    number = number_of(value)
    if number is None:
        return None
    shown = value if number.parsed is None else phonenumbers.format_number(
        number.parsed, phonenumbers.PhoneNumberFormat.NATIONAL)
    return _GROUP.findall(_ascii_digits_kept_apart(shown))[-1]


def _ascii_digits_kept_apart(text: str) -> str:
    return "".join(str(unicodedata.decimal(ch)) if ch.isdecimal() else " " for ch in text)


def find(text: str, value: str) -> Found:
    """Where `text` writes the number `value` is (`same`), and runs that may be it (`unsure`)."""
    number = number_of(value)
    if number is None or not any(ch.isdecimal() for ch in text) or (
            text.isascii() and number.digits[-2:] not in text):
        return Found()
    same: list[tuple[int, int]] = []
    unsure: list[tuple[int, int]] = []
    for run in _RUN.finditer(text):
        if _glued(text, run.start(), run.end()):
            continue
        groups = list(_GROUP.finditer(text, run.start(), run.end()))
        # Digits before each group: a part of more digits than a number has is not tried,
        # so a long table of numbers costs its length, not its square.
        before = [0]
        for group in groups:
            before.append(before[-1] + len(group.group()))
        written = _ascii_digits(run.group())
        plus = text[run.start()] in "+\uff0b"
        if not plus and len(groups) > 1 and before[-1] <= _LONGEST \
                and _another(number, written):
            continue
        at = 0
        # After a country code (+44 415 555 0134) no part is the number of another country.
        while at < (1 if plus else len(groups)):
            longest = bisect_right(before, before[at] + _LONGEST) - 2
            for last in range(min(longest, len(groups) - 1), at - 1, -1):
                start = run.start() if at == 0 else groups[at].start()
                end = groups[last].end()
                digits = written[before[at]:before[last + 1]]
                # Every form of the number, and every part it may be, ends as it does.
                verdict = _compare(number, plus and at == 0, digits) \
                    if digits.endswith(number.digits[-4:]) else ""
                whole = at == 0 and last == len(groups) - 1
                if verdict == "same" and whole:
                    same.append((start, end))
                elif verdict:
                    unsure.append((start, end))
                if verdict:
                    at = last
                    break
            at += 1
    return Found(tuple(same), tuple(unsure))


def _glued(text: str, start: int, end: int) -> bool:
    """Whether a run of digits is part of a word or a code (A4155550134, 4155550134x); not
    beside a script written without spaces (电话是13800138000)."""
    before = text[start - 1] if start else ""
    after = text[end] if end < len(text) else ""
    return any(ch and (ch == "_" or unicodedata.category(ch)[0] in "LMN")
               and not _UNSPACED.match(ch) for ch in (before, after))


def _another(number: Number, digits: str) -> bool:
    """Whether a whole run without a country code is a valid phone number of the number's
    country other than it: none of its parts is reported as perhaps the number."""
    import phonenumbers

    if number.parsed is None or number.region is None:
        return False
    try:
        written = phonenumbers.parse(digits, number.region)
    except phonenumbers.NumberParseException:
        return False
    return phonenumbers.is_valid_number(written) and phonenumbers.is_number_match(
        written, number.parsed) != phonenumbers.MatchType.EXACT_MATCH


def _compare(number: Number, plus: bool, digits: str) -> str:
    """"same" when `digits` (after a + when `plus`) is the number, "unsure" when it may be,
    "" when it is not."""
    import phonenumbers

    if len(digits) < _SHORTEST_PART or len(digits) > _LONGEST:
        return ""
    if number.parsed is None:  # given without a country code: only its digits are known
        if not plus:
            if digits == number.digits:
                return "same"
            return "unsure" if _part_of(digits, number.digits) else ""
        try:
            written = phonenumbers.parse("+" + digits, None)
        except phonenumbers.NumberParseException:
            return ""
        national = phonenumbers.national_significant_number(written)
        return "unsure" if national in (number.digits, number.digits.lstrip("0")) else ""
    if plus or number.region is not None:
        try:
            again = phonenumbers.parse(("+" if plus else "") + digits,
                                       None if plus else number.region)
        except phonenumbers.NumberParseException:
            again = None
        if again is not None and phonenumbers.is_number_match(
                again, number.parsed) == phonenumbers.MatchType.EXACT_MATCH:
            return "same"
    return "unsure" if not plus and _part_of(digits, number.digits) else ""


def _part_of(digits: str, own: str) -> bool:
    """Whether `digits` ends like `own` without being it: its end alone (555 0134 of
    4155550134), or it after more digits (an exit code of another country, 0014155550134)."""
    return digits != own and (own.endswith(digits) or digits.endswith(own))
