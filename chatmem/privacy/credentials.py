"""Credentials named other ways than "password" (issue 28): by the thing they open ("the
lockbox combo is 3-7-1-9", 保险箱的组合是24-08-61), by a generic word and that thing ("the
code to the back door is 8842"), by the thing alone where its "is" can only be a key ("the
Wi-Fi for guests is Sunflower2024!", 门禁是2580), or by what they do ("the side door opens
with 7781", "punch in 4471" to get into the building, 进门按4471#). The words are
chatmem.privacy.secret_names's lists; chatmem.privacy.sensitive reports what is found here
with everything else.

A name alone is not enough where the same words name harmless things: a code needs
three digits, any other value must look like a key (letters with digits or symbols, or
a long number: "the door key is under the mat" names none), a bare Wi-Fi's value must
not look like a network's name ("HomeNet-5G"), and a harmless word before the code
("model code", "promo code") or the pass ("boarding pass") makes it harmless.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from chatmem.lazy_patterns import lazy
from chatmem.privacy.secret_names import (
    ASIDE,
    BARE_THINGS,
    BARE_THINGS_ZH,
    CLAUSE_END,
    CODE_NAMES,
    DATE,
    GENERIC_NOUNS,
    HARMLESS_CODES,
    HARMLESS_PASSES,
    KEYS_IN,
    KEYS_IN_ZH,
    LINK,
    LINK_WORDS_ZH,
    LINK_ZH,
    NETWORK_NAME,
    NOT_A_SECRET,
    OPENED_ZH,
    OPENS,
    TAKES,
    THING_NOUNS,
    THING_NOUNS_ZH,
    THINGS,
    THINGS_ZH,
    USES,
    USES_ZH,
    VALUE,
    VALUE_ZH,
    WA,
    WB,
)
from chatmem.privacy.word_lists import READ_AS_ASCII, WordGate, lowered_text, spelled

_DATE = lazy(DATE)
_CLAUSE_END = lazy(CLAUSE_END)


def digits_of(text: str) -> str:
    """The digits of `text`, in order ("12-34 56" -> "123456")."""
    return re.sub(r"\D", "", text)


VALUE_GROUPS = ("code", "quoted", "value", "quoted_zh", "value_zh", "value2")
"""The groups a pattern names its detail's value by (the quoted first: they hold spaces)."""


def value_of(match: re.Match[str]) -> tuple[str, str] | None:
    """(group name, value) of the named value a match holds."""
    for group in VALUE_GROUPS:
        if group in match.re.groupindex and match.group(group) is not None:
            return group, match.group(group)
    return None


def clause_before(text: str, start: int, reach: int, end: int | None = None) -> str:
    """The text from where the clause holding `start` begins (`reach` characters back at
    most) to `end` (`start` unless given): where a label before a value may stand."""
    window = text[max(0, start - reach):start if end is None else end]
    ends = list(_CLAUSE_END.finditer(window))
    return window[ends[-1].end():] if ends else window


# A code's value may be digit groups: "31 17 44", "12-34-56", "4471#".
_CODE_VALUE = (r"(?P<code>(?:\d{1,6}(?:[ -]\d{1,6}){1,5}|\d{3,12})[#*]?)"
               r"(?![A-Za-z0-9_-]|[.,]\d)")
# After a code said without a name ("punch in 4471", "the gate takes 1379#"): an end, or
# a word that goes on to where; "type 1000 words", "takes 200 people" say no code.
_CODE_ENDS = (r"(?=\s*(?:$|[.,;:!?)]|(?:at|on|in|into|and|then|to|for|when|before|after"
              r"|once|by|from)(?![A-Za-z])))")
