"""The chat loop: prompt-toolkit on a terminal, plain lines from a pipe.

Each line is one turn, or a slash command. Ctrl-C while a reply streams
cancels that reply only; Ctrl-C at the prompt clears the line; Ctrl-D or
/quit leaves. Errors are shown as one line and the loop goes on.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chatmem import render
from chatmem.engine import Engine, TurnResult
from chatmem.errors import ChatmemError, NotFound, UsageError
from chatmem.memory.base import Context

if TYPE_CHECKING:
    from rich.console import Console

    from chatmem.providers.base import Provider


@dataclass(frozen=True)
class SlashCommand:
    name: str
    usage: str
    help: str
    run: Callable[[Repl, list[str]], None]


SLASH: dict[str, SlashCommand] = {}


def slash(name: str, usage: str, help: str) -> Callable[[Callable[[Repl, list[str]], None]],
                                                       Callable[[Repl, list[str]], None]]:
    """Register a slash command; other modules add theirs the same way."""

    def register(func: Callable[[Repl, list[str]], None]) -> Callable[[Repl, list[str]], None]:
        SLASH[name] = SlashCommand(name, usage, help, func)
        return func

    return register


class QuitRepl(Exception):
    pass


class Repl:
    def __init__(
        self,
        engine: Engine,
        console: Console,
        errors: Console,
        *,
        show_prompt: bool = False,
        status: Console | None = None,
    ) -> None:
        self.engine = engine
        self.console = console
        self.errors = errors
        self.status = status or console
        """Banner, token lines, notices and prompt panels; the CLI sends them to stderr."""
        self.show_prompt = show_prompt
        self.last: TurnResult | None = None
        self.exit_code = 0
        """The worst error's exit code; a script piping lines in gets it at the end."""
        self.opened: list[Provider] = []
        """Providers the REPL opened itself (/model); closed when it ends."""
        self.raw_args = ""
        """The current slash command's arguments as typed, quotes and spacing kept."""

    # -- input ----------------------------------------------------------------

    def lines(self) -> Iterator[str]:
        if not sys.stdin.isatty():
            for line in sys.stdin:
                yield line.rstrip("\n")
            return
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import InMemoryHistory

        # Up-arrow history lives only as long as the process: a history file
        # would keep every message outside the database, beyond `sessions delete`.
        session: PromptSession[str] = PromptSession(history=InMemoryHistory())
        while True:
            try:
                yield session.prompt(f"{self.engine.session.name}> ")
            except KeyboardInterrupt:
                continue
            except EOFError:
                return

    def run(self, lines: Iterable[str] | None = None) -> None:
        self.status.print(render.notice_line(
            f"session {self.engine.session.name} · {strategy_label(self.engine)} · "
            f"{self.engine.provider.name}:{self.engine.provider.model} · /help for commands"
        ), soft_wrap=not self.status.is_terminal)
        try:
            self.loop(lines if lines is not None else self.lines())
        finally:
            for provider in self.opened:
                provider.close()

    def loop(self, lines: Iterable[str]) -> None:
        for line in lines:
            text = line.strip()
            if not text:
                continue
            try:
                if text.startswith("/"):
                    self.command(text)
                else:
                    self.turn(text)
            except QuitRepl:
                return
            except ChatmemError as e:
                self.exit_code = max(self.exit_code, int(e.exit_code))
                self.errors.print(render.error_line(str(e)), soft_wrap=True)

    # -- turns ------------------------------------------------------------------

    def turn(self, text: str) -> None:
        out = self.console.file

        def write(delta: str) -> None:
            # Straight to the file and flushed: nothing waits in a buffer to be
            # printed after Ctrl-C has cancelled the reply.
            out.write(delta)
            out.flush()

        result = self.engine.run_turn(text, on_delta=write)
        out.write("\n")
        out.flush()
        self.last = result
        if result.status == "cancelled":
            self.status.print(render.notice_line("(reply cancelled; it stays out of memory)"))
            return
        if self.show_prompt:
            self.status.print(self.prompt_panel(result.context, result.record.estimated_tokens))
        # In a pipe a status line stays one line, whatever the width, so scripts can read it.
        one_line = not self.status.is_terminal
        self.status.print(self.token_line(result), soft_wrap=one_line)
        for notice in result.notices:
            self.status.print(render.notice_line(notice), soft_wrap=one_line)

    def token_line(self, result: TurnResult) -> object:
        record = result.record
        return render.token_line(
            result.context,
            approximate=self.engine.counter.approximate,
            estimated=record.estimated_tokens,
            reported=record.prompt_tokens,
            latency_ms=record.latency_ms,
            strategy=strategy_label(self.engine, changed_only=True),
        )

    def prompt_panel(self, context: Context, estimated: int | None = None) -> object:
        return render.context_panel(context, approximate=self.engine.counter.approximate,
                                    estimated=estimated)

    def command(self, text: str) -> None:
        try:
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        name, args = words[0], words[1:]
        # A system prompt is prose: /system and /model take the arguments as typed.
        self.raw_args = text.strip()[len(text.split(maxsplit=1)[0]):].strip()
        command = SLASH.get(name)
        if command is None:
            raise NotFound(f"unknown command {name}; /help lists them")
        command.run(self, args)


