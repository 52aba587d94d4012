"""Text from a session, a model or a file never drives the terminal.

A session name, a message or a model's reply can hold escape sequences
(`\\x1b]0;PWNED\\x07` retitles the window, `\\x1b[2J` clears it). Every console
chatmem prints through shows control characters as visible symbols instead;
Rich's own styling and cursor control are untouched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

from chatmem.text import CONTROLS, code_point


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␛ for ESC, ␇ for BEL: visible, inert
    if code == 0x7F:
        return "\u2421"  # ␡
    return code_point(match.group())  # C1 and bidi controls: \u009b, \u202e


def printable(text: str) -> str:
    """`text` with control characters (escape sequences' first byte, C1 and bidi
    controls) made visible."""
    return CONTROLS.sub(_picture, text)


class SafeConsole(Console):
    """A Rich console that prints data's control characters as visible symbols."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(printable(segment.text), segment.style)
            for segment in buffer
        )
