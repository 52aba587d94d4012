"""The patterns of the drift guard's anchors (chatmem.memory.anchors) that a regular
expression alone finds: URLs, e-mail addresses, ids, dates, amounts, clock times, licence
plates, versions, settings and code identifiers, in the languages anchor_words' tables hold."""

from __future__ import annotations

import re

from chatmem.lazy_patterns import lazy
from chatmem.memory.anchor_words import (
    CURRENCIES_AFTER,
    DATE_LINKS,
    HAN_UNITS,
    HANGUL_UNITS,
    KANA_UNITS,
    LARGE_NUMBERS,
    LATIN_UNITS,
    MONTHS_EN,
    NUMBERED_MONTHS,
    SIGNS_BEFORE,
    YEAR_LINKS,
    foreign_months,
)
from chatmem.text import CJK_LETTERS, HAN

# A space one may type between a number and the word after it (3 月 15 日, 下午 3 点).
_SP = "[ \u00a0\u3000]?"
# Simplified and traditional forms alike: 两/兩, 万/萬, 亿/億.
HAN_DIGITS = "零〇一二两兩三四五六七八九十百千万萬亿億"
CN_NUM = f"[{HAN_DIGITS}]+"
_NUM = r"\d+(?:[.,]\d+)*"
# Units after a number, each language's a row of anchor_words' tables, longest first so
# "km" wins over "k"; each row tried only after a character of its script: a number is
# mostly followed by no unit, and every case-blind alternative tried costs.
_UNIT_AFTER = (rf"(?=[\u3400-\u9fff])(?:{HAN_UNITS})|(?=[\uac00-\ud7af])(?:{HANGUL_UNITS})"
               rf"|(?=[\u30a0-\u30ff])(?:{KANA_UNITS})|[%％{SIGNS_BEFORE}]"
               rf"|(?=[^\W\d_])(?:{LATIN_UNITS}|{CURRENCIES_AFTER})")
_MONTHS = MONTHS_EN
# Han, Kana, Hangul: word characters to `\w`, but never part of a Latin-script token.
LATIN_W = rf"[^\W{CJK_LETTERS}]"
"""A word character that is not CJK: a letter, digit or _ of a Latin-script (or other) word."""
LATIN_START = rf"(?<!{LATIN_W})"
_LATIN_LETTER = rf"[^\W\d_{CJK_LETTERS}]"
# A number ending a Latin token (Q3 月报, the third quarter's report) or after one (Top 3
# 月度榜单, iOS 18 月活: the month's 月 begins a word) is no month; after a word and a space
# with a day after it (deadline 3 月 15 日), a date still, and a month where 月 ends the time
# word (OKR 3 月份复盘, Sprint 12 月底结束, trip in 3 月).
_NOT_AFTER_LATIN = (rf"(?<!{LATIN_W})(?:(?<!{_LATIN_LETTER}[ \u00a0\u3000])"
                    rf"|(?=\d{{1,2}}{_SP}[月월]{_SP}(?:\d{{1,2}}|[{HAN_DIGITS}]+){_SP}[日号號일])"
                    rf"|(?=\d{{1,2}}{_SP}[月월](?:[份底初中末旬上下]|(?![{HAN}]))))")
LATIN_END = rf"(?!{LATIN_W})"
_CURRENCY_CODES = ("USD|EUR|GBP|CNY|RMB|JPY|HKD|CHF|AUD|CAD|SGD|NZD|INR|KRW|TWD|SEK|NOK|DKK"
                   "|PLN|CZK|HUF|RUB|BRL|MXN|ZAR|TRY|THB|MYR|IDR|PHP|VND|AED|SAR|ILS")
_DAY_PART = "上午|下午|晚上|早上|凌晨|中午|傍晚|清晨|夜里|夜裡|今晚|明早"
_CN_CLOCK_DIGITS = "零〇一二两兩三四五六七八九十"
_CN_CLOCK = f"[{_CN_CLOCK_DIGITS}]{{1,3}}"
_CN_MINUTES = f"(?:\\d{{1,2}}|{_CN_CLOCK}){_SP}分|半|[一三]刻"
_PROVINCES = ("京津沪滬渝冀豫云雲辽遼黑湘皖鲁魯新苏蘇浙赣贛鄂桂甘晋晉蒙陕陝吉闽閩贵貴粤粵"
              "青藏川宁寧琼瓊")
