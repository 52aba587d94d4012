"""Status lines that fit the terminal by leaving out whole fields, the least important first.

A line cut at the right edge shows `$0.000` for `$0.0034`; a line wrapped by the
terminal leaves a lone word on a line of its own. The toolbar and the token line
are made of fields instead, each ranked: where the width runs out, the most
important fields are kept, each one only if it fits whole, so what is shown is
never a piece of a number or a word. A line whose every field matters (/tokens,
the parts of the next turn) flows onto more lines instead, between fields.
Printed with soft wrap (a pipe, a file), a line keeps every field, one line for
scripts to read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text


def _dot() -> Text:
    return Text(" · ", style="dim")


@dataclass(frozen=True)
class Field:
    text: Text
    rank: int
    """How much it matters: the higher ranks are kept first."""
    joint: Text = field(default_factory=_dot)
    """What joins it to the field shown before it; nothing when it comes first."""
    group: str | None = None
    """Neighbouring fields of one group (parts that add up to a total) go together."""


def fitted(fields: Sequence[Field], width: int | None) -> list[Field]:
    """The fields that fit in `width` cells, in their order (None: all of them).

    The most important go in first, each one (or group) if it still fits, so a
    long field that cannot fit does not take shorter, less important ones with it.
    """
    if width is None:
        return list(fields)
    units: list[list[int]] = []
    for index, this in enumerate(fields):
        if units and this.group is not None and fields[units[-1][-1]].group == this.group:
            units[-1].append(index)
        else:
            units.append([index])
    kept: list[int] = []
    for unit in sorted(units, key=lambda unit: -fields[unit[0]].rank):
        trial = sorted([*kept, *unit])
        if cell_len(joined([fields[i] for i in trial]).plain) <= width:
            kept = trial
    return [fields[i] for i in kept]


def flowed(fields: Sequence[Field], width: int) -> Text:
    """Every field, onto as many lines as `width` needs, each line ending at a joint:
    a field is never split (unless it is wider than a line by itself)."""
    out, used = Text(), 0
    for number, part in enumerate(fields):
        joint = part.joint if number else Text()
        # Room kept for the joint that would end this line if the next field went on the
        # next one: past the width, it wrapped onto a line of its own (a lone ·).
        after = (cell_len(fields[number + 1].joint.plain.rstrip())
                 if number + 1 < len(fields) else 0)
        if used and used + cell_len(joint.plain + part.text.plain) + after > width:
            out.append(joint.plain.rstrip(), style=joint.style)
            out.append("\n")
            used = 0
        else:
            out.append_text(joint)
            used += cell_len(joint.plain)
        out.append_text(part.text)
        used += cell_len(part.text.plain)
    return out


def joined(fields: Sequence[Field]) -> Text:
    out = Text()
    for number, part in enumerate(fields):
        if number:
            out.append_text(part.joint)
        out.append_text(part.text)
    return out


class FittedLine:
    """A line of fields fitted to the console it is printed on (`flow`: every field, on as
    many lines as it takes), and lines under it (warnings) that wrap as sentences do."""

    def __init__(self, fields: Sequence[Field], below: Sequence[Text] = (), *,
                 flow: bool = False) -> None:
        self.fields = list(fields)
        self.below = list(below)
        self.flow = flow

    @property
    def plain(self) -> str:
        """Every field, and the lines below: the line as a pipe gets it."""
        return "\n".join([joined(self.fields).plain, *(line.plain for line in self.below)])

    def text(self, width: int | None = None) -> Text:
        """The fields that fit `width` (None: all), with the lines below."""
        if width is not None and self.flow:
            out = flowed(self.fields, width)
        else:
            out = joined(fitted(self.fields, width))
        for line in self.below:
            out.append("\n")
            out.append_text(line)
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text(None if options.no_wrap else options.max_width)
