"""What a slash command acts on: the engine of the current session, the consoles, one turn.

Ctrl-C while a reply streams cancels that reply only; errors are shown by the
loop as one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatmem import render
from chatmem.engine import Engine, TurnResult
from chatmem.memory.base import Context

if TYPE_CHECKING:
    from rich.console import Console

    from chatmem.providers.base import Provider


class Chat:
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


def strategy_label(engine: Engine, *, changed_only: bool = False) -> str:
    """`window k=3`: the strategy in use and its parameters, as a user would type them."""
    params = engine.strategy.describe_params(changed_only=changed_only)
    return f"{engine.strategy.name} {params}".strip()
