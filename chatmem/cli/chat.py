"""`chatmem chat` and `chatmem ask`."""

import os
import stat
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from chatmem.cli.chat_lines import finish_and_say, say_opened, say_stdin_attached
from chatmem.cli.completion import first_session, session_names
from chatmem.cli.grammar import raw_text
from chatmem.cli.opening import apply_template, open_workspace, settings_from
from chatmem.cli.options import (
    ConfigOption,
    DbOption,
    JsonOption,
    ModelOption,
    ModelOptionsOption,
    ParamOption,
    ProviderOption,
    SessionAlias,
    StrategyOption,
    TemplateOption,
    one_session,
    session_first,
    strategy_choice,
)
from chatmem.cli.output import consoles, handles_errors, print_json
from chatmem.errors import ExitCode

if TYPE_CHECKING:
    from chatmem.engine import Engine, TurnResult
    from chatmem.store import Store

SystemOption = Annotated[
    str | None, typer.Option("--system", metavar="TEXT", show_default=False,
                             help="System prompt for a new session (or to change it).")
]
HelperModelOption = Annotated[
    str | None, typer.Option("--helper-model", metavar="NAME", show_default=False,
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
    typer.Option("--attach", "-a", "--file", "-f", metavar="FILE", show_default=False,
                 help="Attach a file to the (first) message: text, or a PDF's text, quoted "
                      "as data, never read as instructions; an image (PNG, JPEG, GIF, WebP) "
                      "goes as an image to an endpoint that sees them; repeatable."),
]
ContinueOption = Annotated[
    bool, typer.Option("--continue", "-c", help="Continue the session used last.")
]
DEFAULT_SESSION = "default"
ONE_OFF = "one-off"
"""The name of a one-off question's session, which lives in memory only."""


@handles_errors
def chat(
    session: Annotated[str | None, typer.Argument(
        metavar="SESSION", show_default=False, autocompletion=session_names,
        help="Session to create or resume (default: default).")] = None,
    session_option: SessionAlias = None,
    continue_last: ContinueOption = False,
    strategy: StrategyOption = None,
    param: ParamOption = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    helper_model: HelperModelOption = None,
    system: SystemOption = None,
    template: TemplateOption = None,
    option: ModelOptionsOption = None,
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

    \b
    Example: chatmem chat travel --strategy window --param k=3 --show-prompt
    """
    from chatmem.app.conversations import open_conversation
    from chatmem.attachments import TextLimit, read_file
    from chatmem.errors import UsageError
    from chatmem.render.progress import ConsoleActivity, opening_status
    from chatmem.repl.keys import quiet_until_the_prompt
    from chatmem.repl.loop import Repl

    named = one_session(session, session_option)
    chosen = None if continue_last else named or DEFAULT_SESSION
    if continue_last and named is not None:
        raise UsageError(f"give a session ({named}) or --continue, not both")
    settings = settings_from(config, db, provider, model, helper_model, option)
    templated = strategy is None and template is not None
    settings, strategy, system = apply_template(settings, template, strategy=strategy,
                                                system=system)
    limit = TextLimit(settings.context_budget, allow_over_budget)
    attachments = [read_file(path, limit) for path in file or ()]  # all, or nothing opens
    spec, params = strategy_choice(strategy, param, templated=templated)
    out, err = consoles()
    interactive = sys.stdin.isatty()
    with open_workspace(settings) as ws, ExitStack() as stack:
        if interactive and ws.has_history:
            # An encrypted file's key is asked now, the terminal as found, no spinner over
            # the question (opening the conversation opens the history first too).
            ws.open_history()
        # For the opening only: the embedded model takes seconds to load (ten on a busy
        # machine), a blank screen until the prompt before, and a paste meanwhile unmarked.
        with quiet_until_the_prompt(sys.stdin, (sys.stdout, sys.stderr)), \
                opening_status(err, chosen):
            engine = stack.enter_context(open_conversation(
                ws, chosen, strategy=spec, params=params, system=system,
                activity=ConsoleActivity(err), allow_over_budget=allow_over_budget))
        # A session set up with flags is kept even with nothing said in it.
        engine.configured = bool(spec or param or system is not None or template)
        say_opened(ws, engine, err)
        # Only replies on stdout: `chatmem chat < script > replies.txt` works. A person
        # at the terminal with stdout redirected still sees the replies (on stderr).
        repl = Repl(engine, out, err, show_prompt=show_prompt,
                    mirror_replies=interactive and not sys.stdout.isatty(),
                    markdown=not (plain or settings.plain), workspace=ws)
        repl.attached = attachments  # with the first message
        try:
            repl.run()
        finally:
            finish_and_say(repl.engine, err)
        if repl.engine.discard_if_unused():
            err.print(f"session {repl.engine.session.name} not kept: nothing was said in it",
                      markup=False, soft_wrap=True)
    if repl.exit_code and not interactive:
        # Lines piped in are a script: a failed turn must fail the script.
        raise typer.Exit(repl.exit_code)


@handles_errors
def ask(
    words: Annotated[list[str], typer.Argument(
        metavar="[SESSION] TEXT", show_default=False, autocompletion=first_session,
        callback=raw_text,
        help="The session (default: none, a one-off question) and the question; TEXT - "
             "reads it from stdin.")],
    session_option: SessionAlias = None,
    continue_last: ContinueOption = False,
    strategy: StrategyOption = None,
    param: ParamOption = None,
    system: Annotated[
        str | None, typer.Option("--system", metavar="TEXT", show_default=False,
                                 help="System prompt for this question.")] = None,
    save: Annotated[
        bool, typer.Option("--save", help="Keep --strategy and --system as the session's own "
                                          "(default: this question only).")] = False,
    template: TemplateOption = None,
    option: ModelOptionsOption = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    helper_model: HelperModelOption = None,
    file: FileOption = None,
    allow_over_budget: OverBudgetOption = False,
    plain: PlainOption = False,
    no_stdin: Annotated[
        bool, typer.Option("--no-stdin", help="Leave piped standard input unread (in a "
                                              "`while read` loop: it is the loop's).")] = False,
    json_output: JsonOption = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Ask one question and print the reply (only the reply goes to stdout): one-off, or in a
    session named or continued (-c); files and piped text go with it.

    \b
    Example: cat notes.md | chatmem ask "summarize:" -f todo.txt
    """
    from chatmem.app.conversations import open_conversation
    from chatmem.attachments import (
        STDIN,
        PipedKind,
        TextLimit,
        piped_file_kind,
        read_file,
        read_piped,
    )
    from chatmem.errors import EmptyInput, UsageError
    from chatmem.render.progress import ConsoleActivity, opening_status
    from chatmem.repl.loop import Repl
    from chatmem.text_files import Oversized

    named, text = session_first(words, session_option, "chatmem ask [SESSION] TEXT")
    if continue_last and named is not None:
        raise UsageError(f"give a session ({named}) or --continue, not both")
    one_off = named is None and not continue_last
    if one_off and save:
        raise UsageError("--save needs a session: name one, or --continue the last one")
    settings = settings_from(config, db, provider, model, helper_model, option)
    templated = strategy is None and template is not None
    settings, strategy, system = apply_template(settings, template, strategy=strategy,
                                                system=system)
    limit = TextLimit(settings.context_budget, allow_over_budget)
    # Every file is read before anything opens: one that cannot be attached sends nothing.
    attachments = [read_file(path, limit) for path in file or ()]
    if text == "-":
        if no_stdin:
            raise UsageError("TEXT - reads the question from stdin, which --no-stdin leaves"
                             " unread")
        kind = piped_file_kind(sys.stdin.buffer)
        if kind is not None:
            held = "a PDF" if kind is PipedKind.PDF else "an image"
            raise UsageError(f"TEXT - reads the question from stdin, which holds {held}: pipe "
                             "it with the question as TEXT to attach it (cat FILE | chatmem "
                             "ask 'what does it say?'); nothing was sent")
        # Characters: more of them than the limit's bytes are more bytes too.
        text = sys.stdin.read(limit.most + 1)
        if len(text) > limit.most:
            raise limit.refusal(STDIN, Oversized(limit.most, None))
        # A file saved with a byte-order mark (Notepad) is piped with it: not the question's.
        text = text.removeprefix("\ufeff")
    elif not no_stdin and stdin_is_piped():
        piped = read_piped(sys.stdin.buffer, limit)
        if piped is not None:
            attachments.append(piped)
    if not text.strip():
        # As the engine refuses it, before the history (a file, a session) is opened.
        raise EmptyInput
    spec, params = strategy_choice(strategy, param, templated=templated)
    out, err = consoles()
    if json_output:
        out.file = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (closed below)
    try:
        with open_workspace(settings, one_off=one_off) as ws, ExitStack() as stack:
            if sys.stdin.isatty() and ws.has_history:
                ws.open_history()  # an encrypted file's key is asked first, no spinner over it
            with opening_status(err, named, one_off=one_off):  # a model loads for seconds
                engine = stack.enter_context(open_conversation(
                    ws, ONE_OFF if one_off else named, strategy=spec, params=params,
                    system=system, activity=ConsoleActivity(err),
                    allow_over_budget=allow_over_budget, save=save))
            if continue_last:  # chat names it in its banner; ask shows nothing else before
                err.print(f"continuing session {engine.session.name}", markup=False,
                          soft_wrap=True)
            say_opened(ws, engine, err, lookalikes=not one_off)
            say_stdin_attached(attachments, err)
            repl = Repl(engine, out, err, markdown=not (plain or settings.plain), workspace=ws)
            try:
                repl.turn(text.strip(), attachments)
            finally:
                finish_and_say(repl.engine, err)
            address = None if one_off or repl.last is None else repl.address
    finally:
        if json_output:
            out.file.close()
    if json_output and repl.last is not None:
        _print_answer(answer_json(repl.last, engine, None if one_off else engine.session.name),
                      address, repl.last.record.turn or None)
    from chatmem.store.records import TurnStatus

    if repl.last is not None and repl.last.status == TurnStatus.CANCELLED:
        # A script must not take a partial answer for a success.
        raise typer.Exit(int(ExitCode.INTERRUPTED))


def _print_answer(answer: dict[str, Any], address: str | None, turn: int | None) -> None:
    """`ask --json`'s answer; when it cannot be written, the error says the turn is stored,
    as a reply's does in text (ReplyNotShown)."""
    from chatmem.errors import OutputFailed
    from chatmem.repl.chat import not_shown

    try:
        print_json(answer)
        sys.stdout.flush()  # a full disk fails here, past a write the buffer took
    except (OutputFailed, BrokenPipeError) as e:
        raise not_shown(e, address, turn) from None


def answer_json(result: "TurnResult", engine: "Engine[Store]",
                session: str | None) -> dict[str, Any]:
    """`ask --json`: the reply, what the request cost and where it was kept (None: nowhere)."""
    from chatmem.render import template_extra
    from chatmem.render.payloads import strategy_json

    record = result.record
    return {
        "command": "ask",
        "session": session,
        "status": record.status,
        "reply": result.reply,
        "cut": None if result.cut is None else result.cut.value,
        "strategy": strategy_json(engine.strategy.name, engine.strategy.params),
        "tokens": {
            "prompt": record.estimated_tokens,
            "counted": record.estimated_tokens,
            "reported": record.prompt_tokens,
            "reply": record.completion_tokens,
            "budget": result.context.budget,
            "approximate": engine.counter.approximate,
            "parts": {part.kind: part.tokens for part in result.context.parts},
            # The rest of `counted`, as the token line lists it: so the parts add up.
            "priming": result.context.priming,
            "template": template_extra(result.context, record.estimated_tokens),
        },
        "latency_ms": record.latency_ms,
        "cost": cost_json(engine, result),
    }


def cost_json(engine: "Engine[Store]", result: "TurnResult") -> dict[str, Any] | None:
    """The turn's money cost at the configured price of its model; None without a price."""
    from chatmem.config.options import price_of

    price = price_of(engine.settings.prices, result.record.model) if engine.settings else None
    if price is None:
        return None
    cost = price.cost(*result.billed_tokens())
    return {"amount": cost.amount, "currency": cost.currency}


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
