"""`chatmem chat` and `chatmem ask`."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from chatmem.cli.common import (
    ConfigOption,
    DbOption,
    ModelOption,
    ParamOption,
    ProviderOption,
    SessionAlias,
    StrategyOption,
    consoles,
    handles_errors,
    one_session,
    open_engine,
    session_first,
    settings_from,
    strategy_choice,
    utf8_text,
)
from chatmem.errors import ExitCode

if TYPE_CHECKING:
    from rich.console import Console

    from chatmem.engine import Engine

SystemOption = Annotated[
    str | None, typer.Option("--system", metavar="TEXT", show_default=False, callback=utf8_text,
                             help="System prompt for a new session (or to change it).")
]
HelperModelOption = Annotated[
    str | None, typer.Option("--helper-model", metavar="NAME", show_default=False,
                             callback=utf8_text,
                             help="Model for summaries and fact extraction (default: the chat "
                                  "model; config helper_model).")
]
OverBudgetOption = Annotated[
    bool, typer.Option("--allow-over-budget",
                       help="Send an input that cannot fit the context budget, with a warning, "
                            "instead of refusing it.")
]
PlainOption = Annotated[
    bool, typer.Option("--plain", help="Print replies as sent, not as Markdown (config plain); "
                                       "replies in a pipe or a file are always plain.")
]
FileOption = Annotated[
    list[Path] | None,
    typer.Option("--file", "-f", metavar="FILE", show_default=False,
                 help="Attach a text file to the (first) message, quoted as data, never read "
                      "as instructions; repeatable."),
]
DEFAULT_SESSION = "default"


@handles_errors
def chat(
    session: Annotated[str | None, typer.Argument(
        metavar="SESSION", show_default=False,
        help="Session to create or resume (default: default).")] = None,
    session_option: SessionAlias = None,
    strategy: StrategyOption = None,
    param: ParamOption = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    helper_model: HelperModelOption = None,
    system: SystemOption = None,
    show_prompt: Annotated[
        bool, typer.Option("--show-prompt/--no-show-prompt",
                           help="Show the exact messages sent after each turn.")
    ] = False,
    file: FileOption = None,
    allow_over_budget: OverBudgetOption = False,
    plain: PlainOption = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Chat in a named session, with strategy and tokens shown each turn; piped lines are turns.

    Example: chatmem chat travel --strategy window --param k=3 --show-prompt
    """
    from chatmem.attachments import read_file
    from chatmem.render.progress import ConsoleActivity
    from chatmem.repl.loop import Repl

    session = one_session(session, session_option) or DEFAULT_SESSION
    attachments = [read_file(path) for path in file or ()]  # all readable, or nothing opens
    settings = settings_from(config, db, provider, model, helper_model)
    strategy, params = strategy_choice(strategy, param)
    out, err = consoles()
    with open_engine(settings, session, strategy=strategy, params=params, system=system,
                     activity=ConsoleActivity(err),
                     allow_over_budget=allow_over_budget) as engine:
        _print_notices(engine, err)
        # Only replies on stdout: `chatmem chat < script > replies.txt` works. A person
        # at the terminal with stdout redirected still sees the replies (on stderr).
        interactive = sys.stdin.isatty()
        repl = Repl(engine, out, err, show_prompt=show_prompt,
                    mirror_replies=interactive and not sys.stdout.isatty(),
                    markdown=not (plain or settings.plain))
        repl.attached = attachments  # with the first message
        repl.run()
    if repl.exit_code and not interactive:
        # Lines piped in are a script: a failed turn must fail the script.
        raise typer.Exit(repl.exit_code)


@handles_errors
def ask(
    words: Annotated[list[str], typer.Argument(
        metavar="[SESSION] TEXT", show_default=False,
        help="The session (default: default) and the question; TEXT - reads it from stdin.")],
    session_option: SessionAlias = None,
    strategy: StrategyOption = None,
    param: ParamOption = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    helper_model: HelperModelOption = None,
    file: FileOption = None,
    allow_over_budget: OverBudgetOption = False,
    plain: PlainOption = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Ask one question and print the reply (only the reply goes to stdout); files and piped
    text are attached to it.

    Example: cat notes.md | chatmem ask "summarize:" -f todo.txt
    """
    from chatmem.attachments import STDIN, Attachment, decode, read_file
    from chatmem.errors import UsageError
    from chatmem.render.progress import ConsoleActivity
    from chatmem.repl.loop import Repl

    session, text = _session_and_text(words, session_option)
    # Every file is read before anything opens: one that cannot be attached sends nothing.
    attachments = [read_file(path) for path in file or ()]
    if text == "-":
        text = sys.stdin.read()
    elif stdin_is_piped():
        piped = sys.stdin.buffer.read()
        if piped.strip():
            attachments.append(Attachment(STDIN, decode(STDIN, piped)))
    if not text.strip():
        # An empty turn would be sent and stored like any other.
        raise UsageError("nothing to ask (empty input)")
    settings = settings_from(config, db, provider, model, helper_model)
    strategy, params = strategy_choice(strategy, param)
    out, err = consoles()
    with open_engine(settings, session, strategy=strategy, params=params,
                     activity=ConsoleActivity(err),
                     allow_over_budget=allow_over_budget) as engine:
        _print_notices(engine, err)
        repl = Repl(engine, out, err, markdown=not (plain or settings.plain))
        repl.turn(text.strip(), attachments)
    if repl.last is not None and repl.last.status == "cancelled":
        # A script must not take a partial answer for a success.
        raise typer.Exit(int(ExitCode.INTERRUPTED))


def _session_and_text(words: list[str], option: str | None) -> tuple[str, str]:
    """`ask TEXT`, `ask SESSION TEXT` or `ask --session SESSION TEXT`."""
    session, text = session_first(words, option, "chatmem ask [SESSION] TEXT")
    return session or DEFAULT_SESSION, text


def stdin_is_piped() -> bool:
    """Whether stdin is a pipe or a file to read whole (`cat f | chatmem ask q`, `< f`).

    Not a terminal, and not a device such as /dev/null: a job started with an inherited
    stdin must not wait for input nobody will type.
    """
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError):
        return not sys.stdin.isatty()  # a stream without a descriptor: text handed to us
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def _print_notices(engine: Engine, err: Console) -> None:
    from chatmem.render import notice_line

    for notice in engine.notices:
        err.print(notice_line(notice), soft_wrap=True)
