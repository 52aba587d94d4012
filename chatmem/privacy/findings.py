"""A sensitive detail as found in a text (`Finding`, of a kind such as CARD), and the marker
that replaces it (⟦card number⟧) where memory must not keep it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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
ACCOUNT = "bank account number"


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int
    text: str


def marker(kind: str) -> str:
    return f"{MARK_OPEN}{kind}{MARK_CLOSE}"


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
