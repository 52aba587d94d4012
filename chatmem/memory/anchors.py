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

from collections.abc import Iterable

from chatmem.lazy_patterns import lazy
from chatmem.memory.anchor_determiners import after_determiner
from chatmem.memory.anchor_names_zh import chinese_names
from chatmem.memory.anchor_patterns import (
    CN_NUM,
    HAN_DIGITS,
    LATIN_END,
    LATIN_START,
    LATIN_W,
    PATTERNS,
)
from chatmem.memory.anchor_words import (
    CALENDAR_WORDS,
    GERMAN_STOP_WORDS,
    HAN_UNITS,
    MONTHS_EN,
    NOUN_MARKERS,
)
from chatmem.privacy.findings import MARK_CLOSE, MARK_OPEN
from chatmem.text import CJK_LETTERS, FULL_WIDTH, FULL_WIDTH_SIGNS
from chatmem.text_caches import text_cache
from chatmem.text_digests import by_digest

# The number of a port: "port 8443", "port: 8443", STAGING_PORT: "8443", 端口8443.
_PORT = lazy(r"(?<![A-Za-z])(?i:port)s?[\"']?\s*[:=]?\s*[\"']?(?P<number>\d{2,5})(?![\d.])"
                   r"|端口[^\d\n]{0,4}?(?P<zh>\d{2,5})(?![\d.])")
# An acronym: DJI, AWS, HSBC. Not a capitalised word nor a shouted phrase or SQL (two
# capitalised words side by side), nor the few everyone writes (OK, CI, API).
_ACRONYM = lazy(rf"(?<!{LATIN_W})(?<!-)[A-Z]{{2,6}}(?!{LATIN_W}|-)")
_CAPS_WORD = lazy(r"[A-Z]{2,}\b")
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
_CN_AMOUNT = lazy(
    rf"(?<![第{HAN_DIGITS}])(?P<number>{CN_NUM})(?P<unit>{HAN_UNITS})"
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
    "Thursday", "Friday", "Saturday", "Sunday", *MONTHS_EN.split("|"),
}
_TITLE = r"(?:Dr|Mr|Mrs|Ms|Prof)\."
_CAP_WORD = r"[A-Z][a-z]+(?:['’][a-z]+)?"
# Capitalised words side by side, a title before any of them (See Dr. Smith) and initials
# between them (John F. Kennedy). Never a piece of a hyphenated word: "Wi" from "Wi-Fi"
# is not a name.
_NAME = lazy(
    rf"{LATIN_START}(?<!-)(?:{_TITLE} )?{_CAP_WORD}(?:[ ](?:{_TITLE} )?(?:{_CAP_WORD}|[A-Z]\.))*"
    rf"{LATIN_END}(?!-)"
)
_NAME_PART = lazy(rf"(?P<title>{_TITLE})|[A-Z]\.|\S+")
# What a word capitalised only for its place follows: a sentence's end, a line's start,
# a heading's or a bullet's mark, a clause number (4.9, 2), (a)), a quote or a colon.
_SENTENCE_START = lazy(
    r"(?:^|(?:[.!?:;](?=\s)|[。！？；：\n\"“(（-]|(?<!\S)(?:#{1,6}|[>*+•]))\s*)"
    r"(?:(?:\d+(?:\.\d+)*[.)]?|\(?[a-z0-9]{1,3}\))\s+)?$"
)
# After a word, what it designates (Annex A, Section 4:, Reminder 2:), but not a number a
# sentence goes on after: "pay Bob 50 euros" names Bob.
_DESIGNATOR = lazy(r"\s[A-Z](?![A-Za-z0-9])"
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
_MARKER = lazy(f"{MARK_OPEN}[^{MARK_OPEN}{MARK_CLOSE}]*(?:{MARK_CLOSE}|$)|{MARK_CLOSE}")
# scheme://user:PASSWORD@host: "PASSWORD@host" is no e-mail address, nor "PASSWORD" an
# id. A password may hold '@' ("p@ss@host"): the last one before the host ends it.
_USERINFO = lazy(r"://[^\s/?#]{1,128}@")


# Full-width letters, digits and the marks ids and amounts hold (ＯＲＤ－７７３１, ３．５公斤)
# read as their ASCII forms. One character for one, so a match's place in the folded
# text is its place in the original, and the anchor keeps what the user typed; `present`
# folds every full-width form on both sides, so ORD-7731 in a summary counts as
# ＯＲＤ－７７３１. Not NFKC: it composes "e" with a following accent, and an anchor
# would no longer be found in the very text it came from.
_FOLD = {code: code - 0xFEE0 for code in (*range(0xFF10, 0xFF1A), *range(0xFF21, 0xFF3B),
                                          *range(0xFF41, 0xFF5B), *map(ord, "－＿＃＠．％＄＋／"))}


_CJK_STOP = "，。！？；：、,.!?;:（）()「」『』《》“”\"' \n\t"


def _span_value(text: str, folded: str, start: int, end: int) -> str:
    """text[start:end] without the punctuation around it (as found in `folded`)."""
    piece = folded[start:end]
    lead = len(piece) - len(piece.lstrip(_CJK_STOP))
    kept = len(piece.strip(_CJK_STOP))
    return text[start + lead:start + lead + kept]


def extract_anchors(text: str) -> list[str]:
    """The anchors in `text`, in order of first appearance, without repeats or overlaps."""
    return list(_anchors(text))


@by_digest
def _anchors(text: str) -> tuple[str, ...]:
    # Kept: every summary strategy of a catch-up or replay reads the same messages, and
    # the patterns cost far more than the digest.
    folded = text.translate(_FOLD)
    spans: list[tuple[int, int, str]] = []
    for pattern in PATTERNS:
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
    return tuple(dict.fromkeys(value for _, value in kept))


_SPACES, _WIDTH = lazy(r"\s+"), FULL_WIDTH | FULL_WIDTH_SIGNS
# CJK typesetting spaces Han (Kana, Hangul) from digits: "5 万元" keeps 5万元. The space
# first (looking behind every character costs four times as much).
_CJK_DIGIT_SPACE = lazy(rf" (?:(?<=[{CJK_LETTERS}] )(?=\d)|(?<=\d )(?=[{CJK_LETTERS}]))")


def anchors_of(texts: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for text in texts:
        for anchor in extract_anchors(text):
            seen.setdefault(anchor, None)
    return list(seen)


@text_cache(maxsize=4096)
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
