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

Details found by their form are chatmem.privacy.unnamed_details', those a word names
chatmem.privacy.named_details'; chatmem.privacy.findings holds a finding and its marker.
Full-width forms (ｈｕｎｔｅｒ２, １２３４) are read as ASCII ones (chatmem.privacy.widths).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from chatmem.lazy_patterns import lazy
from chatmem.privacy import credentials, pasted, secrets_en, secrets_zh
from chatmem.privacy.credentials import digits_of
from chatmem.privacy.findings import (
    CODE,
    MARK_CLOSE,
    MARK_OPEN,
    PASSWORD,
    REDACTED,
    Finding,
    masked,
    merged,
)
from chatmem.privacy.named_details import MIN_NAMED_DIGITS, NUMBER_WORDS, named_details
from chatmem.privacy.secret_names import (
    CODE_WORDS,
    CODE_WORDS_ZH,
    PHRASE_WORDS,
    SECRET_WORDS,
    SECRET_WORDS_ZH,
    WA,
    WB,
)
from chatmem.privacy.unnamed_details import unnamed_details
from chatmem.privacy.widths import folded
from chatmem.text_digests import by_digest


@by_digest
def _found(original: str) -> tuple[Finding, ...]:
    # Cached: the same messages are checked by the summarizer, the drift guard's quotes
    # and the fact extractor, of each strategy a catch-up or replay runs in turn, and the
    # phone check runs a matcher per region.
    text = folded(original)  # 门禁密码１２３４ is read as 门禁密码1234, each character in place
    otherwise = [Finding(CODE if code else PASSWORD, start, end, value)
                 for code, start, end, value in credentials.named_otherwise(text)
                 if MARK_OPEN not in value]
    said = [Finding(PASSWORD, start, end, value) for start, end, value in
            (*pasted.pasted_passwords(text), *secrets_en.passwords_en(text),
             *secrets_zh.passwords_zh(text))
            if MARK_OPEN not in value]
    found = merged(text, [*unnamed_details(text), *named_details(text), *otherwise, *said])
    return tuple(Finding(f.kind, f.start, f.end, original[f.start:f.end]) for f in found)


def findings(text: str) -> list[Finding]:
    """The sensitive details in `text`, in order, without overlaps (the longer one wins)."""
    return list(_found(text))


def redact(text: str) -> str:
    """`text` with each sensitive detail replaced by a marker naming its kind."""
    return masked(text, _found(text))


def kinds(text: str) -> list[str]:
    """The kinds of sensitive detail in `text`, each once, in order."""
    return list(dict.fromkeys(f.kind for f in findings(text)))


_MARKER = lazy(f"{MARK_OPEN}([^{MARK_CLOSE}]+){MARK_CLOSE}")


def kinds_between(original: str, shown: str) -> list[str]:
    """The kinds of detail masked in `shown`, a masked copy of `original`."""
    before = {m.group(1) for m in _MARKER.finditer(original)}
    return list(dict.fromkeys(m.group(1) for m in _MARKER.finditer(shown)
                              if m.group(1) not in before))


_SECRET_KEY = lazy(
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
    key = folded(key)
    found = kinds(value) or kinds(f"{key}: {value}")
    if found:
        return found[0]
    if _SECRET_KEY.search(key):
        return PASSWORD
    for kind, words in NUMBER_WORDS.items():
        if re.search(rf"(?:{words})", key, re.IGNORECASE) and \
                len(digits_of(value)) >= MIN_NAMED_DIGITS[kind]:
            return kind
    return None


def describe(found: Iterable[str]) -> str:
    """'card number, password' — each kind once."""
    return ", ".join(dict.fromkeys(found))
