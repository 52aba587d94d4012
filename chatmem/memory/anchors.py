"""Drift-guard anchors: the literal details a summary must not lose.

An anchor is text that a faithful summary repeats verbatim: ids like
ORD-7731 or blue-otter-88, emails, URLs, dates (2026-05-01, March 15, 2026年5月1日, 三月十五日,
三月五號, 3월 15일, 15. März 2026, 15 tháng 3), clock times (15:45, 3pm, 下午3点半), licence
plates (浙A12345), numbers with units (5 kg, $120, EUR 42,500, 30%, 五千元, 兩萬元, 5万円,
50,000원, ₹5,000, 500 TL; the words of each language are anchor_words' tables), names
(Alice Chen, Dr. Smith, 我叫王小明, 我妹妹叫李娜, 王小明先生: see anchor_names_zh) and
acronyms (DJI), versions and image tags (jobs-worker:1.14.2), ports (port 8443, 端口8443),
settings (backoff=2.0) and code identifiers (retry_count, DEPLOY_ENV, UndefinedColumn).
Full-width ids and amounts count too.
Nothing inside a privacy marker (⟦PIN or security code⟧) is one.
Bare numbers, words capitalised for their place (a sentence's, line's or heading's first
word, a label such as Subject: or Annex A, a defined term such as the Customer, a German
noun such as die Rechnung, a capitalised weekday or month such as Montag), pieces of
hyphenated words (Wi of Wi-Fi), everyday Chinese counts (一次, 一个, 两人, 一天; 二天 of
第二天), shouted phrases and SQL (capitals side by side) and the acronyms everyone writes
(OK, API) are left out: they are too often noise, and every false anchor becomes a pinned
fact that costs tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from chatmem.memory.anchor_determiners import after_determiner
from chatmem.memory.anchor_names_zh import chinese_names
from chatmem.memory.anchor_words import (
    CALENDAR_WORDS,
    CURRENCIES_AFTER,
    DATE_LINKS,
    GERMAN_STOP_WORDS,
    HAN_UNITS,
    HANGUL_UNITS,
    KANA_UNITS,
    LARGE_NUMBERS,
    LATIN_UNITS,
    MONTHS_EN,
    NOUN_MARKERS,
    NUMBERED_MONTHS,
    SIGNS_BEFORE,
    YEAR_LINKS,
    foreign_months,
)
from chatmem.privacy.findings import MARK_CLOSE, MARK_OPEN
from chatmem.text import CJK_LETTERS, FULL_WIDTH, FULL_WIDTH_SIGNS, HAN

# A space one may type between a number and the word after it (3 月 15 日, 下午 3 点).
_SP = "[ \u00a0\u3000]?"
# Simplified and traditional forms alike: 两/兩, 万/萬, 亿/億.
_HAN_DIGITS = "零〇一二两兩三四五六七八九十百千万萬亿億"
_CN_NUM = f"[{_HAN_DIGITS}]+"
_NUM = r"\d+(?:[.,]\d+)*"
# Units after a number, each language's a row of anchor_words' tables, longest first so
# "km" wins over "k"; each row tried only after a character of its script: a number is
# mostly followed by no unit, and every case-blind alternative tried costs.
_UNIT_AFTER = (rf"(?=[\u3400-\u9fff])(?:{HAN_UNITS})|(?=[\uac00-\ud7af])(?:{HANGUL_UNITS})"
               rf"|(?=[\u30a0-\u30ff])(?:{KANA_UNITS})|[%％{SIGNS_BEFORE}]"
               rf"|(?=[^\W\d_])(?:{LATIN_UNITS}|{CURRENCIES_AFTER})")
_MONTHS = MONTHS_EN
# Han, Kana, Hangul: word characters to `\w`, but never part of a Latin-script token.
_LATIN_W = rf"[^\W{CJK_LETTERS}]"
"""A word character that is not CJK: a letter, digit or _ of a Latin-script (or other) word."""
_LATIN_START = rf"(?<!{_LATIN_W})"
_LATIN_LETTER = rf"[^\W\d_{CJK_LETTERS}]"
# A number ending a Latin token (Q3 月报, the third quarter's report) or after one (Top 3
# 月度榜单, iOS 18 月活: the month's 月 begins a word) is no month; after a word and a space
# with a day after it (deadline 3 月 15 日), a date still, and a month where 月 ends the time
# word (OKR 3 月份复盘, Sprint 12 月底结束, trip in 3 月).
_NOT_AFTER_LATIN = (rf"(?<!{_LATIN_W})(?:(?<!{_LATIN_LETTER}[ \u00a0\u3000])"
                    rf"|(?=\d{{1,2}}{_SP}[月월]{_SP}(?:\d{{1,2}}|[{_HAN_DIGITS}]+){_SP}[日号號일])"
                    rf"|(?=\d{{1,2}}{_SP}[月월](?:[份底初中末旬上下]|(?![{HAN}]))))")
_LATIN_END = rf"(?!{_LATIN_W})"
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
_CJK_STOP = "，。！？；：、,.!?;:（）()「」『』《》“”\"' \n\t"

_PATTERNS: tuple[re.Pattern[str], ...] = (
    # URLs and emails first: they contain digits and capitals of their own.
    re.compile(r"https?://[^\s，。！？；、）)」』>\"']+[^\s，。！？；、）)」』>\"'.,;:!?]"),
    # Each pattern starts only where a run of what it matches starts: tried from every
    # position of a long run (40,000 digits), one took seconds, growing with its square.
    # A word character here is one of a Latin-script word: 发到ada@example.com就行 holds
    # the address, not the Chinese around it.
    re.compile(rf"{_LATIN_START}(?<![.+-])(?:{_LATIN_W}|[.+-])+@(?:{_LATIN_W}|-)+"
               rf"(?:\.(?:{_LATIN_W}|-)+)+"),
    # Ids: ORD-7731, A-12B, INV2024-07; letters then digits, or digits joined by dashes,
    # or three or more dashed pieces with a digit among them (blue-otter-88).
    re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z]{1,10}[-_#]?\d[A-Za-z0-9_-]*(?<![-_])"
               r"|(?<![A-Za-z0-9_-])\d+(?:-\d+){2,}(?![A-Za-z0-9_-])"
               r"|(?<![A-Za-z0-9_-])(?=[A-Za-z0-9-]*\d)[A-Za-z0-9]+(?:-[A-Za-z0-9]+){2,}"
               r"(?![A-Za-z0-9_-])"),
    # Dates: ISO, slashes, month names, Chinese, Japanese and Korean formats.
    re.compile(r"(?<!\d)\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?!\d)"),
    re.compile(r"(?<!\d)\d{1,2}/\d{1,2}(?:/\d{2,4})?(?!\d)"),
    re.compile(rf"{_LATIN_START}(?:{_MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?"
               rf"{_LATIN_END}"),
    # A day before its month: 15th of March, 15. März 2026, 15 de marzo de 2026, 15 tháng 3
    # năm 2026. English names with their case ("5 may work" is no date), the others without.
    re.compile(rf"{_LATIN_START}\d{{1,2}}(?:(?:st|nd|rd|th)?[ ](?:of[ ])?(?:{_MONTHS})"
               rf"|\.?[ \u00a0](?:(?:{DATE_LINKS})[ ])?(?i:{foreign_months()})"
               rf"|[ ]{NUMBERED_MONTHS})(?:,?[ \u00a0](?:(?:{YEAR_LINKS})[ ])?\d{{4}})?"
               rf"{_LATIN_END}"),
    # One space may stand on either side of a number: 2025 年 12 月 31 日 as 2025年12月31日.
    re.compile(
        rf"(?:\d{{2,4}}|(?<![{_HAN_DIGITS}]){_CN_NUM}){_SP}[年년]"
        rf"(?:{_SP}(?:\d{{1,2}}|{_CN_NUM}){_SP}[月월]"
        rf"(?:{_SP}(?:\d{{1,2}}|{_CN_NUM}){_SP}[日号號일])?)?"
        rf"|(?:{_NOT_AFTER_LATIN}\d{{1,2}}|[一二三四五六七八九十]{{1,2}}){_SP}[月월]"
        rf"(?:{_SP}(?:\d{{1,2}}|{_CN_NUM}){_SP}[日号號일])?"
    ),
    # Amounts: a currency sign or code before the number (EUR 42,500, US$1,200), numbers
    # (Arabic or Chinese) with units (42,500 EUR, 300美元, 兩萬元). The patterns below
    # start with the character class they need and look behind it after: a pattern that
    # starts with a look-behind is tried at every position of the text (3-10x slower).
    re.compile(rf"(?:[$￥{SIGNS_BEFORE}]|[A-Z](?<!{_LATIN_W}[A-Z])(?:[A-Z]{{2}}(?<={_CURRENCY_CODES})"
               rf"|[A-Z]?\$|(?<=R)s\.?))\s?{_NUM}(?:\s?(?:k|m|bn|million|billion|[万萬千亿億]))?"),
    # An ordinal is no amount: 第2天 is "day 2", not "2 days". Nor does a number start
    # after a digit and a comma: tried from every group of 1,2,3,… or of a JSON array of
    # floats, each running to the end of the list, 35 KB took 35 s. The list's first
    # number reaches every unit a later one would. 住5晚 is five nights, but 周5晚上 (星期5
    # 晚饭) Friday evening.
    re.compile(rf"(?<![A-Za-z0-9_.第])(?<!\d,)(?!(?<=[周週期拜])[1-7]\s?晚{_EVENING}){_NUM}\s?(?:[{LARGE_NUMBERS}])?\s?(?:{_UNIT_AFTER})"
               r"(?![a-zA-Z])", re.IGNORECASE),
    # Clock times: 15:45, 08:12:44, 6:30 pm, 3pm, 10 Uhr, 15.30 Uhr; 下午3点, 15点45分, 三點半.
    # A bare 3点 is left out: 这3点 is "these three points" as often as a time.
    re.compile(r"\d(?<![A-Za-z0-9:.]\d)(?:(?:(?<=[01])\d|(?<=2)[0-3])?:[0-5]\d(?::[0-5]\d)?"
               r"(?![\d:])(?:\s?(?i:[ap]\.m\.|[ap]m)(?![A-Za-z])|[ \u00a0]Uhr(?![A-Za-z]))?"
               r"|(?:(?<=1)[0-2]|(?<=0)\d)?\s?(?i:[ap]\.m\.|[ap]m)(?![A-Za-z])"
               r"|(?:(?<=[01])\d|(?<=2)[0-4])?(?:\.[0-5]\d)?[ \u00a0]Uhr(?![A-Za-z]))"),
    re.compile(rf"(?:{_DAY_PART})\s?(?:\d{{1,2}}|{_CN_CLOCK}){_SP}[点點时時](?:{_SP}(?:{_CN_MINUTES}))?"
               rf"|[\d{_CN_CLOCK_DIGITS}](?<![第\d{_HAN_DIGITS}][\d{_CN_CLOCK_DIGITS}])"
               rf"(?<!第[ \u00a0\u3000][\d{_CN_CLOCK_DIGITS}])"
               rf"(?:(?<=\d)\d?|(?<=[{_CN_CLOCK_DIGITS}])[{_CN_CLOCK_DIGITS}]{{0,2}})"
               rf"{_SP}[点點时時]{_SP}(?:{_CN_MINUTES})"),
    # Chinese licence plates: the province is part of the number (浙A12345, 粤B·D12345).
    re.compile(rf"[{_PROVINCES}][A-HJ-NP-Z]\s?[·・•.]?\s?(?=[A-Z]*\d)[A-HJ-NP-Z0-9]{{5,6}}"
               r"(?![A-Za-z0-9])"),
    # Versions of three or more parts (1.14.2, v2.0.1-rc1), alone or as an image's or a
    # package's tag (jobs-worker:1.14.2): a 2.0 alone is any decimal. The name is of
    # Latin-script word characters: with Han in it, every letter of a Chinese text
    # (用a和b…) started a name running to the end of the clause.
    re.compile(rf"(?<!{_LATIN_W})(?<![.:/-])(?:[A-Za-z](?:{_LATIN_W}|[./-])*:)?[vV]?\d+"
               rf"(?:\.\d+){{2,}}"
               rf"(?:[-+][A-Za-z0-9]+)*(?!\.?{_LATIN_W})"),
    # A setting as code writes it, name=value without spaces (backoff=2.0, DEPLOY_ENV=staging).
    re.compile(rf"(?<!{_LATIN_W})(?<![.=-])[A-Za-z_][A-Za-z0-9_]{{1,40}}=(?!=)[A-Za-z0-9_.:/-]*[A-Za-z0-9_]"),
    # Code identifiers: snake_case, UPPER_CASE and CamelCase of two humps or more (retry_count,
    # DEPLOY_ENV, UndefinedColumn, fetchPending); one plain word is never one.
    re.compile(rf"(?<!{_LATIN_W})(?<!-)(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
               r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+)"
               rf"(?!{_LATIN_W}|-)"),
)

# The number of a port: "port 8443", "port: 8443", STAGING_PORT: "8443", 端口8443.
_PORT = re.compile(r"(?<![A-Za-z])(?i:port)s?[\"']?\s*[:=]?\s*[\"']?(?P<number>\d{2,5})(?![\d.])"
                   r"|端口[^\d\n]{0,4}?(?P<zh>\d{2,5})(?![\d.])")
# An acronym: DJI, AWS, HSBC. Not a capitalised word nor a shouted phrase or SQL (two
# capitalised words side by side), nor the few everyone writes (OK, CI, API).
_ACRONYM = re.compile(rf"(?<!{_LATIN_W})(?<!-)[A-Z]{{2,6}}(?!{_LATIN_W}|-)")
_CAPS_WORD = re.compile(r"[A-Z]{2,}\b")
_COMMON_ACRONYM_WORDS = """
OK AM PM TV PC CI CD PR ID IDS DB OS UI UX IT HR IO API APIS URL URLS SQL HTTP HTTPS JSON YAML
XML CSV PDF HTML CSS JS TS CPU GPU RAM SSD USB FAQ ASAP FYI BTW LOL OMG IMO TBH DIY ETA AI ML
LLM NO YES NOT AND OR THE IS IN ON AT TO OF BY AS IF ALL ANY BUT FOR NEW OLD TODO NOTE FIXME
ERROR WARN INFO DEBUG LINE FROM WHERE JOIN LIMIT GROUP ORDER INTO SET NULL TRUE FALSE NONE
SELECT UPDATE DELETE INSERT CREATE ALTER DROP TABLE INDEX VALUES ADD KEY
"""
_COMMON_ACRONYMS = frozenset(_COMMON_ACRONYM_WORDS.split())


def _acronyms(text: str) -> list[tuple[int, int]]:
    found = []
    for match in _ACRONYM.finditer(text):
        if match.group() in _COMMON_ACRONYMS:
            continue
        before = text[max(0, match.start() - 40):match.start()].split()
        after = text[match.end():match.end() + 40].split()
        beside = [w.strip("\"'(),.:;!?") for w in (before[-1:] + after[:1])]
        if any(_CAPS_WORD.fullmatch(w) for w in beside):
            continue
        found.append(match.span())
    return found

# A Chinese numeral with a unit, never cut out of a longer numeral or an ordinal (第二天).
_CN_AMOUNT = re.compile(
    rf"(?<![第{_HAN_DIGITS}])(?P<number>{_CN_NUM})(?P<unit>{HAN_UNITS})"
)
_CLASSIFIERS = {"个", "個", "件", "次", "张", "張", "页", "頁"}
"""They count anything (三个 is "three of them"): the noun after them is the detail, if any."""
_COUNT_UNITS = {"岁", "歲", "天", "晚", "泊", "人", "名", "号", "號", "小时", "小時", "分钟",
                "分鐘"}
_SMALL = {"一", "二", "两", "兩"}
"""一天, 一次, 两人: one or two of a counted thing is everyday phrasing, not a detail."""


def _cn_amount_matters(number: str, unit: str) -> bool:
    if unit in _CLASSIFIERS:
        return False
    return not (unit in _COUNT_UNITS and number in _SMALL)


_DETERMINERS = {"The", "A", "An", "My", "Our", "Your", "Their", "Its", "This", "That", "These",
                "Those", "Each", "Every", "Any", "Such", "Am",
                *(word.capitalize() for word in NOUN_MARKERS.split())}
_STOP_NAMES = {*CALENDAR_WORDS, *GERMAN_STOP_WORDS.split(),
    "I", "I'm", "I'd", "I'll", "I've", "We", "You", *_DETERMINERS,
    "He", "She", "It", "They", "Hi", "Hello", "Hey",
    "Thanks", "Thank", "Please", "Yes", "No", "OK", "Ok", "And", "But", "Or", "So", "If",
    "What", "When", "Where", "Who", "Why", "How", "Which", "Can", "Could", "Would", "Should",
    "Is", "Are", "Was", "Do", "Does", "Did", "Let", "Let's", "Also", "Then", "Now", "Sure",
    "Summary", "User", "Assistant", "Echo", "Turn", "Turns", "Monday", "Tuesday", "Wednesday",
    "Thursday", "Friday", "Saturday", "Sunday", *_MONTHS.split("|"),
}
_TITLE = r"(?:Dr|Mr|Mrs|Ms|Prof)\."
_CAP_WORD = r"[A-Z][a-z]+(?:['’][a-z]+)?"
# Capitalised words side by side, a title before any of them (See Dr. Smith) and initials
# between them (John F. Kennedy). Never a piece of a hyphenated word: "Wi" from "Wi-Fi"
# is not a name.
_NAME = re.compile(
    rf"{_LATIN_START}(?<!-)(?:{_TITLE} )?{_CAP_WORD}(?:[ ](?:{_TITLE} )?(?:{_CAP_WORD}|[A-Z]\.))*"
    rf"{_LATIN_END}(?!-)"
)
_NAME_PART = re.compile(rf"(?P<title>{_TITLE})|[A-Z]\.|\S+")
# What a word capitalised only for its place follows: a sentence's end, a line's start,
# a heading's or a bullet's mark, a clause number (4.9, 2), (a)), a quote or a colon.
_SENTENCE_START = re.compile(
    r"(?:^|(?:[.!?:;](?=\s)|[。！？；：\n\"“(（-]|(?<!\S)(?:#{1,6}|[>*+•]))\s*)"
    r"(?:(?:\d+(?:\.\d+)*[.)]?|\(?[a-z0-9]{1,3}\))\s+)?$"
)
# After a word, what it designates (Annex A, Section 4:, Reminder 2:), but not a number a
# sentence goes on after: "pay Bob 50 euros" names Bob.
_DESIGNATOR = re.compile(r"\s[A-Z](?![A-Za-z0-9])"
                         r"|\s\d+(?:\.\d+)*(?:[:),;]|\.?[ \t]*(?:\n|$)|\.\s)")
# The words a designator follows as a label (Section 4:, Annex A), wherever they stand; any
# other word only where its place capitalised it (a heading's "Reminder 2:"): "I lent
# Alice 200." names Alice.
_LABEL_NOUNS = frozenset({
    "Section", "Sections", "Annex", "Clause", "Article", "Appendix", "Schedule", "Exhibit",
    "Chapter", "Part", "Step", "Reminder", "Item", "Note", "Table", "Figure", "Page",
    "Paragraph", "Attachment", "Enclosure", "Phase", "Stage", "Option", "Question", "Rule",
    "Point", "Task", "Level", "Round", "Lesson", "Unit", "Module", "Volume", "Case", "Version",
})
_LOOK = 24
"""How far around a word its context is read: a window, so a long text costs its length."""


def _is_start(text: str, at: int) -> bool:
    return bool(_SENTENCE_START.search(text, max(0, at - _LOOK), at))


def _lone_word_is_name(text: str, start: int, end: int, after_stop: str) -> bool:
    """Whether one capitalised word is capitalised for being a name, not for its place.

    "Each", "Section" and "Subject" start a sentence, a heading or a header line; "the
    Customer", "The Supplier" are a document's defined terms; "Annex A", "Reminder 1:"
    and "Subject:" label what follows.
    """
    if after_stop in _DETERMINERS:
        return False
    if not after_stop and (_is_start(text, start) or after_determiner(text, start, _LOOK)):
        return False
    # A label's colon: Subject:, Note:.
    return not (text.startswith(":", end) or text.startswith(" :", end))


def _names(text: str) -> list[tuple[int, int]]:
    """Spans of the names in `text`: a run of capitalised words is cut at every stop word
    (Annex A. The Customer) and title, and loses the initials it ends on."""
    found = []
    for match in _NAME.finditer(text):
        groups: list[list[tuple[int, int]]] = [[]]
        stops = [""]
        for part in _NAME_PART.finditer(match.group()):
            word = part.group()
            if word in _STOP_NAMES:
                groups.append([])
                stops.append(word)
                continue
            if part.group("title") and groups[-1]:
                groups.append([])
                stops.append("")
            groups[-1].append((match.start() + part.start(), match.start() + part.end()))
        for group, after_stop in zip(groups, stops, strict=True):
            while group and text[group[-1][1] - 1] == ".":  # an initial or a title
                group.pop()
            if group and _DESIGNATOR.match(text, group[-1][1], group[-1][1] + _LOOK) and (
                    text[slice(*group[-1])] in _LABEL_NOUNS
                    or (len(group) == 1 and _is_start(text, group[0][0]))):
                group.pop()  # See Section 4: a heading's word, not a name's
            if not group:
                continue
            start, end = group[0][0], group[-1][1]
            if text[end - 2:end] in ("'s", "’s"):
                end -= 2  # Alice's car: the name is Alice
            if len(group) > 1 or _lone_word_is_name(text, start, end, after_stop):
                found.append((start, end))
    return found


# Where chatmem.privacy.sensitive masked a detail (⟦PIN or security code⟧): no anchor
# holds or touches one, nor a word of it ("PIN"): a pin would name what memory must not keep.
_MARKER = re.compile(f"{MARK_OPEN}[^{MARK_OPEN}{MARK_CLOSE}]*(?:{MARK_CLOSE}|$)|{MARK_CLOSE}")
# scheme://user:PASSWORD@host: "PASSWORD@host" is no e-mail address, nor "PASSWORD" an
# id. A password may hold '@' ("p@ss@host"): the last one before the host ends it.
_USERINFO = re.compile(r"://[^\s/?#]{1,128}@")


# Full-width letters, digits and the marks ids and amounts hold (ＯＲＤ－７７３１, ３．５公斤)
# read as their ASCII forms. One character for one, so a match's place in the folded
# text is its place in the original, and the anchor keeps what the user typed; `present`
# folds every full-width form on both sides, so ORD-7731 in a summary counts as
# ＯＲＤ－７７３１. Not NFKC: it composes "e" with a following accent, and an anchor
# would no longer be found in the very text it came from.
_FOLD = {code: code - 0xFEE0 for code in (*range(0xFF10, 0xFF1A), *range(0xFF21, 0xFF3B),
                                          *range(0xFF41, 0xFF5B), *map(ord, "－＿＃＠．％＄＋／"))}


def _span_value(text: str, folded: str, start: int, end: int) -> str:
    """text[start:end] without the punctuation around it (as found in `folded`)."""
    piece = folded[start:end]
    lead = len(piece) - len(piece.lstrip(_CJK_STOP))
    kept = len(piece.strip(_CJK_STOP))
    return text[start + lead:start + lead + kept]


def extract_anchors(text: str) -> list[str]:
    """The anchors in `text`, in order of first appearance, without repeats or overlaps."""
    folded = text.translate(_FOLD)
    spans: list[tuple[int, int, str]] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(folded):
            value = _span_value(text, folded, *match.span())
            if value:
                spans.append((match.start(), match.end(), value))
    for match in _CN_AMOUNT.finditer(folded):
        if _cn_amount_matters(match.group("number"), match.group("unit")):
            spans.append((match.start(), match.end(), text[match.start():match.end()]))
    for start, end in _acronyms(folded):
        spans.append((start, end, text[start:end]))
    for match in _PORT.finditer(folded):
        group = "number" if match.group("number") else "zh"
        spans.append((match.start(group), match.end(group), text[slice(*match.span(group))]))
    for start, end in _names(folded):
        spans.append((start, end, text[start:end]))
    for start, end in chinese_names(text):
        spans.append((start, end, text[start:end]))
    # Longest first so "2026年5月1日" wins over "5月1日" and a URL over the id inside it.
    spans.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
    # Each pattern's matches do not overlap, so the spans cover the text a few times over
    # at most: checking a span against what is taken costs its length, not the count taken.
    taken = bytearray(len(text))
    # Nothing in a URL's user:password or in a privacy marker is an anchor, nor what holds one.
    for pattern in (_USERINFO, _MARKER):
        for match in pattern.finditer(text):
            taken[match.start():match.end()] = b"\x01" * (match.end() - match.start())
    kept: list[tuple[int, str]] = []
    for start, end, value in spans:
        if any(taken[start:end]):
            continue
        taken[start:end] = b"\x01" * (end - start)
        kept.append((start, value))
    kept.sort()
    return list(dict.fromkeys(value for _, value in kept))


_SPACES, _WIDTH = re.compile(r"\s+"), FULL_WIDTH | FULL_WIDTH_SIGNS
# CJK typesetting spaces Han (Kana, Hangul) from digits: "5 万元" keeps 5万元. The space
# first (looking behind every character costs four times as much).
_CJK_DIGIT_SPACE = re.compile(rf" (?:(?<=[{CJK_LETTERS}] )(?=\d)|(?<=\d )(?=[{CJK_LETTERS}]))")


def anchors_of(texts: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for text in texts:
        for anchor in extract_anchors(text):
            seen.setdefault(anchor, None)
    return list(seen)


@lru_cache(maxsize=4096)
def _normal(text: str) -> str:
    # Cached: the drift guard asks about the same summary and messages for every anchor.
    spaced = _SPACES.sub(" ", text.translate(_WIDTH)).casefold()
    return spaced if spaced.isascii() else _CJK_DIGIT_SPACE.sub("", spaced)


def width_folded(text: str) -> str:
    """`text` with full-width letters, digits and marks as ASCII ones, one for one."""
    return text.translate(_WIDTH)


def normal(text: str) -> str:
    """`text` as `present` compares it: width, case and spacing aside."""
    return _normal(text)


def present(anchor: str, text: str) -> bool:
    """Whether `text` repeats the anchor (width, case, spacing aside: ￥5万 is in "¥5 万")."""
    return _normal(anchor) in _normal(text)


def missing_anchors(anchors: Iterable[str], text: str) -> list[str]:
    return [a for a in dict.fromkeys(anchors) if not present(a, text)]
