"""Text from outside (a terminal, a pipe, argv, a server, a file) made safe to store.

Python decodes bytes that are not UTF-8 in argv and stdin as lone surrogates
(surrogateescape), and JSON can spell one ("\\ud800"). SQLite cannot store
them and a terminal cannot print them: they become U+FFFD, the replacement
character, as any UTF-8 decoder would show them.
"""

from __future__ import annotations

import re

_SURROGATES = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def is_valid(text: str) -> bool:
    """Whether `text` encodes as UTF-8 (holds no lone surrogate)."""
    return _SURROGATES.search(text) is None


def valid_text(text: str) -> str:
    """`text` with every byte that was not UTF-8 (a lone surrogate) replaced by U+FFFD."""
    return text if is_valid(text) else _SURROGATES.sub(REPLACEMENT, text)
