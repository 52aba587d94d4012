"""Passwords said in English the ways the sentence rules of chatmem.privacy.sensitive miss:
changed to a value ("I changed my password to Hunter2024x", "set the wifi password to …")
and the value first ("Hunter2024x is my password"). Their Chinese twins are in
chatmem.privacy.secrets_zh.

A sentence about a password reads the same way ("I changed my password to something
stronger", "that is my password manager"): the value must look like a secret
(credentials.looks_secret: letters with digits or symbols, or eight digits and more), or
be quoted. Each pattern is led by its words, bounded, and tried only where they stand.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from chatmem.lazy_patterns import lazy
from chatmem.privacy.credentials import looks_secret, value_of
from chatmem.privacy.secret_names import NOT_A_SECRET, VALUE

_NAMES = r"password|passcode|pass code|passphrase|pin|pwd"
_WHOSE = r"(?:(?:my|the|our|your|his|her|their|its|a|new)\s+){0,2}"
_CHANGED = lazy(
    rf"\b(?:changed|change|set|reset|updated|update|switched|made)\s+{_WHOSE}"
    rf"(?:[A-Za-z-]{{1,20}}\s+){{0,2}}?(?:{_NAMES})\s+(?:to|as|into)\s+{VALUE}",
    re.IGNORECASE)
_VALUE_FIRST = lazy(
    rf"(?<![!-~])(?P<value>[!-~]{{6,64}})\s+(?:is|was)\s+{_WHOSE}"
    rf"(?:[A-Za-z-]{{1,20}}\s+)?(?:{_NAMES})\b(?!\s+(?:manager|reset|hint|policy|rule))",
    re.IGNORECASE)


def passwords_en(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, value) of each password `text` says in one of these English ways."""
    lowered = text.lower()
    if not any(name in lowered for name in ("pass", "pin", "pwd")):
        return
    for match in _CHANGED.finditer(text):
        picked = value_of(match)
        if picked is None:
            continue
        group, value = picked
        if value.lower() in NOT_A_SECRET or not (group == "quoted" or looks_secret(value)):
            continue
        yield match.start(group), match.end(group), value
    for match in _VALUE_FIRST.finditer(text):
        value = match.group("value").strip("\"'“”‘’")
        if value.lower() not in NOT_A_SECRET and looks_secret(value):
            start = match.start("value") + match.group("value").index(value)
            yield start, start + len(value), value
