"""Sensitive details: what memory never keeps unless the user asks for it with /remember.

Passwords and PINs, API keys and tokens, payment card numbers (Luhn-checked),
IBANs (mod-97-checked), national id numbers (the Chinese 18-digit id with its
check digit, US social security numbers) and phone numbers. The chat history
keeps the messages as they were said; what this module guards is *derived*
memory: extracted facts, drift-guard pins and summaries. Before a fact
extractor or summarizer sees the user's words, each detail is replaced by a
marker such as ⟦card number⟧, and whatever a model answers is checked again.

Precision matters as much as recall: every false alarm is a detail the user
wanted remembered and lost. So numbers are checked (Luhn, mod 97, the id's
check digit and birth date) where a format allows it, the rest needs a word
that names it ("password", "密码", "phone", "手机"), and order ids, dates and
amounts (ORD-7731, 2026-03-15, 五千元, $120) never match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

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
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(text: str) -> bool:
    compact = re.sub(r"[\s-]", "", text).upper()
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{11,30}", compact):
        return False
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in moved)
    return int(number) % 97 == 1


_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def cn_id_ok(text: str) -> bool:
    """An 18-character mainland id: region, a real birth date, sequence, ISO 7064 check."""
    if not re.fullmatch(r"[1-9]\d{16}[\dXx]", text):
        return False
    year, month, day = int(text[6:10]), int(text[10:12]), int(text[12:14])
    if not (1900 <= year <= 2099 and 1 <= month <= 12 and 1 <= day <= 31):
        return False
    total = sum(int(c) * w for c, w in zip(text[:17], _CN_ID_WEIGHTS, strict=True))
    return "10X98765432"[total % 11] == text[17].upper()


def ssn_ok(text: str) -> bool:
    area, group, serial = text.split("-")
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def card_ok(text: str) -> bool:
    digits = _digits(text)
    # Issuers' numbers start with 2–6 (Visa 4, Mastercard 2/5, Amex 3, UnionPay 62...):
    # a 13-digit millisecond timestamp or a long order number starting with 1 is not a card.
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_ok(digits)


# -- patterns ------------------------------------------------------------------

# ASCII boundaries: \b and \w count CJK as letters, so "是13812345678" would hide the number.
_NB = r"(?<![A-Za-z0-9_+-])"
_NA = r"(?![A-Za-z0-9_-])"
_WB = r"(?<![A-Za-z])"
_WA = r"(?![A-Za-z])"
# Digits in groups of 2–6 joined by single spaces or dashes (4111 1111 1111 1111), or one run.
_CARD = re.compile(rf"{_NB}\d{{2,6}}(?:[ -]\d{{2,6}}){{2,5}}{_NA}"
                   rf"|{_NB}(?<!\d[.,])\d{{13,19}}(?![A-Za-z0-9_-]|[.,]\d)")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?"
                   r"(?![A-Za-z0-9])")
_CN_ID = re.compile(r"(?<![A-Za-z0-9_])[1-9]\d{16}[\dXx](?![A-Za-z0-9_])")
_SSN = re.compile(rf"{_NB}\d{{3}}-\d{{2}}-\d{{4}}{_NA}")
_PHONE = re.compile(
    # +44 20 7946 0958, +86 138 1234 5678, +1 (415) 555-0132
    r"(?<![A-Za-z0-9_+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){1,2}(?:[ .-]?\d{2,4}){1,4}"
    r"(?![A-Za-z0-9_-])"
    # (415) 555-0132, 415-555-0132, 415.555.0132
    r"|(?<![A-Za-z0-9_(-])\(\d{3}\) ?\d{3}[-. ]\d{4}(?![A-Za-z0-9_-])"
    r"|(?<![A-Za-z0-9_.-])\d{3}[-.]\d{3}[-.]\d{4}(?![A-Za-z0-9_-])"
    # Mainland mobiles: 13812345678, 138 1234 5678, 138-1234-5678
    r"|(?<![A-Za-z0-9_])1[3-9]\d(?:[ -]?\d{4}){2}(?![A-Za-z0-9_])"
)
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

# A word that names the detail, then "is", ":", "是"... and the detail itself.
_LINK = r"\s*(?:is|was|=|:|：)\s*"
_LINK_ZH = r"\s*(?:是|为|為|:|：)?\s*"
_SECRET_WORDS = (
    r"password|passwd|passphrase|pass phrase|passcode|pass code|pwd"
    r"|secret key|client secret|private key|api[ _-]?key|access[ _-]?key"
    r"|(?:access|auth|bearer|api|refresh|session) token"
)
_CODE_WORDS = (
    r"pin(?: code| number)?|security code|verification code|one-time code|otp|cvv2?|cvc"
)
_SECRET_WORDS_ZH = r"支付密码|密码|口令|密钥|私钥|令牌"
_CODE_WORDS_ZH = r"PIN码|验证码|动态码|安全码"
# A quoted value may hold spaces ("open sesame"); a bare one ends at a space or a sentence end.
_VALUE = (r"(?:[\"“'‘「](?P<quoted>[^\"”'’」\n]{3,128})[\"”'’」]"
          r"|(?P<value>[^\s\"'“”‘’「」，。！？；、,;!?]{3,128}?)"
          r"(?=[\s，。！？；、,;!?)]|[.](?:\s|$)|$))")
_NAMED_SECRET = re.compile(
    rf"(?:{_WB}(?:{_SECRET_WORDS}){_WA}{_LINK}|(?:{_SECRET_WORDS_ZH}){_LINK_ZH}){_VALUE}",
    re.IGNORECASE,
)
_NAMED_CODE = re.compile(
    rf"(?:{_WB}(?:{_CODE_WORDS}){_WA}{_LINK}|(?:{_CODE_WORDS_ZH}){_LINK_ZH}){_VALUE}",
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
        rf"(?:{_WB}(?:{words}){_WA})(?:{_LINK}|{_LINK_ZH})"
        r"(?P<value>\+?[\dXx][\dXx ()+-]{5,30}[\dXx])(?![A-Za-z0-9_-])",
        re.IGNORECASE,
    )
    for kind, words in _NUMBER_WORDS.items()
}
_MIN_NAMED_DIGITS = {CARD: 12, PHONE: 7, NATIONAL_ID: 8, ACCOUNT: 8}
_DATE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}")


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
        if card_ok(match.group()):
            yield Finding(CARD, match.start(), match.end(), match.group())
    for match in _PHONE.finditer(text):
        if 7 <= len(_digits(match.group())) <= 15:
            yield Finding(PHONE, match.start(), match.end(), match.group())


def _named(text: str) -> Iterable[Finding]:
    for pattern, kind in ((_NAMED_SECRET, PASSWORD), (_NAMED_CODE, CODE)):
        for match in pattern.finditer(text):
            group = "quoted" if match.group("quoted") is not None else "value"
            value = match.group(group)
            if value.lower() in _NOT_A_SECRET or MARK_OPEN in value:
                continue
            if pattern is _NAMED_CODE and len(_digits(value)) < 3:
                continue  # "the PIN was reset"; a code is digits
            named = text[match.start():match.start(group)].lower()
            yield Finding(API_KEY if "key" in named or "token" in named else kind,
                          match.start(group), match.end(group), value)
    for kind, pattern in _NAMED_NUMBER.items():
        for match in pattern.finditer(text):
            value = match.group("value").strip()
            if len(_digits(value)) >= _MIN_NAMED_DIGITS[kind] and not _DATE.fullmatch(value):
                start = match.start("value")
                yield Finding(kind, start, start + len(value), value)


_NOT_A_SECRET = {
    # "my password is wrong", "the key was reset": words, not secrets.
    "wrong", "correct", "right", "incorrect", "invalid", "expired", "reset", "changed", "new",
    "old", "same", "different", "forgotten", "lost", "missing", "required", "needed", "set",
    "too", "not", "very", "still", "also", "the", "a", "an", "my", "your", "it", "that", "this",
    "for", "and", "but", "to", "of", "in", "on", "with", "manager", "protected", "strong",
    "weak", "long", "short", "what", "which", "please", "empty", "blank", "unknown", "none",
    "null", "secret", "private", "hidden", "safe", "saved", "stored", "encrypted",
    "错误", "正确", "不对", "忘了", "过期", "重置", "什么", "多少",
}


def findings(text: str) -> list[Finding]:
    """The sensitive details in `text`, in order, without overlaps (the longer one wins)."""
    found = sorted([*_unnamed(text), *_named(text)],
                   key=lambda f: (f.start, -(f.end - f.start)))
    kept: list[Finding] = []
    for finding in found:
        if kept and finding.start < kept[-1].end:
            if finding.end > kept[-1].end:  # overlapping: merge into the earlier one
                last = kept.pop()
                kept.append(Finding(last.kind, last.start, finding.end,
                                    text[last.start:finding.end]))
            continue
        kept.append(finding)
    return kept


def redact(text: str) -> str:
    """`text` with each sensitive detail replaced by a marker naming its kind."""
    found = findings(text)
    if not found:
        return text
    pieces, at = [], 0
    for finding in found:
        pieces += [text[at:finding.start], marker(finding.kind)]
        at = finding.end
    pieces.append(text[at:])
    return "".join(pieces)


def kinds(text: str) -> list[str]:
    """The kinds of sensitive detail in `text`, each once, in order."""
    return list(dict.fromkeys(f.kind for f in findings(text)))


_SECRET_KEY = re.compile(
    rf"{_WB}(?:{_SECRET_WORDS}|{_CODE_WORDS}){_WA}|{_SECRET_WORDS_ZH}|{_CODE_WORDS_ZH}",
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
                len(_digits(value)) >= _MIN_NAMED_DIGITS[kind]:
            return kind
    return None


def describe(found: Iterable[str]) -> str:
    """'card number, password' — each kind once."""
    return ", ".join(dict.fromkeys(found))