def strategy_label(engine: Engine, *, changed_only: bool = False) -> str:
    """`window k=3`: the strategy in use and its parameters, as a user would type them."""
    params = engine.strategy.describe_params(changed_only=changed_only)
    return f"{engine.strategy.name} {params}".strip()


@slash("/help", "/help", "list the commands")
def _help(repl: Repl, args: list[str]) -> None:
    repl.console.print(render.help_table({c.usage: c.help for c in SLASH.values()}))


@slash("/quit", "/quit", "leave (Ctrl-D works too)")
def _quit(repl: Repl, args: list[str]) -> None:
    raise QuitRepl


# Usages are upper case: Rich would take a lower-case `[k=v ...]` for markup and hide it.
@slash("/strategy", "/strategy [NAME[:K=V,...] [K=V ...]]",
       "show or switch the memory strategy for the next turn; history stays intact")
def _strategy(repl: Repl, args: list[str]) -> None:
    from chatmem.memory.params import parse_param_pairs
    from chatmem.replay import parse_spec

    if args:
        params = parse_param_pairs(
            args[1:], lambda pair: f"parameter {pair!r} must be key=value, e.g. k=3")
        repl.engine.set_strategy(parse_spec(args[0], params).create())
    repl.console.print(render.notice_line(f"strategy: {strategy_label(repl.engine)}"))


@slash("/inspect", "/inspect [N]", "show the exact context of turn N (default: the last), part "
       "by part")
def _inspect(repl: Repl, args: list[str]) -> None:
    if len(args) > 1 or (args and not (args[0].isascii() and args[0].isdigit()
                                        and int(args[0]) >= 1)):
        raise UsageError(f"/inspect takes one turn number (1 or more), got {' '.join(args)!r}")
    record = repl.engine.store.turn(repl.engine.session.id, int(args[0]) if args else None)
    repl.console.print(repl.prompt_panel(Context.from_json(record.context),
                                         record.estimated_tokens))


@slash("/tokens", "/tokens [TEXT]",
       "show what the next turn would cost, by part (with TEXT as its input)")
def _tokens(repl: Repl, args: list[str]) -> None:
    # Without TEXT the input part is empty: the line shows what memory alone costs.
    context = repl.engine.build_context(" ".join(args))
    repl.console.print(render.token_line(
        context, approximate=repl.engine.counter.approximate,
        strategy=strategy_label(repl.engine, changed_only=True),
    ))


@slash("/show-prompt", "/show-prompt", "toggle the panel of the exact messages sent")
def _show_prompt(repl: Repl, args: list[str]) -> None:
    repl.show_prompt = not repl.show_prompt
    repl.console.print(render.notice_line(f"show prompt: {'on' if repl.show_prompt else 'off'}"))


# Slash commands that live in their own modules register themselves on import.
from chatmem import repl_facts, repl_session, repl_summary  # noqa: E402, F401
