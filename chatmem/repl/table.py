"""The slash-command table: every REPL command registers here with its usage and help."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chatmem.repl.chat import Chat

Run = Callable[["Chat", list[str]], None]


@dataclass(frozen=True)
class SlashCommand:
    name: str
    usage: str
    help: str
    run: Run


SLASH: dict[str, SlashCommand] = {}


def slash(name: str, usage: str, help: str) -> Callable[[Run], Run]:
    """Register a slash command under `name`."""

    def register(func: Run) -> Run:
        SLASH[name] = SlashCommand(name, usage, help, func)
        return func

    return register


class QuitRepl(Exception):
    """Raised by /quit; the loop ends quietly."""
