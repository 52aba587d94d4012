"""An amount a purge erases in every way it is written: 15000 as 15,000, 15 000, fifteen
thousand, 15k, 一万五千, 一万五, 1.5万 and 壹万伍仟; 100000000 as 1亿 and 一亿; €900 as
900 euros, EUR 900 and 九百欧元; 3 kids as three kids.

A value is an amount when it is one number (in digits, English words or Chinese numerals,
with 万, 亿, 千 or thousand or k after it), perhaps with a currency before it, and perhaps
words after it (a currency, or what it counts). It is mentioned where a text writes a
number of the same value, standing whole (the 1500 of 15000 is none, nor is a number of
twenty-five's words alone), with the same currency in any of its names, or the same
words after it. A number of one digit alone is no mention (3 is too short to search out,
so "three" is too); with words after it ("3 kids") it is.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from chatmem.text_caches import text_cache

_EN_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
             "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
             "seventeen", "eighteen", "nineteen"]
_EN_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_EN_SCALES = {"thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}
_EN_WORD = "|".join(sorted([*_EN_UNITS, *_EN_TENS, "hundred", *_EN_SCALES],
                           key=len, reverse=True))
_EN_RUN = re.compile(
    rf"\b(?:a[ -]+(?=(?:hundred|{'|'.join(_EN_SCALES)})\b))?"  # a hundred, a thousand
    rf"(?:{_EN_WORD})(?:(?:[ -]+|[ -]+and[ -]+)(?:{_EN_WORD}))*\b", re.IGNORECASE)
# The numerals, and the capital ones of cheques and receipts (壹万伍仟元).
_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "壹": 1, "二": 2, "两": 2, "贰": 2, "貳": 2,
              "三": 3, "叁": 3, "參": 3, "四": 4, "肆": 4, "五": 5, "伍": 5, "六": 6, "陆": 6,
              "陸": 6, "七": 7, "柒": 7, "八": 8, "捌": 8, "九": 9, "玖": 9}
_ZH_UNITS = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}
_ZH_WAN, _ZH_YI = "万萬", "亿億"
_ZH_NUMERALS = "".join(_ZH_DIGITS)
_ZH_SCALES = "".join(_ZH_UNITS) + _ZH_WAN + _ZH_YI
_DIGITS = r"\d+(?:\.\d+)?"
# A plain space groups digits too (15 000, as in French and SI writing), not before a
# group that runs on (15 0000).
_GROUPED = r"\d{1,3}(?:[,_'\u00a0\u202f]\d{3})+(?:\.\d+)?|\d{1,3}(?: \d{3}(?!\d))+(?:\.\d+)?"
# A number in digits (grouped or not), with a scale after it; or a run of Chinese numerals
# and digits with 十百千万亿 among them (1万5, 1.5万, 两千五, 1亿). The Chinese part opens
# after the digits, takes each run of digits whole and has at most _ZH_ITEMS pieces: read
# as any split of a run, a run of 26 digits and ",1" made every purge of an amount
# take minutes (the splits are exponential), and a line of "1万11万…" was quadratic.
_ZH_ITEMS = 32
_DIGIT_RUN = re.compile(
    rf"(?<![\d.,])(?P<n>{_GROUPED}|{_DIGITS})"
    rf"(?:(?P<zh>(?!\d)(?:[{_ZH_SCALES}]|[{_ZH_NUMERALS}]|(?>{_DIGITS})){{0,{_ZH_ITEMS}}}"
    rf"[{_ZH_SCALES}](?:[{_ZH_NUMERALS}]|\d)?)"
    r"|\s?(?P<scale>thousand|million|billion|[kK])\b)?(?![\d]|[.,]\d)")
_ZH_RUN = re.compile(f"[{_ZH_NUMERALS}{_ZH_SCALES}]+")
_CURRENCIES: dict[str, frozenset[str]] = {}
for _code, _names in {
        "EUR": ["€", "eur", "euro", "euros", "欧元"],
        "USD": ["$", "us$", "usd", "dollar", "dollars", "美元", "美金"],
        "GBP": ["£", "gbp", "pound", "pounds", "英镑"],
        "CNY": ["¥", "￥", "rmb", "cny", "yuan", "元", "块", "块钱", "人民币", "圆"],
        "JPY": ["¥", "￥", "円", "jpy", "yen", "日元"]}.items():
    for _name in _names:
        _CURRENCIES[_name] = _CURRENCIES.get(_name, frozenset()) | {_code}
_NAMES = sorted(_CURRENCIES, key=len, reverse=True)
_BEFORE = re.compile(rf"(?:{'|'.join(map(re.escape, _NAMES))})\s?$", re.IGNORECASE)
_BEFORE_REACH = max(map(len, _NAMES)) + 2  # and \s?, and a newline $ passes
"""How far before a number _BEFORE's match can start: it is looked for there only (looked
for in all the text before, 8,000 amounts in a 64 KB message took 97 s)."""
# A name in letters ends a word (5 euros, not 5 eurozone); a Chinese one runs on into the
# sentence (一万元整, 1亿元存款).
_AFTER = re.compile(rf"\s?(?:{'|'.join(map(re.escape, _NAMES))})(?:(?<=[^\x00-\x7f])|(?![^\W\d_]))",
                    re.IGNORECASE)
_SPACES = re.compile(r"\s*")
_WORDS = re.compile(r"[^\W\d_]+(?:\s+[^\W\d_]+)*")


@dataclass(frozen=True)
class Amount:
    """A value as an amount: `number`, in `currencies` (one's names) or before `words`."""

    number: Fraction
    currencies: frozenset[str] = frozenset()
    words: str = ""


@dataclass(frozen=True)
class _Number:
    start: int
    end: int
    value: Fraction


@text_cache(maxsize=256)
def amount_of(value: str) -> Amount | None:
    """`value` as an Amount, or None: not one number with a currency or words around it, a
    number of one digit alone, a phone number (written in its own ways: phones)."""
    from chatmem.privacy.phones import number_of

    value = value.strip()
    numbers = _numbers(value)
    if len(numbers) != 1 or number_of(value) is not None:
        return None
    (number,) = numbers
    before, after = value[:number.start].strip(), value[number.end:].strip()
    currencies: frozenset[str] = frozenset()
    if before:
        if before.casefold() not in _CURRENCIES:
            return None
        currencies = _CURRENCIES[before.casefold()]
    if after and after.casefold() in _CURRENCIES and not currencies:
        currencies, after = _CURRENCIES[after.casefold()], ""
    if after and (currencies or not _WORDS.fullmatch(after)):
        return None
    if not currencies and not after and number.value.denominator == 1 \
            and abs(number.value) < 10:
        return None
    return Amount(number.value, currencies, after.casefold())


def amount_spans(text: str, amount: Amount) -> list[tuple[int, int]]:
    """Where `text` writes `amount` (start, end): the number, and the currency or words it
    has with it."""
    spans = []
    for number in _numbers(text):
        if number.value != amount.number:
            continue
        start, end = number.start, number.end
        if amount.currencies:
            # Read in place: a copy of the text before or after each number is quadratic.
            before = _BEFORE.search(text, max(start - _BEFORE_REACH, 0), start)
            after = _AFTER.match(text, end)
            if before and _CURRENCIES[before.group().strip().casefold()] & amount.currencies:
                start = before.start()
            elif after and _CURRENCIES[after.group().strip().casefold()] & amount.currencies:
                end = after.end()
            else:
                continue
        elif amount.words:
            spaces = _SPACES.match(text, end)  # always: \s* matches nothing too
            gap = spaces.end() - end if spaces else 0
            said = text[end + gap:end + gap + len(amount.words) + 8]
            words = _WORDS.match(said)
            if words is None or not _fold(words.group()).startswith(_fold(amount.words)):
                continue
            taken = _taken(said, _fold(amount.words))
            if taken is None:
                continue
            end += gap + taken
        spans.append((start, end))
    return spans


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _taken(said: str, words: str) -> int | None:
    """How many characters of `said` write `words` (folded) as whole words."""
    for at in range(1, len(said) + 1):
        if _fold(said[:at]) == words:
            rest = said[at:at + 1]
            return at if not rest or not (rest.isalnum() and rest.isascii()) else None
    return None


def needles(amount: Amount) -> list[str]:
    """What every row of ASCII text writing `amount` holds, one of them at least: the end of
    its digits (in 15000 and 15,000), its form with k, the last word of it in English
    words, the scale words (1.5 thousand)."""
    found: list[str] = []
    if amount.number.denominator == 1:
        digits = str(amount.number.numerator)
        found.append(digits[-3:] if len(digits) > 3 else digits)
        found.append(_english(amount.number.numerator).split()[-1].split("-")[-1])
    else:
        found.append(_decimal(amount.number) or str(float(amount.number)))
    for scale, size in (("k", 1000), *_EN_SCALES.items()):
        if amount.number >= size:
            found.append(f"{_decimal(amount.number / size)}k" if scale == "k" else scale)
    found += [n for c in amount.currencies for n in _NAMES if c in _CURRENCIES[n]
              and n.isascii() and len(n) > 1]
    return [f for f in dict.fromkeys(found) if f]


def _decimal(number: Fraction) -> str:
    if number.denominator == 1:
        return str(number.numerator)
    text = f"{float(number):.6f}".rstrip("0").rstrip(".")
    return text if Fraction(text) == number else ""


def _english(n: int) -> str:
    if n < 20:
        return _EN_UNITS[n]
    if n < 100:
        return _EN_TENS[n // 10 - 2] + (f"-{_EN_UNITS[n % 10]}" if n % 10 else "")
    if n < 1000:
        return f"{_EN_UNITS[n // 100]} hundred" + (f" {_english(n % 100)}" if n % 100 else "")
    for scale, size in reversed(_EN_SCALES.items()):
        if n >= size:
            rest = f" {_english(n % size)}" if n % size else ""
            return f"{_english(n // size)} {scale}{rest}"
    return str(n)


def _numbers(text: str) -> list[_Number]:
    """Every number `text` writes, whole, left to right, never overlapping."""
    found: list[_Number] = []
    # Each character a number read before holds: a look through every span read before
    # was quadratic (3 s for a 60 KB Chinese table).
    taken = bytearray(len(text))
    for m in _DIGIT_RUN.finditer(text):
        if (value := _digit_value(m)) is not None:
            found.append(_Number(m.start(), m.end(), value))
        taken[m.start():m.end()] = b"\x01" * (m.end() - m.start())
    readers: tuple[tuple[re.Pattern[str], Callable[[str], Fraction | int | None]], ...] = (
        (_ZH_RUN, _zh_value), (_EN_RUN, _en_value))
    for pattern, read in readers:
        for m in pattern.finditer(text):
            start, end = m.span()
            if any(taken[start:end]):
                continue
            if (said := read(m.group())) is not None:
                found.append(_Number(start, end, Fraction(said)))
            taken[start:end] = b"\x01" * (end - start)
    return sorted(found, key=lambda n: n.start)


_LONGEST_NUMBER = 100
"""Characters of digits past which a run is no amount (a pasted id, a computed constant):
Python refuses to read an int of more than 4,300 digits, which made a purge of any amount
fail on a message holding such a run, the value left everywhere."""


def _digit_value(m: re.Match[str]) -> Fraction | None:
    if m.end() - m.start() > _LONGEST_NUMBER:
        return None
    number = Fraction(re.sub(r"[,_' \u00a0\u202f]", "", m["n"]))
    if m["scale"]:
        scale = m["scale"].casefold()
        return number * (1000 if scale == "k" else _EN_SCALES[scale])
    if m["zh"]:
        return _mixed_value(number, m["zh"])
    return number


def _mixed_value(number: Fraction, rest: str) -> Fraction | None:
    """1.5万, 1万5, 1万5千, 15万, 3千: a number in digits (read, its groups' marks
    gone: 15 000万, 1'500万), then Chinese units and numerals."""
    tokens: list[Fraction | str] = [number]
    for m in re.finditer(rf"{_DIGITS}|.", rest):
        piece = m.group()
        tokens.append(Fraction(_ZH_DIGITS[piece]) if piece in _ZH_DIGITS
                      else piece if piece in _ZH_SCALES else Fraction(piece))
    return _counted(tokens)


def _zh_value(run: str) -> Fraction | None:
    if all(c in _ZH_DIGITS for c in run) and len(run) > 1:
        return None  # 一二 is no number: digit by digit, a year or an id
    if run[0] not in _ZH_DIGITS and run[0] not in "十拾":
        return None  # 万一, 千万, 百分之: words, not numbers
    return _counted([Fraction(_ZH_DIGITS[c]) if c in _ZH_DIGITS else c for c in run])


def _counted(tokens: list[Fraction | str]) -> Fraction | None:
    """Numbers and the units 十百千万亿 as people say them: a last one-digit number counts a
    tenth of the unit before it (两千五 is 2,500, 一万五 15,000, 1万5 too, 一亿五
    150,000,000), unless a 零 stands between (两千零五)."""
    done, wan, section, digit, place = Fraction(0), Fraction(0), Fraction(0), None, 1
    for token in tokens:
        if isinstance(token, Fraction):
            if digit is not None:
                return None
            digit = token or None
            place = place if digit is not None and digit < 10 and digit.denominator == 1 \
                else 1
        elif token in _ZH_YI:
            if done:
                return None  # 亿 twice (一亿亿): not read
            done = (wan + section + (digit or 0) * place) * 100_000_000
            wan, section, digit, place = Fraction(0), Fraction(0), None, 10_000_000
        elif token in _ZH_WAN:
            if wan:
                return None  # 万 twice (一万万): not read
            wan = (section + (digit or 0) * place) * 10_000
            section, digit, place = Fraction(0), None, 1000
        else:
            size = _ZH_UNITS[token]
            section += (1 if digit is None else digit) * size
            digit, place = None, size // 10
    return done + wan + section + (digit or 0) * place


zh_value = _zh_value
"""A run of Chinese numerals as a number (十二 is 12, 二十三 23), None when it is no one
number (一二, read digit by digit)."""


def _en_value(run: str) -> int | None:
    """fifteen thousand, twenty-five, a hundred and twenty, twelve hundred; None when the
    words are no one number (one two)."""
    words = [w for w in re.split(r"[ -]+", run.casefold()) if w and w != "and"]
    if words[0] == "a":
        if len(words) < 2 or words[1] not in ("hundred", *_EN_SCALES):
            return None
        words[0] = "one"
    total, current, last = 0, 0, ""
    for word in words:
        if word in _EN_UNITS:
            if last in ("unit", "teen"):
                return None
            current += _EN_UNITS.index(word)
            last = "teen" if _EN_UNITS.index(word) >= 10 else "unit"
        elif word in _EN_TENS:
            if last in ("unit", "teen", "tens"):
                return None
            current += (_EN_TENS.index(word) + 2) * 10
            last = "tens"
        elif word == "hundred":
            if last not in ("unit", "teen", "tens"):
                return None
            current = (current or 1) * 100
            last = "hundred"
        else:
            if last == "" or last == "scale":
                return None
            total += (current or 1) * _EN_SCALES[word]
            current, last = 0, "scale"
    return total + current
