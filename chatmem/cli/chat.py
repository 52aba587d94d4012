"""`chatmem chat` and `chatmem ask`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from chatmem.cli.common import (
    ConfigOption,
    DbOption,
    ModelOption,
    ParamOption,
    ProviderOption,
    StrategyOption,
    consoles,
    handles_errors,
    open_engine,
    settings_from,
    strategy_choice,
)
from chatmem.errors import ExitCode

if TYPE_CHECKING:
    from rich.console import Console

    from chatmem.engine import Engine

SystemOption = Annotated[
    str | None, typer.Option("--system", help="System prompt for a new session (or to change it).",
                             show_default=False)
]


@handles_errors
def chat(
    session: Annotated[str, typer.Argument(help="Session to create or resume.")] = "default",
    strategy: StrategyOption = None,
    param: ParamOption = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    system: SystemOption = None,
    show_prompt: Annotated[
        bool, typer.Option("--show-prompt/--no-show-prompt",
                           help="Show the exact messages sent after each turn.")
    ] = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Chat in a named session, with strategy and tokens shown each turn; piped lines are turns.

    Example: chatmem chat travel --strategy window --param k=3 --show-prompt
    """
    from chatmem.repl.loop import Repl

    settings = settings_from(config, db, provider, model)
    strategy, params = strategy_choice(strategy, param)
    out, err = consoles()
    with open_engine(settings, session, strategy=strategy, params=params,
                     system=system) as engine:
        _print_notices(engine, err)
        # Only replies on stdout: `chatmem chat < script > replies.txt` works.
        repl = Repl(engine, out, err, show_prompt=show_prompt, status=err)
        repl.run()
    if repl.exit_code and not sys.stdin.isatty():
        # Lines piped in are a script: a failed turn must fail the script.
        raise typer.Exit(repl.exit_code)


@handles_errors
def ask(
    text: Annotated[str, typer.Argument(help="The question; - reads it from stdin.")],
    session: Annotated[str, typer.Option("--session", help="Session to use.")] = "default",
    strategy: StrategyOption = None,
    param: ParamOption = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Ask one question in a session and print the reply.

    Example: echo "what did I order?" | chatmem ask - --session support
    """
    from chatmem.errors import UsageError
    from chatmem.repl.loop import Repl

    if text == "-":
        text = sys.stdin.read()
    if not text.strip():
        # An empty turn would be sent and stored like any other.
        raise UsageError("nothing to ask (empty input)")
    settings = settings_from(config, db, provider, model)
    strategy, params = strategy_choice(strategy, param)
    out, err = consoles()
    with open_engine(settings, session, strategy=strategy, params=params) as engine:
        _print_notices(engine, err)
        repl = Repl(engine, out, err, status=err)
        repl.turn(text.strip())
    if repl.last is not None and repl.last.status == "cancelled":
        # A script must not take a partial answer for a success.
        raise typer.Exit(int(ExitCode.INTERRUPTED))


def _print_notices(engine: Engine, err: Console) -> None:
    from chatmem.render import notice_line

    for notice in engine.notices:
        err.print(notice_line(notice), soft_wrap=True)
