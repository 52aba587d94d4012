"""Sensitive details a word names: a password, a code, a passphrase, a login, a passport,
or a number said to be a card, a phone, an id or an account ("my card number is …",
"密码是 …")."""

from __future__ import annotations

import re
from collections.abc import Iterable

from chatmem.lazy_patterns import lazy
from chatmem.privacy import credentials
from chatmem.privacy.credentials import digits_of, value_of
from chatmem.privacy.findings import (
    ACCOUNT,
    API_KEY,
    CARD,
    CODE,
    MARK_OPEN,
    NATIONAL_ID,
    PASSWORD,
    PHONE,
    Finding,
)
from chatmem.privacy.secret_names import (
    ASIDE,
    CODE_NAMES,
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

_NAMED_SECRET = lazy(
    rf"{WB}(?:{SECRET_WORDS}){WA}{ASIDE}{LINK}{VALUE}"
    rf"|(?:{SECRET_WORDS_ZH}){LINK_ZH}{VALUE_ZH}",
    re.IGNORECASE,
)
_NAMED_CODE = lazy(
    # "Gate code 7290#": a code needs no "is" (it is checked for digits below). The digit
    # is looked for as far as a value reaches (128 characters, a quote's mark before them):
    # looked for to the end of the run, "PIN:" said 20,000 times without a space cost every
    # "PIN" a read of the rest, 50 s of CPU for one 80 KB message (its value has no digit
    # either way, and is not one).
    rf"{WB}(?:{CODE_NAMES}){WA}(?:{ASIDE}{LINK}|\s+)(?=\S{{0,128}}\d){VALUE}"
    rf"|(?:{CODE_WORDS_ZH}){LINK_ZH}{VALUE_ZH}",
    re.IGNORECASE,
)
# Several words to the end of the sentence: "the passphrase is correct horse battery staple".
_NAMED_PHRASE = lazy(
    rf"{WB}(?:{PHRASE_WORDS}){WA}(?:{ASIDE}{LINK}|\s+)"
    r"(?:[\"“'‘「](?P<quoted>[^\"”'’」\n]{3,128})[\"”'’」]"
    r"|(?P<value>[^\s.,;!?。，；！？]+(?: [^\s.,;!?。，；！？]+){0,11}))",
    re.IGNORECASE,
)
# A user and a password together: "the login for the portal is ada / S3cr3t-Passw0rd",
# "log in as jdoe with hunter2024!".
_LOGIN_NAMES = r"log[ -]?in|sign[ -]?in|credentials?|user(?:name)?|account"
_LOGGING_IN = r"log(?:ging|s|ged)?[ -]?(?:in|on)"
_LOGIN_PAIR = lazy(
    rf"{WB}(?:{_LOGIN_NAMES}){WA}"
    r"[^.\n/]{0,40}?(?<![^\s:：])[\w.@+-]{2,64}\s*/\s*"
    r"(?P<value>[^\s/]{3,128}?)(?=[\s,;!?)]|[.](?:\s|$)|$)"
    rf"|{WB}(?:{_LOGGING_IN}){WA}\s+(?:as|with)\s+[\w.@+-]{{2,64}}\s+"
    r"(?:with|using|and|password)\s+(?P<value2>[^\s]{3,128}?)(?=[\s,;!?)]|[.](?:\s|$)|$)",
    re.IGNORECASE,
)
_PASSPORT = r"passport(?: number| no\.?| #)?"
_PASSPORT_ZH = r"护照(?:号码?)?"
_NAMED_PASSPORT = lazy(
    rf"(?:{WB}(?:{_PASSPORT}){WA}|{_PASSPORT_ZH})(?:{LINK}|{LINK_ZH})"
    r"(?P<value>[A-Z]{1,2}\d{6,9})(?![A-Za-z0-9])",
    re.IGNORECASE,
)
NUMBER_WORDS = {
    CARD: r"card(?: number| no\.?| #)?|银行卡号?|卡号|信用卡号?|储蓄卡号?|借记卡号?",
    PHONE: r"phone(?: number)?|mobile(?: number)?|cell(?: phone)?(?: number)?|tel(?:ephone)?"
           r"(?: number)?|电话(?:号码)?|手机(?:号码?)?|联系方式",
    NATIONAL_ID: r"national id(?: number)?|identity card(?: number)?|id card number"
                 r"|passport(?: number| no\.?)?|social security(?: number)?|ssn|tax id"
                 r"|身份证(?:号码?)?|护照(?:号码?)?",
    ACCOUNT: r"iban|bank account(?: number)?|account number|银行账号|银行账户|账号|帐号",
}
_NAMED_NUMBER = {
    kind: lazy(
        rf"(?:{WB}(?:{words}){WA})(?:{LINK}|{LINK_ZH})"
        r"(?P<value>\+?[\dXx][\dXx ()+-]{5,30}[\dXx])(?![A-Za-z0-9_-])",
        re.IGNORECASE,
    )
    for kind, words in NUMBER_WORDS.items()
}
MIN_NAMED_DIGITS = {CARD: 12, PHONE: 7, NATIONAL_ID: 8, ACCOUNT: 8}
_DATE = lazy(DATE)


# A key that is a service's (API, access, secret, private), not a network's or a door's.
_NAMES_A_KEY = lazy(r"(?:api|access|secret|private|client|ssh)[ _-]?key(?![A-Za-z])"
                          r"|token(?![A-Za-z])", re.IGNORECASE)


# Each pattern that names its detail, the words it needs one of (see WordGate), and its kind.
_NAMED = (
    (_NAMED_SECRET, WordGate(f"{SECRET_WORDS}|{SECRET_WORDS_ZH}"), PASSWORD),
    (_NAMED_CODE, WordGate(f"{CODE_WORDS}|{CODE_WORDS_ZH}"), CODE),
    (_NAMED_PHRASE, WordGate(PHRASE_WORDS), PASSWORD),
    (_LOGIN_PAIR, WordGate(f"{_LOGIN_NAMES}|{_LOGGING_IN}"), PASSWORD),
    (_NAMED_PASSPORT, WordGate(f"{_PASSPORT}|{_PASSPORT_ZH}"), NATIONAL_ID),
)
_NUMBERS = tuple((pattern, WordGate(NUMBER_WORDS[kind]), kind)
                 for kind, pattern in _NAMED_NUMBER.items())


def named_details(text: str) -> Iterable[Finding]:
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
            if len(digits_of(value)) >= MIN_NAMED_DIGITS[kind] and not _DATE.fullmatch(value):
                start = match.start("value")
                yield Finding(kind, start, start + len(value), value)