_GAP = r"[^.,;:!?。，；：！？\n]"
_OTHERWISE: dict[str, re.Pattern[str]] = {
    # "the lockbox combo is 3-7-1-9", "Padlock combo 0427", "my phone's unlock code is …"
    "thing": lazy(
        rf"{WB}(?:{THINGS})(?:'s)?(?:\s+[A-Za-z]{{2,12}})?"
        rf"\s+(?:{THING_NOUNS}){WA}(?:{ASIDE}{LINK}|\s+){_CODE_VALUE}", re.IGNORECASE),
    # "the code to the back door is 8842", "the key for the wifi is …"
    "generic": lazy(
        rf"{WB}(?P<noun>{GENERIC_NOUNS}){WA}\s+(?:for|to|of|on|at|into)\s+{_GAP}{{0,25}}?"
        rf"{WB}(?:{THINGS}){WA}{_GAP}{{0,25}}?(?:,{_GAP}{{1,30}},)?{LINK}"
        rf"(?:{_CODE_VALUE}|{VALUE})",
        re.IGNORECASE),
    # "the Wi-Fi for guests is Sunflower2024!", 门禁是2580, wifi是Sunflower2024
    "bare": lazy(
        rf"{WB}(?:{BARE_THINGS}){WA}{ASIDE}{LINK}{VALUE}"
        rf"|(?:{BARE_THINGS_ZH})\s*(?:{LINK_WORDS_ZH})\s*{VALUE_ZH}", re.IGNORECASE),
    # "the pass is Z!ggy1988", "uses pw zebra7731"
    "pass": lazy(rf"{WB}(?P<noun>pass|pw){WA}{ASIDE}(?:{LINK}|\s+){VALUE}",
                       re.IGNORECASE),
    # "the side door opens with 7781"
    "opens": lazy(
        rf"{WB}(?:{THINGS}){WA}{_GAP}{{0,30}}?{WB}(?:{OPENS}){WA}\s+(?:it\s+|them\s+)?"
        rf"(?:with|using|by entering|by typing)\s+(?:{_CODE_VALUE}|{VALUE})", re.IGNORECASE),
    # "unlock the tablet with 192837", "get on the wifi with trout-Ladder-19"
    "uses": lazy(
        rf"{WB}(?:{USES}){WA}\s+{_GAP}{{0,25}}?{WB}(?:{THINGS}){WA}{_GAP}{{0,15}}?"
        rf"\s(?:with|using)\s+(?:{_CODE_VALUE}|{VALUE})", re.IGNORECASE),
    # "join HomeNet-5G using Lantern!88 as the key"
    "as": lazy(
        rf"{WB}(?:using|use|with)\s+{VALUE}\s+as\s+(?:the\s+|my\s+|our\s+|a\s+)?"
        rf"(?:password|pass|passcode|key|code|pin|combination|combo){WA}", re.IGNORECASE),
    # "type 660152 at the front gate to get in" (a THING or getting in in its sentence)
    # (then an end, or a word that goes on to where: "type 1000 words" types no code)
    "keys in": lazy(rf"{WB}(?:{KEYS_IN}){WA}\s+{_CODE_VALUE}{_CODE_ENDS}",
                          re.IGNORECASE),
    # "use 3344 to get into the side entrance"
    "use to": lazy(
        rf"{WB}use\s+(?:{_CODE_VALUE}|{VALUE})\s+to\s+(?:{USES}){WA}", re.IGNORECASE),
    # "the gate takes 1379#"
    "takes": lazy(
        rf"{WB}(?:{THINGS}){WA}{_GAP}{{0,20}}?{WB}(?:{TAKES}){WA}\s+{_CODE_VALUE}{_CODE_ENDS}",
        re.IGNORECASE),
    # "I set the garage keypad code to 1975"
    "set": lazy(
        rf"{WB}(?:set|changed?|reset|updated?)\s+{_GAP}{{0,30}}?"
        rf"(?:{CODE_NAMES}|(?:{THINGS})\s+(?:{THING_NOUNS})){WA}\s+to\s+{_CODE_VALUE}",
        re.IGNORECASE),
    # 保险箱的组合是24-08-61, 无线网的钥匙是Kq83mZ91, 门的PIN是4096
    "thing zh": lazy(rf"(?:{THINGS_ZH})的?{THING_NOUNS_ZH}{LINK_ZH}{VALUE_ZH}",
                           re.IGNORECASE),
    # 进门按4471#就行, 车锁转到0427就开了 (a door, lock, cabinet or box in its sentence)
    "keys in zh": lazy(rf"(?:{KEYS_IN_ZH})\s*{_CODE_VALUE}"),
    # 用lantern88连家里的无线网
    "uses zh": lazy(
        rf"用\s*(?P<value_zh>[!-~]{{3,64}}?)\s*(?:{USES_ZH})上?[^。！？\n]{{0,6}}?"
        rf"(?:{BARE_THINGS_ZH}|网络|网|门|锁|手机|电脑|平板)", re.IGNORECASE),
}
_IN_SENTENCE = {
    "keys in": lazy(rf"{WB}(?:{THINGS}){WA}|get(?:ting)? in", re.IGNORECASE),
    "keys in zh": lazy(rf"{OPENED_ZH}"),
}
_NETWORK_NAME = lazy(NETWORK_NAME, re.IGNORECASE)
_HARMLESS_CODE = lazy(rf"{WB}(?:{HARMLESS_CODES})\s+(?:code|number)?\s*$",
                            re.IGNORECASE)
