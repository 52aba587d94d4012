"""The letters Arabic and Hebrew write onto the word after them ("and", "with", "for",
"the"): a name written with one glued on is still that name (وأحمد is "and Ahmad", לדוד
"to David"), as a Korean name is with a particle glued after it."""

from __future__ import annotations

import re
import unicodedata

_TATWEEL = "\u0640"
_PREFIXES = (
    (re.compile("[\u0620-\u064a\u066e-\u06d3\u06fa-\u06ff]"),
     re.compile("(?=.)[\u0648\u0641]?(?:[\u0628\u0643\u0644]?\u0627\u0644|\u0644\u0644"
                "|[\u0628\u0643\u0644])?")),
    (re.compile("[\u05d0-\u05ea]"),
     re.compile("(?=.)\u05d5?(?:\u05e9|\u05db\u05e9|\u05de\u05e9|\u05dc\u05db\u05e9)?"
                "[\u05d4\u05d1\u05db\u05dc\u05de]?")),
)
"""(letters of the script, prefixes): Arabic و and ف (and), then ب (with), ك (like), ل
(for), ال (the) or لل; Hebrew ו (and), ש (that, also in כש, מש, לכש), then ה ב כ ל מ. A
letter of the script must start the mention after one."""


def is_prefix(glued: str, first: str) -> bool:
    """Whether `glued`, the letters (with their marks) standing before a word's letter
    `first` with nothing between, are prefixes of `first`'s script and nothing else."""
    letters = "".join(c for c in glued if unicodedata.category(c)[0] != "M" and c != _TATWEEL)
    return any(script.match(first) is not None and prefixes.fullmatch(letters) is not None
               for script, prefixes in _PREFIXES)