# What 晚 begins after a weekday's digit: 周5晚上, 周5晚饭, 周5晚8点 are Friday evening.
_EVENING = "[上饭飯餐间間会會宴点點0-9一二三四五六七八九十]"

PATTERNS: tuple[re.Pattern[str], ...] = (
    # URLs and emails first: they contain digits and capitals of their own.
    lazy(r"https?://[^\s，。！？；、）)」』>\"']+[^\s，。！？；、）)」』>\"'.,;:!?]"),
    # Each pattern starts only where a run of what it matches starts: tried from every
    # position of a long run (40,000 digits), one took seconds, growing with its square.
    # A word character here is one of a Latin-script word: 发到ada@example.com就行 holds
    # the address, not the Chinese around it.
    lazy(rf"{LATIN_START}(?<![.+-])(?:{LATIN_W}|[.+-])+@(?:{LATIN_W}|-)+"
               rf"(?:\.(?:{LATIN_W}|-)+)+"),
    # Ids: ORD-7731, A-12B, INV2024-07; letters then digits, or digits joined by dashes,
    # or three or more dashed pieces with a digit among them (blue-otter-88).
    lazy(r"(?<![A-Za-z0-9_-])[A-Za-z]{1,10}[-_#]?\d[A-Za-z0-9_-]*(?<![-_])"
               r"|(?<![A-Za-z0-9_-])\d+(?:-\d+){2,}(?![A-Za-z0-9_-])"
               r"|(?<![A-Za-z0-9_-])(?=[A-Za-z0-9-]*\d)[A-Za-z0-9]+(?:-[A-Za-z0-9]+){2,}"
               r"(?![A-Za-z0-9_-])"),
    # Dates: ISO, slashes, month names, Chinese, Japanese and Korean formats.
    lazy(r"(?<!\d)\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?!\d)"),
    lazy(r"(?<!\d)\d{1,2}/\d{1,2}(?:/\d{2,4})?(?!\d)"),
    lazy(rf"{LATIN_START}(?:{_MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?"
               rf"{LATIN_END}"),
    # A day before its month: 15th of March, 15. März 2026, 15 de marzo de 2026, 15 tháng 3
    # năm 2026. English names with their case ("5 may work" is no date), the others without.
    lazy(rf"{LATIN_START}\d{{1,2}}(?:(?:st|nd|rd|th)?[ ](?:of[ ])?(?:{_MONTHS})"
               rf"|\.?[ \u00a0](?:(?:{DATE_LINKS})[ ])?(?i:{foreign_months()})"
               rf"|[ ]{NUMBERED_MONTHS})(?:,?[ \u00a0](?:(?:{YEAR_LINKS})[ ])?\d{{4}})?"
               rf"{LATIN_END}"),
    # One space may stand on either side of a number: 2025 年 12 月 31 日 as 2025年12月31日.
    lazy(
        rf"(?:\d{{2,4}}|(?<![{HAN_DIGITS}]){CN_NUM}){_SP}[年년]"
        rf"(?:{_SP}(?:\d{{1,2}}|{CN_NUM}){_SP}[月월]"
        rf"(?:{_SP}(?:\d{{1,2}}|{CN_NUM}){_SP}[日号號일])?)?"
        rf"|(?:{_NOT_AFTER_LATIN}\d{{1,2}}|[一二三四五六七八九十]{{1,2}}){_SP}[月월]"
        rf"(?:{_SP}(?:\d{{1,2}}|{CN_NUM}){_SP}[日号號일])?"
    ),
    # Amounts: a currency sign or code before the number (EUR 42,500, US$1,200), numbers
    # (Arabic or Chinese) with units (42,500 EUR, 300美元, 兩萬元). The patterns below
    # start with the character class they need and look behind it after: a pattern that
    # starts with a look-behind is tried at every position of the text (3-10x slower).
    lazy(rf"(?:[$￥{SIGNS_BEFORE}]|[A-Z](?<!{LATIN_W}[A-Z])(?:[A-Z]{{2}}(?<={_CURRENCY_CODES})"
               rf"|[A-Z]?\$|(?<=R)s\.?))\s?{_NUM}(?:\s?(?:k|m|bn|million|billion|[万萬千亿億]))?"),
    # An ordinal is no amount: 第2天 is "day 2", not "2 days". Nor does a number start
    # after a digit and a comma: tried from every group of 1,2,3,… or of a JSON array of
    # floats, each running to the end of the list, 35 KB took 35 s. The list's first
    # number reaches every unit a later one would. 住5晚 is five nights, but 周5晚上 (星期5
    # 晚饭) Friday evening.
    lazy(rf"(?<![A-Za-z0-9_.第])(?<!\d,)(?!(?<=[周週期拜])[1-7]\s?晚{_EVENING}){_NUM}\s?(?:[{LARGE_NUMBERS}])?\s?(?:{_UNIT_AFTER})"
               r"(?![a-zA-Z])", re.IGNORECASE),
    # Clock times: 15:45, 08:12:44, 6:30 pm, 3pm, 10 Uhr, 15.30 Uhr; 下午3点, 15点45分, 三點半.
    # A bare 3点 is left out: 这3点 is "these three points" as often as a time.
    lazy(r"\d(?<![A-Za-z0-9:.]\d)(?:(?:(?<=[01])\d|(?<=2)[0-3])?:[0-5]\d(?::[0-5]\d)?"
               r"(?![\d:])(?:\s?(?i:[ap]\.m\.|[ap]m)(?![A-Za-z])|[ \u00a0]Uhr(?![A-Za-z]))?"
               r"|(?:(?<=1)[0-2]|(?<=0)\d)?\s?(?i:[ap]\.m\.|[ap]m)(?![A-Za-z])"
               r"|(?:(?<=[01])\d|(?<=2)[0-4])?(?:\.[0-5]\d)?[ \u00a0]Uhr(?![A-Za-z]))"),
    lazy(rf"(?:{_DAY_PART})\s?(?:\d{{1,2}}|{_CN_CLOCK}){_SP}[点點时時](?:{_SP}(?:{_CN_MINUTES}))?"
               rf"|[\d{_CN_CLOCK_DIGITS}](?<![第\d{HAN_DIGITS}][\d{_CN_CLOCK_DIGITS}])"
               rf"(?<!第[ \u00a0\u3000][\d{_CN_CLOCK_DIGITS}])"
               rf"(?:(?<=\d)\d?|(?<=[{_CN_CLOCK_DIGITS}])[{_CN_CLOCK_DIGITS}]{{0,2}})"
               rf"{_SP}[点點时時]{_SP}(?:{_CN_MINUTES})"),
    # Chinese licence plates: the province is part of the number (浙A12345, 粤B·D12345).
    lazy(rf"[{_PROVINCES}][A-HJ-NP-Z]\s?[·・•.]?\s?(?=[A-Z]*\d)[A-HJ-NP-Z0-9]{{5,6}}"
               r"(?![A-Za-z0-9])"),
    # Versions of three or more parts (1.14.2, v2.0.1-rc1), alone or as an image's or a
    # package's tag (jobs-worker:1.14.2): a 2.0 alone is any decimal. The name is of
    # Latin-script word characters: with Han in it, every letter of a Chinese text
    # (用a和b…) started a name running to the end of the clause.
    lazy(rf"(?<!{LATIN_W})(?<![.:/-])(?:[A-Za-z](?:{LATIN_W}|[./-])*:)?[vV]?\d+"
               rf"(?:\.\d+){{2,}}"
               rf"(?:[-+][A-Za-z0-9]+)*(?!\.?{LATIN_W})"),
    # A setting as code writes it, name=value without spaces (backoff=2.0, DEPLOY_ENV=staging).
    lazy(rf"(?<!{LATIN_W})(?<![.=-])[A-Za-z_][A-Za-z0-9_]{{1,40}}=(?!=)[A-Za-z0-9_.:/-]*[A-Za-z0-9_]"),
    # Code identifiers: snake_case, UPPER_CASE and CamelCase of two humps or more (retry_count,
    # DEPLOY_ENV, UndefinedColumn, fetchPending); one plain word is never one.
    lazy(rf"(?<!{LATIN_W})(?<!-)(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
               r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+)"
               rf"(?!{LATIN_W}|-)"),
)