_HARMLESS_PASS = lazy(rf"{WB}(?:{HARMLESS_PASSES})\s+$", re.IGNORECASE)
_SENTENCE_END = lazy(r"[.!?。！？；;\n]")


def looks_secret(value: str) -> bool:
    """A value that can only be a key or a password: letters with digits or symbols, or a
    long run of digits; not a date, an amount or a version."""
    if len(value) < 6 or _DATE.fullmatch(value) or re.fullmatch(r"v?\d+(?:\.\d+)+", value):
        return False
    letters = any(c.isalpha() for c in value)
    digits = any(c.isdigit() for c in value)
    symbols = any(c in "!@#$%^&*+=~?" for c in value)
    return (letters and (digits or symbols)) or (value.isdigit() and len(value) >= 8)


_HARMLESS_CODE_NAMED = lazy(rf"{WB}(?:{HARMLESS_CODES})\s+code{WA}", re.IGNORECASE)


def harmless_code_before(text: str, start: int) -> bool:
    """Whether a code named harmless ("model code", "promo code") comes just before `start`,
    in its clause: "the model code of the keypad is A2891" names no keypad code."""
    window = clause_before(text, start, 40, start + 1)
    return _HARMLESS_CODE.search(window[:-1]) is not None or \
        _HARMLESS_CODE_NAMED.search(window) is not None


def _sentence_around(text: str, start: int, end: int) -> str:
    before = [m.end() for m in _SENTENCE_END.finditer(text, 0, start)]
    after = _SENTENCE_END.search(text, end)
    return text[before[-1] if before else 0:after.start() if after else len(text)]


# Where the patterns led by a long alternation of words can start: one scan finds every such
# place, and each pattern is tried there alone (what finditer finds, a third of the time:
# the guard reads every new message).
_THING_STARTS = lazy(rf"(?={WB}(?:{THINGS}){WA})", re.IGNORECASE)
_SET_STARTS = lazy(rf"(?={WB}(?:set|changed?|reset|updated?)\s)", re.IGNORECASE)
_LED_BY = {"thing": _THING_STARTS, "opens": _THING_STARTS, "takes": _THING_STARTS,
           "set": _SET_STARTS}


_THING_FIRST_WORDS = frozenset(re.sub(r"[^a-z].*", "", text, flags=re.DOTALL)
                               for text in spelled(THINGS.lower()))
"""The first word of every thing a credential opens: where the scan needs to look."""
_WORD = lazy(r"(?<![A-Za-z])[A-Za-z]+")


