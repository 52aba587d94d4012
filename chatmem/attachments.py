"""Files and piped text attached to one input: read whole, checked to be text.

The engine sends each as its own message, quoted as data (memory/quoting.py), in a
`files` part of the context that `inspect` shows with its tokens. A file that
cannot be attached is an error naming it, raised before anything is sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chatmem.errors import UsageError

STDIN = "standard input"
"""The name piped text is attached under."""


@dataclass(frozen=True)
class Attachment:
    name: str
    """The path as the user gave it, or STDIN."""
    text: str


def read_file(path: Path) -> Attachment:
    """The file at `path` as an attachment; UsageError naming it when it is not readable text."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file; nothing was sent") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a file; nothing was sent") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read it ({e.strerror}); nothing was sent") from None
    return Attachment(str(path), decode(str(path), data))


def decode(name: str, data: bytes) -> str:
    """`data` as text; a binary file (a NUL byte, or not UTF-8) is refused, not mangled."""
    if b"\x00" in data:
        raise UsageError(f"{name}: a binary file (it holds NUL bytes); only text can be "
                         "attached; nothing was sent")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{name}: not UTF-8 text (byte {e.start} is {data[e.start]:#04x}); "
                         "only text can be attached; nothing was sent") from None
    return text.removeprefix("\ufeff")  # a byte-order mark is not part of the text
