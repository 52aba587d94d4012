"""Sensitive details: what memory never keeps unless the user asks for it with /remember.

Passwords and PINs, API keys and tokens, payment card numbers (Luhn-checked),
IBANs (mod-97-checked), national id numbers (the Chinese 18-digit id with its
check digit, US social security numbers) and phone numbers. The chat history
keeps the messages as they were said; what this module guards is *derived*
memory: extracted facts, drift-guard pins and summaries. Before a fact
extractor or summarizer sees the user's words, each detail is replaced by a
marker such as ⟦card number⟧, and whatever a model answers is checked again.

Precision matters as much as recall: every false alarm is a detail the user
wanted remembered and lost. So numbers are checked by maintained libraries
where a format allows it (python-stdnum: Luhn, IBAN mod 97, the Chinese id's
check digit, birth date and region, US SSN ranges; phonenumbers: phone numbers
valid in a region that matters), the rest needs a word that names it
("password", "locker code", "密码", "phone", "手机"), a label beside a number
decides (a "booking reference" or "tracking" number is not a card even when its
check digit passes), and order ids, dates and amounts (ORD-7731, 2026-03-15,
五千元, $120) never match. Both libraries are imported on first use, so
`chatmem --help` never loads them.

What one message cannot show (a value said after "what's the PIN?", a secret the
assistant repeats) is followed across messages by chatmem.privacy.secret_guard.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from chatmem.privacy import credentials, pasted, secrets_en, secrets_zh
from chatmem.privacy.credentials import clause_before, digits_of, value_of
from chatmem.privacy.secret_names import (
    ASIDE,
    CODE_WORDS,
    CODE_WORDS_ZH,
    DATE,
    LINK,
    LINK_ZH,
    NOT_A_PHRASE,
    NOT_A_SECRET,
    PHRASE_WORDS,
    SECRET_WORDS,
    SECRET_WORDS_ZH,
    VALUE,
    VALUE_ZH,
    WA,
    WB,
)
from chatmem.privacy.word_lists import WordGate, gated

MARK_OPEN, MARK_CLOSE = "⟦", "⟧"

CARD = "card number"
IBAN = "IBAN"
NATIONAL_ID = "national id"
PHONE = "phone number"
PASSWORD = "password"
CODE = "PIN or security code"
API_KEY = "API key"
REDACTED = "redacted detail"
"""A value holding a marker: the detail was never seen, so there is nothing to report."""


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int
    text: str


def marker(kind: str) -> str:
    return f"{MARK_OPEN}{kind}{MARK_CLOSE}"


# -- checks ------------------------------------------------------------------


def luhn_ok(digits: str) -> bool:
    from stdnum import luhn

    return bool(luhn.is_valid(digits))


def iban_ok(text: str) -> bool:
    from stdnum import iban

    return bool(iban.is_valid(text))


def cn_id_ok(text: str) -> bool:
    """An 18-character mainland id: region, a real birth date, sequence, ISO 7064 check."""
    from stdnum.cn import ric

    return bool(re.fullmatch(r"[1-9]\d{16}[\dXx]", text)) and bool(ric.is_valid(text))


def ssn_ok(text: str) -> bool:
    from stdnum.us import ssn

    return bool(ssn.is_valid(text))


def card_ok(text: str) -> bool:
    digits = digits_of(text)
    # Issuers' numbers start with 2–6 (Visa 4, Mastercard 2/5, Amex 3, UnionPay 62...):
    # a 13-digit millisecond timestamp or a long order number starting with 1 is not a card.
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_ok(digits)


PHONE_REGIONS = ("GB", "US", "CN", "DE", "FR", "IN", "JP")
"""Where a number without a country code is tried: one valid in any of them is a phone
number when its shape or a word beside it says so."""


# -- patterns ------------------------------------------------------------------

# ASCII boundaries: \b and \w count CJK as letters, so "是13812345678" would hide the number.
_NB = r"(?<![A-Za-z0-9_+-])"
_NA = r"(?![A-Za-z0-9_-])"
# Digits in groups of 2–6 joined by single spaces or dashes (4111 1111 1111 1111), or one run.
_CARD = re.compile(rf"{_NB}\d{{2,6}}(?:[ -]\d{{2,6}}){{2,5}}{_NA}"
                   rf"|{_NB}(?<!\d[.,])\d{{13,19}}(?![A-Za-z0-9_-]|[.,]\d)")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?"
                   r"(?![A-Za-z0-9])")
_CN_ID = re.compile(r"(?<![A-Za-z0-9_])[1-9]\d{16}[\dXx](?![A-Za-z0-9_])")
_SSN = re.compile(rf"{_NB}\d{{3}}-\d{{2}}-\d{{4}}{_NA}")
# What a number phonenumbers finds valid must also look like to count without a label:
# an international number, a trunk prefix with groups (020 7946 0958, 089 1234567,
# 03-3224-5000), a mainland mobile (138 0013 8000) or a North American layout.
_PHONE_SHAPE = re.compile(
    r"\+.+|\(\d.+|0\d+(?:[ .-]\d+)+|1[3-9]\d(?:[ -]?\d{4}){2}|\d{3}[-.]\d{3}[-.]\d{4}")
# Words beside a number that say what it is. The nearest one before it in its clause
# decides: "booking reference 4539 1488 0343 6467" is not a card, "order 415 555 2671"
# is not a phone, "call 089 1234567" is one.
_NOT_PRIVATE_LABEL = (
    r"booking|reservation|order|tracking|track|invoice|reference|ref|confirmation"
    r"|membership|member|customer|case|claim|loyalty|ticket|parcel|shipment|serial|receipt"
    r"|transaction|policy|flight|isbn|barcode|model|sku|postcode|zip"
    r"|预订|预定|订单|单号|编号|发票|快递单|运单|工单|会员|流水号|序列号|车次|航班"
)
_PRIVATE_LABEL = (
    r"card|visa|mastercard|amex|debit|credit|phone|mobile|cell|tel|telephone|call|ring|text"
    r"|dial|reach|ping|contact|whatsapp|fax|landline|iban|account"
    r"|卡号|银行卡|信用卡|电话|手机|打|联系|座机|账号|帐号"
)
_LABEL = re.compile(
    rf"(?P<harmless>{WB}(?:{_NOT_PRIVATE_LABEL}){WA})|(?P<private>{WB}(?:{_PRIVATE_LABEL}){WA})",
    re.IGNORECASE)
LABEL_REACH = 48
"""How many characters before a number its label may be."""


def _nearest_label(text: str, start: int) -> str | None:
    """"harmless" or "private": what the nearest label before `start`, in its clause, says."""
    labels = list(_LABEL.finditer(clause_before(text, start, LABEL_REACH)))
    return labels[-1].lastgroup if labels else None


def harmless_label_before(text: str, start: int) -> bool:
    """Whether a label before `start` names a harmless number (an order, a booking)."""
    return _nearest_label(text, start) == "harmless"


def private_label_before(text: str, start: int) -> bool:
    """Whether a label before `start` names a card, a phone or an account."""
    return _nearest_label(text, start) == "private"


# Digit groups a phone number could be (7 or more digits, single separators): only these
# are handed to phonenumbers, whose matcher costs milliseconds per region on any text.
_PHONE_CANDIDATE = re.compile(
    r"(?<![A-Za-z0-9_+.,/-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,5}\)[ .-]?)?\d{1,15}"
    r"(?:[ .-]\d{1,12}){0,5}(?![A-Za-z0-9_]|[.,/-]\d)")


def _valid_phone(raw: str) -> bool:
    import phonenumbers

    for region in (None,) if raw.startswith("+") else PHONE_REGIONS:
        try:
            number = phonenumbers.parse(raw, region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            return True
    return False


def _phones(text: str) -> Iterable[Finding]:
    """Phone numbers valid in one of PHONE_REGIONS, shaped like one or named as one."""
    for match in _PHONE_CANDIDATE.finditer(text):
        raw, start = match.group(), match.start()
        if not 7 <= len(digits_of(raw)) <= 15 or _DATE.fullmatch(raw):
            continue
        if harmless_label_before(text, start):
            continue
        if (_PHONE_SHAPE.fullmatch(raw) or private_label_before(text, start)) \
                and _valid_phone(raw):
            yield Finding(PHONE, start, match.end(), raw)


_API_KEY = re.compile(
    rf"{_NB}(?:"
    r"sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}"
    r"|(?:pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|hf_[A-Za-z0-9]{30,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    rf"){_NA}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
)

_NAMED_SECRET = re.compile(
    rf"{WB}(?:{SECRET_WORDS}){WA}{ASIDE}{LINK}{VALUE}"
    rf"|(?:{SECRET_WORDS_ZH}){LINK_ZH}{VALUE_ZH}",
    re.IGNORECASE,
)
_NAMED_CODE = re.compile(
    # "Gate code 7290#": a code needs no "is" (it is checked for digits below).
    rf"{WB}(?:{CODE_WORDS}){WA}(?:{ASIDE}{LINK}|\s+)(?=\S*\d){VALUE}"
    rf"|(?:{CODE_WORDS_ZH}){LINK_ZH}{VALUE_ZH}",
    re.IGNORECASE,
)
# Several words to the end of the sentence: "the passphrase is correct horse battery staple".
_NAMED_PHRASE = re.compile(
    rf"{WB}(?:{PHRASE_WORDS}){WA}(?:{ASIDE}{LINK}|\s+)"
    r"(?:[\"“'‘「](?P<quoted>[^\"”'’」\n]{3,128})[\"”'’」]"
    r"|(?P<value>[^\s.,;!?。，；！？]+(?: [^\s.,;!?。，；！？]+){0,11}))",
    re.IGNORECASE,
)
# A user and a password together: "the login for the portal is ada / S3cr3t-Passw0rd",
# "log in as jdoe with hunter2024!".
_LOGIN_NAMES = r"log[ -]?in|sign[ -]?in|credentials?|user(?:name)?|account"
_LOGGING_IN = r"log(?:ging|s|ged)?[ -]?(?:in|on)"
_LOGIN_PAIR = re.compile(
    rf"{WB}(?:{_LOGIN_NAMES}){WA}"
    r"[^.\n/]{0,40}?(?<![^\s:：])[\w.@+-]{2,64}\s*/\s*"
    r"(?P<value>[^\s/]{3,128}?)(?=[\s,;!?)]|[.](?:\s|$)|$)"
    rf"|{WB}(?:{_LOGGING_IN}){WA}\s+(?:as|with)\s+[\w.@+-]{{2,64}}\s+"
    r"(?:with|using|and|password)\s+(?P<value2>[^\s]{3,128}?)(?=[\s,;!?)]|[.](?:\s|$)|$)",
    re.IGNORECASE,
)
_PASSPORT = r"passport(?: number| no\.?| #)?"
_PASSPORT_ZH = r"护照(?:号码?)?"
_NAMED_PASSPORT = re.compile(
    rf"(?:{WB}(?:{_PASSPORT}){WA}|{_PASSPORT_ZH})(?:{LINK}|{LINK_ZH})"
    r"(?P<value>[A-Z]{1,2}\d{6,9})(?![A-Za-z0-9])",
    re.IGNORECASE,
)
ACCOUNT = "bank account number"
_NUMBER_WORDS = {
    CARD: r"card(?: number| no\.?| #)?|银行卡号?|卡号|信用卡号?|储蓄卡号?|借记卡号?",
    PHONE: r"phone(?: number)?|mobile(?: number)?|cell(?: phone)?(?: number)?|tel(?:ephone)?"
           r"(?: number)?|电话(?:号码)?|手机(?:号码?)?|联系方式",
    NATIONAL_ID: r"national id(?: number)?|identity card(?: number)?|id card number"
                 r"|passport(?: number| no\.?)?|social security(?: number)?|ssn|tax id"
                 r"|身份证(?:号码?)?|护照(?:号码?)?",
    ACCOUNT: r"iban|bank account(?: number)?|account number|银行账号|银行账户|账号|帐号",
}
_NAMED_NUMBER = {
    kind: re.compile(
        rf"(?:{WB}(?:{words}){WA})(?:{LINK}|{LINK_ZH})"
        r"(?P<value>\+?[\dXx][\dXx ()+-]{5,30}[\dXx])(?![A-Za-z0-9_-])",
        re.IGNORECASE,
    )
    for kind, words in _NUMBER_WORDS.items()
}
_MIN_NAMED_DIGITS = {CARD: 12, PHONE: 7, NATIONAL_ID: 8, ACCOUNT: 8}
_DATE = re.compile(DATE)


def _unnamed(text: str) -> Iterable[Finding]:
    for match in _API_KEY.finditer(text):
        yield Finding(API_KEY, match.start(), match.end(), match.group())
    for match in _IBAN.finditer(text):
        if iban_ok(match.group()):
            yield Finding(IBAN, match.start(), match.end(), match.group())
    for match in _CN_ID.finditer(text):
        if cn_id_ok(match.group()):
            yield Finding(NATIONAL_ID, match.start(), match.end(), match.group())
    for match in _SSN.finditer(text):
        if ssn_ok(match.group()):
            yield Finding(NATIONAL_ID, match.start(), match.end(), match.group())
    for match in _CARD.finditer(text):
        if card_ok(match.group()) and not harmless_label_before(text, match.start()):
            yield Finding(CARD, match.start(), match.end(), match.group())
    yield from _phones(text)


# A key that is a service's (API, access, secret, private), not a network's or a door's.
_NAMES_A_KEY = re.compile(r"(?:api|access|secret|private|client|ssh)[ _-]?key(?![A-Za-z])"
                          r"|token(?![A-Za-z])", re.IGNORECASE)


# Each pattern that names its detail, the words it needs one of (see WordGate), and its kind.
_NAMED = (
    (_NAMED_SECRET, WordGate(f"{SECRET_WORDS}|{SECRET_WORDS_ZH}"), PASSWORD),
    (_NAMED_CODE, WordGate(f"{CODE_WORDS}|{CODE_WORDS_ZH}"), CODE),
    (_NAMED_PHRASE, WordGate(PHRASE_WORDS), PASSWORD),
    (_LOGIN_PAIR, WordGate(f"{_LOGIN_NAMES}|{_LOGGING_IN}"), PASSWORD),
    (_NAMED_PASSPORT, WordGate(f"{_PASSPORT}|{_PASSPORT_ZH}"), NATIONAL_ID),
)
_NUMBERS = tuple((pattern, WordGate(_NUMBER_WORDS[kind]), kind)
                 for kind, pattern in _NAMED_NUMBER.items())


def _named(text: str) -> Iterable[Finding]:
    for pattern, kind, matches in gated(_NAMED, text):
        for match in matches:
            picked = value_of(match)
            if picked is None:
                continue
            group, value = picked
            if value.lower() in NOT_A_SECRET or MARK_OPEN in value:
                continue
            if pattern is _NAMED_CODE and (
                    len(digits_of(value)) < 3
                    or credentials.harmless_code_before(text, match.start())):
                continue  # "the PIN was reset"; a code is digits; "the model code of the keypad"
            if pattern is _NAMED_PHRASE and (
                    (len(value.split()) < 2 and len(value) < 8)
                    or value.split()[0].lower() in NOT_A_PHRASE):
                continue  # "the passphrase is long", "my passphrase needs to be longer"
            named = text[match.start():match.start(group)]
            yield Finding(API_KEY if _NAMES_A_KEY.search(named) else kind,
                          match.start(group), match.end(group), value)
    for _, kind, matches in gated(_NUMBERS, text):
        for match in matches:
            value = match.group("value").strip()
            if len(digits_of(value)) >= _MIN_NAMED_DIGITS[kind] and not _DATE.fullmatch(value):
                start = match.start("value")
                yield Finding(kind, start, start + len(value), value)




@lru_cache(maxsize=512)
def _found(text: str) -> tuple[Finding, ...]:
    # Cached: the same messages are checked by the summarizer, the drift guard's quotes
    # and the fact extractor, and the phone check runs a matcher per region.
    otherwise = [Finding(CODE if code else PASSWORD, start, end, value)
                 for code, start, end, value in credentials.named_otherwise(text)
                 if MARK_OPEN not in value]
    said = [Finding(PASSWORD, start, end, value) for start, end, value in
            (*pasted.pasted_passwords(text), *secrets_en.passwords_en(text),
             *secrets_zh.passwords_zh(text))
            if MARK_OPEN not in value]
    return tuple(merged(text, [*_unnamed(text), *_named(text), *otherwise, *said]))


def findings(text: str) -> list[Finding]:
    """The sensitive details in `text`, in order, without overlaps (the longer one wins)."""
    return list(_found(text))


def merged(text: str, found: Iterable[Finding]) -> list[Finding]:
    """`found` in order, overlapping findings merged into the earlier one."""
    ordered = sorted(found, key=lambda f: (f.start, -(f.end - f.start)))
    kept: list[Finding] = []
    for finding in ordered:
        if kept and finding.start < kept[-1].end:
            if finding.end > kept[-1].end:  # overlapping: merge into the earlier one
                last = kept.pop()
                kept.append(Finding(last.kind, last.start, finding.end,
                                    text[last.start:finding.end]))
            continue
        kept.append(finding)
    return kept


def masked(text: str, found: Sequence[Finding]) -> str:
    """`text` with each of `found` (in order, no overlaps) replaced by its marker."""
    if not found:
        return text
    pieces, at = [], 0
    for finding in found:
        pieces += [text[at:finding.start], marker(finding.kind)]
        at = finding.end
    pieces.append(text[at:])
    return "".join(pieces)


def redact(text: str) -> str:
    """`text` with each sensitive detail replaced by a marker naming its kind."""
    return masked(text, _found(text))


def kinds(text: str) -> list[str]:
    """The kinds of sensitive detail in `text`, each once, in order."""
    return list(dict.fromkeys(f.kind for f in findings(text)))


_MARKER = re.compile(f"{MARK_OPEN}([^{MARK_CLOSE}]+){MARK_CLOSE}")


def kinds_between(original: str, shown: str) -> list[str]:
    """The kinds of detail masked in `shown`, a masked copy of `original`."""
    before = {m.group(1) for m in _MARKER.finditer(original)}
    return list(dict.fromkeys(m.group(1) for m in _MARKER.finditer(shown)
                              if m.group(1) not in before))


_SECRET_KEY = re.compile(
    rf"{WB}(?:{SECRET_WORDS}|{PHRASE_WORDS}|{CODE_WORDS}){WA}"
    rf"|{SECRET_WORDS_ZH}|{CODE_WORDS_ZH}",
    re.IGNORECASE)


def fact_kind(key: str, value: str) -> str | None:
    """Why a fact (key → value) must not be stored unasked, or None when it may be.

    A key that names a secret ("wifi password", "密码") is enough; a key that names a
    number ("phone", "card number") needs a value with that many digits, so "phone:
    iPhone 15" stays a fact. A value that is itself a detail, or holds a marker left
    by redaction, never is one.
    """
    if MARK_OPEN in value or MARK_CLOSE in value:
        return REDACTED
    found = kinds(value) or kinds(f"{key}: {value}")
    if found:
        return found[0]
    if _SECRET_KEY.search(key):
        return PASSWORD
    for kind, words in _NUMBER_WORDS.items():
        if re.search(rf"(?:{words})", key, re.IGNORECASE) and \
                len(digits_of(value)) >= _MIN_NAMED_DIGITS[kind]:
            return kind
    return None


def describe(found: Iterable[str]) -> str:
    """'card number, password' — each kind once."""
    return ", ".join(dict.fromkeys(found))