def _thing_starts(text: str) -> list[int]:
    """Where a thing a credential opens is named: every word that begins one, checked
    there; a text with a letter IGNORECASE reads as ASCII is scanned whole instead."""
    if READ_AS_ASCII.intersection(text):
        return [m.start() for m in _THING_STARTS.finditer(text)]
    return [m.start() for m in _WORD.finditer(text)
            if m.group().lower() in _THING_FIRST_WORDS and _THING_STARTS.match(text, m.start())]


def _found_by(pattern: re.Pattern[str], starts: list[int], text: str) -> Iterator[re.Match[str]]:
    """What `pattern.finditer(text)` finds, where every match begins at one of `starts`
    (ascending): the leftmost match at or past the last one's end, each time."""
    end = 0
    for start in starts:
        if start >= end and (match := pattern.match(text, start)) is not None:
            yield match
            end = match.end()


# The word lists each pattern needs a word of, in an ASCII text; the "as" pattern's own.
_AS_NOUNS = r"password|pass|passcode|key|code|pin|combination|combo"
_GATES = {name: WordGate(*lists) for name, lists in {
    "thing": (THINGS, THING_NOUNS),
    "generic": (GENERIC_NOUNS, THINGS),
    "bare": (f"{BARE_THINGS}|{BARE_THINGS_ZH}",),
    "pass": ("pass|pw",),
    "opens": (THINGS, OPENS),
    "uses": (USES, THINGS),
    "as": ("using|use|with", _AS_NOUNS),
    "keys in": (KEYS_IN,),
    "use to": ("use", USES),
    "takes": (THINGS, TAKES),
    "set": ("set|changed?|reset|updated?", "to"),
    "thing zh": (THINGS_ZH, THING_NOUNS_ZH),
    "keys in zh": (KEYS_IN_ZH,),
    "uses zh": ("用",),
}.items()}


def pattern_matches(text: str) -> Iterator[tuple[str, re.Match[str]]]:
    """Each pattern's name and matches, as its own finditer would find them."""
    starts: dict[re.Pattern[str], list[int]] = {}
    lowered, held = lowered_text(text), dict[tuple[str, ...], bool]()
    for name, pattern in _OTHERWISE.items():
        if not _GATES[name].admits(lowered, held):
            continue
        led_by = _LED_BY.get(name)
        if led_by is not None and led_by not in starts:
            starts[led_by] = (_thing_starts(text) if led_by is _THING_STARTS
                              else [m.start() for m in led_by.finditer(text)])
        found = (pattern.finditer(text) if led_by is None
                 else _found_by(pattern, starts[led_by], text))
        for match in found:
            yield name, match


def named_otherwise(text: str) -> Iterator[tuple[bool, int, int, str]]:
    """(is a code, start, end, value) of each credential `text` names by the thing it opens
    or by what it does."""
    for name, match in pattern_matches(text):
        picked = value_of(match)
        if picked is None:
            continue
        group, value = picked
        if value.lower() in NOT_A_SECRET:
            continue
        code = re.fullmatch(r"[\d\s#*-]+", value) is not None
        if code and len(digits_of(value)) < 3:
            continue
        if not code and group != "quoted" and not looks_secret(value):
            continue  # "the wifi is down", "the door key is under the mat"
        if name == "bare" and _NETWORK_NAME.search(value):
            continue  # "the wifi is HomeNet-5G": a network's name, not its key
        if name in _IN_SENTENCE and not _IN_SENTENCE[name].search(
                _sentence_around(text, match.start(), match.end())):
            continue
        lead = text[max(0, match.start() - 24):match.start()]
        if harmless_code_before(text, match.start()) or (
                name == "pass" and _HARMLESS_PASS.search(lead)):
            continue  # "the promo code for the router", "my boarding pass"
        yield code, match.start(group), match.end(group), value
