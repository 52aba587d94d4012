"""Multi-line messages: a message that opens with \"\"\" goes on until a line ends with \"\"\".

The same rule at the prompt (where Enter adds a line inside an open block) and
in a pipe (where the block's lines are joined into one message).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

FENCE = '"""'
ESCAPE = "//"
"""A line that opens with it is a message that opens with "/" (`//etc/hosts?` asks about
/etc/hosts), not a command; a block's message that opens with "/" is given it here."""


def as_message(text: str) -> str:
    """A block's text as the line the chat reads: a message, even when it opens with "/"."""
    return "/" + text if text.startswith("/") else text


def trimmed(text: str) -> str:
    """A multi-line message (an editor's, /edit and /edit-last) without the blank lines around
    it and trailing spaces, its first line's indentation kept: a block of code stays one."""
    text = text.rstrip()
    start = len(text) - len(text.lstrip())
    return text[text.rfind("\n", 0, start) + 1:]


def _whole_block(stripped: str) -> bool:
    """A stripped text that opens with \"\"\" and closes with another (not the same one)."""
    return stripped.startswith(FENCE) and len(stripped) >= 6 and stripped.endswith(FENCE)


def unfence(text: str) -> str:
    """The message inside a `\"\"\"` block typed at the prompt; other text as it is."""
    stripped = text.strip()
    if _whole_block(stripped):
        return as_message(stripped[3:-3].strip("\n"))
    return text


def join_blocks(lines: Iterable[str]) -> Iterator[str]:
    """Lines, with each `\"\"\"` … `\"\"\"` block joined into one message (pipes, scripts)."""
    block: list[str] | None = None
    for line in lines:
        if block is None:
            stripped = line.strip()
            if not stripped.startswith(FENCE):
                yield line
            elif _whole_block(stripped):
                yield as_message(stripped[3:-3])
            else:
                block = [stripped[3:]] if stripped[3:] else []
            continue
        if line.rstrip().endswith(FENCE):
            block.append(line.rstrip()[:-3])
            yield as_message("\n".join(block).strip("\n"))
            block = None
        else:
            block.append(line)
    if block is not None:
        # The input ended inside a block: send what came.
        yield as_message("\n".join(block).strip("\n"))


def open_block(text: str) -> bool:
    """True while the text is a `\"\"\"` block not yet closed: Enter adds a line."""
    stripped = text.strip()
    return stripped.startswith(FENCE) and not _whole_block(stripped)
