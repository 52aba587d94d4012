"""Text with NUL characters on PostgreSQL, whose text type cannot hold U+0000.

SQLite stores a NUL in a message as any other character (RELIABILITY.md: a NUL is imported
as text); PostgreSQL refuses the row. So the connection's adapters escape every string
bound as a parameter and restore every text value read back: the rest of chatmem reads and
writes the same strings on both backends (a chat, an import, an export, a copy either way).

The escape uses U+FDD0, a noncharacter (Unicode keeps those for a program's internal use):
a NUL is stored as U+FDD0 U+FDD1 and U+FDD0 itself as two of it, so every string reads
back exactly. Only a string holding one of the two changes form in the database; the word index
never sees either (neither is a letter or a digit).
"""

from __future__ import annotations

import re
from typing import Any

ESCAPE = "\ufdd0"
NUL_ESCAPED = ESCAPE + "\ufdd1"
_ESCAPED = re.compile(ESCAPE + "(.)", re.DOTALL)
TEXT_TYPES = ("text", "varchar", "bpchar")


def escaped(text: str) -> str:
    """`text` as PostgreSQL can store it."""
    if "\x00" not in text and ESCAPE not in text:
        return text
    return text.replace(ESCAPE, ESCAPE * 2).replace("\x00", NUL_ESCAPED)


def unescaped(text: str) -> str:
    """What `escaped` was given."""
    if ESCAPE not in text:
        return text
    return _ESCAPED.sub(lambda found: "\x00" if found[0] == NUL_ESCAPED else ESCAPE, text)


def keep_nul_characters(conn: Any) -> None:
    """Escape the strings `conn` sends and restore the text it reads (this connection only)."""
    from psycopg.types.string import StrDumperUnknown, TextLoader

    class EscapingStrDumper(StrDumperUnknown):
        def dump(self, obj: str) -> Any:
            return super().dump(escaped(obj))

    class UnescapingTextLoader(TextLoader):
        def load(self, data: Any) -> Any:
            text = super().load(data)
            return unescaped(text) if isinstance(text, str) else text

    conn.adapters.register_dumper(str, EscapingStrDumper)
    for name in TEXT_TYPES:
        conn.adapters.register_loader(name, UnescapingTextLoader)
