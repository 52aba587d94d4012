"""A phone number a purge erases in every way it is written, and the forms it only reports.

People write one number many ways: +1 415 555 0134, (415) 555-0134, 415.555.0134,
+14155550134, １３８ ００１３ ８０００. A value that is a phone number (with its country
code and valid, or without one and valid in a region `unnamed_details` tries) is also
mentioned by any digit run that is the same number (phonenumbers: the same country code
and national number, a run without a country code read in the value's country), and by
nothing else: a purge must never erase another number. A run that may be the number and
may be another one is kept and reported (`Found.unsure`), as a spelling search reads alike
is: the number's end without its area code (555-0134), the number among digits it makes
another valid number with (415 555 0134 5, +41 55 550 13 45), the digits of a value given
without a country code written with one, or the number after another country's exit code
(0014155550134). Among other digits that make no number with it (at 10:30 415-555-0134, a
list 4155550134 4155550135) it is the number, after another number written with its +
too (+44 20 7946 0958 415 555 0134).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from chatmem import fts
from chatmem.text_caches import text_cache

if TYPE_CHECKING:
    from collections.abc import Iterable

    from phonenumbers import PhoneNumber

_GAP = r"[ \u00a0\u3000().\-/\u2010-\u2013\u2212\uff08\uff09\uff0d\uff0e]{1,3}"
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


@text_cache(maxsize=256)
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


class NumberForm(Enum):
    """How a run a purge kept as perhaps the number is written otherwise than the number."""

    PART = "part"
    """Its end alone (555-0134 of 415 555 0134)."""
    COUNTRY_CODE = "country code"
    """With a country code the value does not give (+86 138 0013 8000 for 138-0013-8000)."""
    MORE_DIGITS = "more digits"
    """After more digits: another country's exit code or number (0014155550134)."""
    DATE_ORDER = "date order"
    """A date read either way round (7/5/2023: 7 May or July 5; chatmem.privacy.date_forms)."""
    DATE_NO_YEAR = "date without a year"
    """A date without the year the value gives (5月7日 for 2023年5月7日: perhaps another year's)."""


def form_of(values: Iterable[str], written: str) -> NumberForm:
    """How `written`, a run `find` found unsure for one of `values`, differs from it."""
    digits = _ascii_digits(written)
    numbers = [n for n in map(number_of, values) if n is not None]
    if any(n.digits.endswith(digits) and digits != n.digits for n in numbers):
        return NumberForm.PART
    if written.lstrip().startswith(("+", "\uff0b")) and any(n.parsed is None for n in numbers):
        return NumberForm.COUNTRY_CODE
    return NumberForm.MORE_DIGITS


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
        # Groups after a whole number the + begins (+44 20 7946 0958 415 555 0134) are
        # tried as a run of their own; before it, only from the + on.
        rest = _after_first_number(written, before) if plus else 0
        verdicts = _verdicts(number, plus, written, before, rest)
        taken: set[int] = set()  # the groups of the parts found the number
        # The number written alone among other digits (at 10:30 415-555-0134, 4155550134
        # 4155550135) is erased; only when the digits around it make a valid number with it
        # (7 415 555 0134, +7 being Russia's) may they be another number.
        for at, last in sorted((span for span, verdict in verdicts.items() if verdict == "same"),
                               key=lambda span: (before[span[0]] - before[span[1] + 1], span)):
            if taken.intersection(range(at, last + 1)):
                continue
            taken.update(range(at, last + 1))
            bounds = (_start(text, run.start(), groups[at].start()), groups[last].end())
            (unsure if _among_another(number, plus and at == 0, written, before, at, last)
             else same).append(bounds)
        # What only may be the number (555-0134, 0014155550134): the longest from each start.
        at = 0
        while at < len(groups):
            if 0 < at < rest:
                at = rest
                continue
            longest = bisect_right(before, before[at] + _LONGEST) - 2
            for last in range(min(longest, len(groups) - 1), at - 1, -1):
                if verdicts.get((at, last)) != "unsure" or taken.intersection(
                        range(at, last + 1)):
                    continue
                unsure.append((_start(text, run.start(), groups[at].start()),
                               groups[last].end()))
                at = last
                break
            at += 1
    return Found(tuple(sorted(same)), tuple(sorted(unsure)))


def _start(text: str, run: int, group: int) -> int:
    """Where a part of a run starting at `group` begins: with the run's + or parenthesis,
    or the parenthesis opening its area code (12 (415) 555-0134)."""
    if group == run or text[run:group].strip("+\uff0b(\uff08") == "":
        return run
    return group - 1 if text[group - 1] in "(\uff08" else group


def _after_first_number(written: str, before: list[int]) -> int:
    """The first group of a run after a + that follows a valid number written from the +
    (4 of +44 20 7946 0958 415 555 0134); the run's length when none does."""
    for at in range(1, len(before) - 1):
        if before[at] > MAX_DIGITS:
            break
        if _valid("+" + written[:before[at]], None) is not None:
            return at
    return len(before) - 1


def _verdicts(number: Number, plus: bool, written: str, before: list[int],
              rest: int = 0) -> dict[tuple[int, int], str]:
    """Each part of a run (its first and last group) that is the number or may be it; a
    run after a + is read from its start and from group `rest` on."""
    verdicts: dict[tuple[int, int], str] = {}
    # After a country code (+44 415 555 0134) no part is the number of another country.
    for at in range(len(before) - 1):
        if plus and 0 < at < rest:
            continue
        longest = bisect_right(before, before[at] + _LONGEST) - 2
        for last in range(at, longest + 1):
            digits = written[before[at]:before[last + 1]]
            # Every form of the number, and every part it may be, ends as it does.
            if digits.endswith(number.digits[-4:]) and (
                    verdict := _compare(number, plus and at == 0, digits)):
                verdicts[at, last] = verdict
    return verdicts


def _among_another(number: Number, plus: bool, written: str, before: list[int],
                   at: int, last: int) -> bool:
    """Whether groups beside the number's part `at`..`last` of a run make with it a valid
    number other than it: read in the number's country, or as one written without its +
    (7 415 555 0134, 415 555 0134 5 as +41 55 550 13 45)."""
    import phonenumbers

    from chatmem.privacy.unnamed_details import PHONE_REGIONS

    # Only groups within a number's most digits of it; a run after a + from its start only.
    for first in range(bisect_left(before, before[last + 1] - _LONGEST), at + 1):
        for end in range(last, bisect_right(before, before[first] + _LONGEST) - 1):
            if (first, end) == (at, last):
                continue
            digits = written[before[first]:before[end + 1]]
            tries: list[tuple[str, str | None]] = [("+" + digits, None)]
            if not plus:
                tries += [(digits, region) for region in (
                    (number.region,) if number.region else PHONE_REGIONS)]
            for raw, region in tries:
                if (other := _valid(raw, region)) is not None and (
                        number.parsed is None or phonenumbers.is_number_match(
                            other, number.parsed) != phonenumbers.MatchType.EXACT_MATCH):
                    return True
    return False


@text_cache(maxsize=1024)
def _valid(raw: str, region: str | None) -> PhoneNumber | None:
    """`raw` read in `region` when it is a valid number (cached: a table repeats its numbers)."""
    import phonenumbers

    try:
        number = phonenumbers.parse(raw, region)
    except phonenumbers.NumberParseException:
        return None
    return number if phonenumbers.is_valid_number(number) else None


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
