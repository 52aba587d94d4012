"""What /copy puts on the clipboard, and the two ways it gets there.

OSC 52 asks the terminal itself to set the clipboard, so it works over ssh and
in tmux with no tool installed; `clipboard_command` (e.g. `wl-copy`, `xclip
-selection clipboard`, `pbcopy`) is for terminals that ignore OSC 52.
"""

from __future__ import annotations

import base64
import re
import shlex
import subprocess

from chatmem.config.keys import program_environment
from chatmem.errors import UsageError

# CommonMark fences: up to three spaces, then three or more backticks or tildes; the block
# ends at a line of the same character, at least as long, or at the end of the text.
_OPENING = re.compile(r"^ {0,3}(`{3,}|~{3,})[^`]*$")
_UNPASTEABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 controls but tab and newline, DEL and C1: pasted, a terminal or a shell acts on them."""
COMMAND_TIMEOUT = 10.0
"""Seconds a clipboard tool may take; one that waits for ever must not hang the chat."""


def code_blocks(markdown: str) -> list[str]:
    """The fenced code blocks of `markdown`, in order, each without its fences."""
    blocks: list[str] = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        opening = _OPENING.match(lines[index])
        index += 1
        if opening is None:
            continue
        fence = opening.group(1)
        indent = len(lines[index - 1]) - len(lines[index - 1].lstrip(" "))
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        body: list[str] = []
        while index < len(lines) and not closing.match(lines[index]):
            line = lines[index]
            # A fence indented by n spaces takes up to n spaces off each of its lines.
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))):])
            index += 1
        index += 1  # past the closing fence
        blocks.append("\n".join(body) + ("\n" if body else ""))
    return blocks


def pick(reply: str, block: int | None) -> str:
    """The whole reply, or its `block`th code block (1 is the first)."""
    if block is None:
        return reply
    blocks = code_blocks(reply)
    if not 1 <= block <= len(blocks):
        have = f"has {len(blocks)} code block{'s' if len(blocks) != 1 else ''}"
        raise UsageError(f"/copy {block}: the last reply {have}")
    return blocks[block - 1]


def pasteable(text: str) -> tuple[str, int]:
    """`text` without the control characters a paste would act on, and how many were left
    out: a reply's `\x1b[201~` ends the shell's bracketed paste, so the lines after it run
    as typed. Tab and newline stay; a CRLF line end is kept as a newline (not counted)."""
    return _UNPASTEABLE.subn("", text.replace("\r\n", "\n"))


def osc52(text: str) -> str:
    """The escape sequence that asks the terminal to put `text` on the clipboard."""
    payload = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return f"\x1b]52;c;{payload}\x07"


def copy_with_command(command: str, text: str) -> None:
    """Give `text` (UTF-8) to `command`'s standard input; a failure says why in one line."""
    try:
        words = shlex.split(command)
        if not words:
            raise UsageError("clipboard_command is empty; unset it to copy through the terminal")
        done = subprocess.run(words, input=text.encode("utf-8"), env=program_environment(),
                              capture_output=True, timeout=COMMAND_TIMEOUT, check=False)
    except ValueError as e:  # shlex: an unclosed quote
        raise UsageError(f"clipboard_command {command!r} cannot be read: {e}") from None
    except OSError as e:
        raise UsageError(f"clipboard_command {command!r} could not run: {e.strerror}") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"clipboard_command {command!r} took over {COMMAND_TIMEOUT:g} s; "
                         "nothing copied") from None
    if done.returncode != 0:
        raise UsageError(f"clipboard_command {command!r} failed (exit {done.returncode}); "
                         "nothing copied")
