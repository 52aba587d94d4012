"""Whether a fact's value is what the user said, in the forms a helper model writes it.

A helper copies a value and tidies it: "Dr Smith" becomes "Dr. Smith", "O’Brien"
"O'Brien", "three kids" "3", "两个孩子" "2", "cats and dogs" "cats, dogs". Each form here
keeps every word and number the user typed and adds none, so a value the user never
said (a city guessed from a country, a translated name) still fails.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from chatmem import fts
from chatmem.lazy_patterns import lazy
from chatmem.memory import anchors
from chatmem.text import CJK_LETTERS
from chatmem.text_caches import text_cache

# Quotes and end punctuation are the helper's framing ("Lisbon." for "in Lisbon").
FRAMING = " \t.,;:!?\"'`“”‘’「」『』。，；：！？、"
_EN_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
             "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
             "seventeen", "eighteen", "nineteen"]
_EN_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
            "eighty": 80, "ninety": 90}
_EN_ONES = "|".join(_EN_UNITS[1:10])
_EN_NUMBER = lazy(
    rf"\b(?:(?P<tens>{'|'.join(_EN_TENS)})(?:[ -](?P<ones>{_EN_ONES}))?"
    rf"|(?P<unit>{'|'.join(sorted(_EN_UNITS, key=len, reverse=True))}))\b")
_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5,
              "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000}
_ZH_NUMBER = lazy("[零〇一二两三四五六七八九十百千万]+")
# 1,000, 1_000 and 1 000 (a no-break or thin space) are 1000: a separator between a digit
# and three more. A plain space is not one: "in 2023 100 people" holds no 2023100.
_GROUPED = lazy(r"(?<=\d)[,_'\u00a0\u202f](?=\d{3}(?!\d))")
_CJK_SPACE = lazy(rf" (?=[{CJK_LETTERS}])|(?<=[{CJK_LETTERS}]) ")
_LIST = lazy(r"\s*(?:[,;/&、，；]|\band\b|和|及|与)\s*")
# A title before a name (Dr. Smith), or after it in Chinese (王先生): said when the text
# holds the title as well as the name.
_TITLE_BEFORE = lazy(r"^(?:mr|mrs|ms|mx|miss|dr|prof|sir|madam) (?=\S)")
_TITLE_AFTER = lazy("(?<=.)(?:先生|女士|小姐|老师|医生|博士|教授)$")


def said_in(value: str, texts: Sequence[str]) -> bool:
    """Whether one of `texts` holds `value` in a form `value` may take (width, case,
    spacing, punctuation, digit grouping, numbers in words or digits, a list's joiners,
    a title the same text gives)."""
    bare = _normal(value.strip(FRAMING)) or _normal(value)
    whole = _Whole(bare)
    return any(whole.search(_normal(t)) for t in texts) or _in_forms(value, texts)


def key_named(key: str, texts: Sequence[str]) -> bool:
    """Whether one of `texts` says a word of a fact's `key` ("city" of "home city", 城市):
    who in a batch spoke of the fact a retraction forgets."""
    return any(said_in(word, texts) for word in re.split(r"[\s_-]+", key)
               if len(word) > 1 or not word.isascii())


@text_cache(maxsize=256)  # each of a batch's messages is asked once a value
def _normal(text: str) -> str:
    """`text` as a value is compared: folded as search folds it (張偉 is 张伟, 臺北 台北,
    Zoë Zoe: a helper writing the user's name in simplified Chinese wrote what was said),
    then width, case and spacing aside."""
    return anchors.normal(fts.folded(text))


class _Whole:
    """`part` where it is not a piece of a longer number or word: the 4 of "14 cats", the 3
    of "I am 30", the Al of "Alice" are not said. A number may touch a word ("30" in
    "30yo"), and Chinese runs its words together: its edges touch anything. One rule for
    the text as typed and for its forms (_holds).

    Found with str.find and its edges checked one character each: a pattern compiled per
    value (its letter class holds every CJK range) cost ~1 ms, once per fact value a batch
    checks, most of a long catch-up's extraction."""

    __slots__ = ("after", "before", "part")

    def __init__(self, part: str) -> None:
        self.part = part
        self.before, self.after = _touching(part[:1]), _touching(part[-1:])

    def search(self, text: str) -> bool:
        part, before, after = self.part, self.before, self.after
        start = text.find(part)
        while start != -1:
            end = start + len(part)
            if not ((before and start and before.fullmatch(text[start - 1]))
                    or (after and end < len(text) and after.fullmatch(text[end]))):
                return True
            start = text.find(part, start + 1)
        return False


_LETTER = rf"[^\W\d_{CJK_LETTERS}]"
"""A letter of a script that spaces its words."""
_A_LETTER, _A_DIGIT = lazy(_LETTER), lazy(r"\d")


def _touching(edge: str) -> re.Pattern[str] | None:
    """What a value's first or last character may not touch in the text: a digit another
    digit, a letter of a spaced script another such letter; else nothing."""
    if edge.isdigit():
        return _A_DIGIT
    return _A_LETTER if _A_LETTER.fullmatch(edge) else None


def _in_forms(value: str, texts: Sequence[str]) -> bool:
    # Word by word: a form is matched whole (the 1 of 100, the h of hour are not said).
    forms = [_forms(t) for t in texts]
    wanted = _forms(value)
    if any(_holds(f, w) for text in forms for w, f in zip(wanted, text, strict=True)):
        return True
    parts = [p for p in _LIST.split(_normal(value)) if p.strip(FRAMING)]
    if len(parts) > 1 and all(_in_forms(p, texts) for p in parts):
        return True
    return _titled(wanted[0], forms)


def _titled(value: str, forms: Sequence[tuple[str, str]]) -> bool:
    for title in (_TITLE_BEFORE, _TITLE_AFTER):
        if m := title.search(value):
            name = (value[m.end():] if title is _TITLE_BEFORE else value[:m.start()]).strip()
            word = m.group().strip()
            return any(_holds(f, name) and _holds(f, word) for f, _ in forms)
    return False


def _holds(text: str, part: str) -> bool:
    """Whether `text` holds `part` not inside a longer word or number (_Whole)."""
    return bool(part) and _Whole(part).search(text)


_NUMBER_EDGE = lazy(rf"(?<=\d) (?={_LETTER})|(?<={_LETTER}) (?=\d)")
"""A space between a number and a word: "180cm" is "180 cm", "9 am" "9am", "ORD-7731"
"ORD7731", as a helper writes either for the other."""


@text_cache(maxsize=256)  # a batch's messages, asked once a value: few, and maybe long
def _forms(text: str) -> tuple[str, str]:
    """`text` as words (punctuation as spaces), and those words with numbers as digits;
    in both, a number and a word beside it are one (_NUMBER_EDGE)."""
    words = _words(_normal(_GROUPED.sub("", text)))  # before spaces are folded
    # Joined after _digits reads its words: "three 4" keeps its "three".
    return _NUMBER_EDGE.sub("", words), _NUMBER_EDGE.sub("", _digits(words))


def _words(text: str) -> str:
    spaced = "".join(" " if unicodedata.category(c)[0] in "PZ" else c for c in text)
    return _CJK_SPACE.sub("", " ".join(spaced.split()))


def _digits(text: str) -> str:
    text = _EN_NUMBER.sub(_english, text)
    return _ZH_NUMBER.sub(lambda m: _zh_digits(m.group()), text)


def _zh_digits(run: str) -> str:
    """A run of Chinese numerals in digits, or as it is when it is no number. A number with a
    unit then 一 is the number and "a" (三百五一个月: 350 a month, 两千五一晚), read whole it
    is none; a run of digits alone stays one (一二 is no 1 and 二)."""
    if (n := zh_value(run)) is not None:
        return str(n)
    if run.endswith("一") and any(u in run for u in "十百千万") \
            and (n := zh_value(run[:-1])) is not None:
        return f"{n}一"
    return run


_EN_NUMBER_ANY_CASE = lazy(_EN_NUMBER.pattern, re.IGNORECASE)
_DIGITS_GROUPED = lazy(r"(?<![\d.,])\d{1,3}(?:[,_'\u00a0\u202f]\d{3})+(?![\d.,]\d)")


def written_otherwise(value: str, text: str) -> list[str]:
    """The numbers of `value` as `text` writes them otherwise: 一万五 for 15000, twenty-five
    for 25, 15,000 for 15000 (a form `said_in` took for the value). A purge looks for these
    as well as the value in the message the fact was read from: erasing 15000 alone would
    leave what the user typed. A number of one digit has none: a purge does not look for
    the value 3 at all (too short to search out), nor then for three. A date has none
    either: its forms are a month and a day together (privacy.date_forms); the 十二 of
    十二月三日 read as the number 12 had a purge of a birthday erase every 12 and 十二."""
    from chatmem.privacy.date_forms import date_of

    if date_of(value) is not None:
        return []
    numbers = {n for n in re.findall(r"\d+", _forms(value)[1]) if len(n.lstrip("0")) > 1}
    if not numbers:
        return []
    found = []
    for m in _ZH_NUMBER.finditer(text):
        run = m.group()
        n = zh_value(run)
        if n is None and run.endswith("一"):  # 一万五一个月: 15000 a month
            run = run[:-1]
            n = zh_value(run)
        if n is not None and str(n) in numbers:
            found.append(run)
    found += [m.group() for m in _EN_NUMBER_ANY_CASE.finditer(text)
              if _EN_NUMBER.sub(_english, m.group().lower()) in numbers]
    found += [m.group() for m in _DIGITS_GROUPED.finditer(text)
              if _GROUPED.sub("", m.group()) in numbers]
    return [f for f in dict.fromkeys(found) if f != value]


def _english(m: re.Match[str]) -> str:
    if m["unit"]:
        return str(_EN_UNITS.index(m["unit"]))
    return str(_EN_TENS[m["tens"]] + (_EN_UNITS.index(m["ones"]) if m["ones"] else 0))


def zh_value(text: str) -> int | None:
    """一百二十, 两千零五, 三万, 十二, 五, 两千五 (2500): a number in Chinese numerals, or None."""
    # `place`: what a last digit counts, a tenth of the unit before it, as people say them
    # (两千五 is 2,500, 一万五 15,000, 三百五 350), unless a 零 stands between (两千零五).
    total, section, digit, place = 0, 0, None, 1
    for c in text:
        if c in _ZH_DIGITS:
            if digit is not None:
                return None  # 一二 is no number (digit by digit is a year or an id)
            digit = _ZH_DIGITS[c] or None
            place = place if digit else 1
        elif c in _ZH_UNITS:
            section += (1 if digit is None else digit) * _ZH_UNITS[c]
            digit, place = None, _ZH_UNITS[c] // 10
        else:  # 万
            total = (total + section + (digit or 0) * place) * 10_000
            section, digit, place = 0, None, 1_000
    return total + section + (digit or 0) * place
