"""The slash-command table: every REPL command registers here with its usage, help and example.

The table is declarative enough for the loop to check arity (a command given
too many words gets its usage, never a silent guess), for /help to list every
command with an example, and for completion to know what each argument is.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from chatmem.errors import UsageError

if TYPE_CHECKING:
    from chatmem.repl.chat import Chat

Run = Callable[["Chat", list[str]], None]
Completes = Literal["strategy", "session", "fact", "turn", "summary", "path", "model",
                    "template", "attached"]
"""What a command's first argument is, for completion."""


@dataclass(frozen=True)
class SlashCommand:
    name: str
    usage: str
    """Typer/Click convention: `/fork SESSION [--at-turn N]`, metavars upper case."""
    help: str
    example: str
    run: Run
    min_args: int = 0
    max_args: int | None = 0
    """None: free text (a system prompt, a question), any number of words."""
    completes: Completes | None = None

    def usage_error(self, problem: str | None = None) -> UsageError:
        start = f"{self.name}: {problem}; " if problem else ""
        return UsageError(f"{start}usage: {self.usage}, e.g. {self.example}")

    def check_arity(self, args: list[str]) -> None:
        if len(args) < self.min_args:
            raise self.usage_error("missing argument")
        if self.max_args is not None and len(args) > self.max_args:
            extra = args[self.max_args:]
            plural = "s" if len(extra) > 1 else ""
            raise self.usage_error(f"unexpected argument{plural} {' '.join(extra)!r}")


SLASH: dict[str, SlashCommand] = {}


def slash(
    name: str, usage: str, help: str, *, example: str, args: tuple[int, int | None] = (0, 0),
    completes: Completes | None = None,
) -> Callable[[Run], Run]:
    """Register a slash command under `name`; `args` is (fewest, most) words, most None = any."""

    def register(func: Run) -> Run:
        SLASH[name] = SlashCommand(name, usage, help, example, func, args[0], args[1],
                                   completes)
        return func

    return register


SPACES = "".join(chr(c) for c in (*range(0x9, 0xE), *range(0x1C, 0x21), 0x85, 0xA0, 0x1680,
                                   *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F,
                                   0x3000))
"""What str.split() splits at: the ideographic space (U+3000) a Chinese or Japanese input
method types for the space bar among them."""


def split_words(text: str) -> list[str]:
    """A command line's words, as shlex.split reads them, but apart at every space str.split
    takes: `/file　会议纪要.md` typed in Chinese input mode is a command and its argument, as
    it is with an ASCII space. Quoted, a space stays as typed. ValueError: an open quote."""
    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace = SPACES
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def split_closed(text: str) -> list[str]:
    """split_words, a quote opening a word and left open read as closed (as Tab completes
    it): `/attach '会议 纪要.md` split at its space named a file '会议 and refused '纪要.md'.
    A quote inside a word is an apostrophe (`/forget mom's birthday`): words as typed."""
    return closed_words(text)[1]


def closed_words(text: str) -> tuple[str, list[str]]:
    """(the quote split_closed closed `text` with, "" if none, and its words)."""
    for close in ("", *open_quotes(text)):
        with suppress(ValueError):
            return close, split_words(text + close)
    return "", text.split()


def open_quotes(text: str) -> list[str]:
    """The quotes that open a word of `text` and are left open (what split_closed and Tab
    close); a quote inside a word is an apostrophe, not one."""
    return [q for q in ("'", '"') if re.search(rf"(?:^|\s){q}[^{q}]*$", text)]


def split_command(text: str) -> tuple[str, str]:
    """(`/name`, the rest as typed, untrimmed) of a command line, apart at its first space of
    any kind, as split_words takes them."""
    stripped = text.lstrip(SPACES)
    end = next((i for i, c in enumerate(stripped) if c in SPACES), len(stripped))
    return stripped[:end], stripped[end:]


class QuitRepl(Exception):
    """Raised by /quit; the loop ends quietly."""
