"""Sensitive details found by their form alone, with no word naming them: API keys, and
numbers a checksum or a valid region confirms (cards, IBANs, national ids, US SSNs,
phone numbers), unless a label beside them says they are harmless (an order, a booking).
Both checking libraries (python-stdnum, phonenumbers) are imported on first use."""

from __future__ import annotations

import re
from collections.abc import Iterable

from chatmem.lazy_patterns import lazy
from chatmem.privacy.credentials import clause_before, digits_of
from chatmem.privacy.findings import API_KEY, CARD, IBAN, NATIONAL_ID, PHONE, Finding
from chatmem.privacy.secret_names import DATE, WA, WB

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
_CARD = lazy(rf"{_NB}\d{{2,6}}(?:[ -]\d{{2,6}}){{2,5}}{_NA}"
                   rf"|{_NB}(?<!\d[.,])\d{{13,19}}(?![A-Za-z0-9_-]|[.,]\d)")
_IBAN = lazy(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?"
                   r"(?![A-Za-z0-9])")
_CN_ID = lazy(r"(?<![A-Za-z0-9_])[1-9]\d{16}[\dXx](?![A-Za-z0-9_])")
_SSN = lazy(rf"{_NB}\d{{3}}-\d{{2}}-\d{{4}}{_NA}")
# What a number phonenumbers finds valid must also look like to count without a label:
# an international number, a trunk prefix with groups (020 7946 0958, 089 1234567,
# 03-3224-5000), a mainland mobile (138 0013 8000) or a North American layout.
_PHONE_SHAPE = lazy(
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
_LABEL = lazy(
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
_PHONE_CANDIDATE = lazy(
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


_API_KEY = lazy(
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
_DATE = lazy(DATE)


def unnamed_details(text: str) -> Iterable[Finding]:
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
