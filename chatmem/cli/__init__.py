"""The `chatmem` command line: thin commands over the engine, store and render layers.

Heavy modules (openai, tiktoken, xllamacpp, the store) are imported inside the
commands, so `chatmem --help` stays fast.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperGroup, TyperOption

from chatmem.cli import (
    admin,
    chat,
    clients,
    config_cmd,
    facts,
    logs,
    models,
    privacy,
    sessions,
    strategies,
)
from chatmem.cli import index as index_cmd
from chatmem.cli import inspect as inspect_cmd
from chatmem.cli import replay as replay_cmd
from chatmem.cli.completion import completion_request, run_request
from chatmem.cli.core_files import no_core_files
from chatmem.cli.grammar import ChatmemTyper
from chatmem.cli.options import joined_model_options

# Typer words range and type errors the way pydantic does; say them the way chatmem does.
# Patterns, not compiled ones: only a usage error needs them (`re` caches what it compiles),
# and compiling seven at import would cost every `--help`.
_REWORDS = (
    (r"Input should be greater than or equal to (\S+)", r"must be \1 or more"),
    (r"Input should be less than or equal to (\S+)", r"must be \1 or less"),
    (r"Input should be greater than (\S+)", r"must be more than \1"),
    (r"Input should be less than (\S+)", r"must be less than \1"),
    (r"Input should be a valid integer.*", "must be a whole number"),
    (r"Input should be a valid number.*", "must be a number"),
    # Bytes that are not UTF-8 (argv decodes them as lone surrogates).
    (r"Input should be a valid string, unable to parse raw data as a unicode.*",
     "must be UTF-8 text; it holds bytes that are not"),
)


# Words a newcomer types for a command chatmem names otherwise, no spelling of which Typer's
# "did you mean" finds: `chatmem purge` or `chatmem search` said only "no such command".
_COMMANDS_BY_OTHER_NAMES = {
    "purge": "chatmem facts forget KEY --purge erases a value everywhere; chatmem sessions"
             " delete NAME one session; chatmem sessions prune old ones",
    "search": "chatmem logs -q TEXT", "grep": "chatmem logs -q TEXT",
    "find": "chatmem logs -q TEXT",
    "history": "chatmem logs", "list": "chatmem sessions list", "ls": "chatmem sessions list",
    "show": "chatmem sessions show NAME", "delete": "chatmem sessions delete NAME",
    "rm": "chatmem sessions delete NAME", "rename": "chatmem sessions rename OLD NEW",
    "fork": "chatmem sessions fork NAME NEW", "export": "chatmem sessions export NAME FILE",
    "import": "chatmem sessions import FILE", "prune": "chatmem sessions prune",
    "help": "chatmem --help, or chatmem COMMAND --help", "version": "chatmem --version",
    "forget": "chatmem facts forget KEY", "remember": "/remember in chatmem chat",
}


def _param_name(param: Any) -> str:
    if isinstance(param, TyperOption) and param.opts:
        return str(max(param.opts, key=len))
    return str(param.metavar or param.name or "").strip("{}").upper()


_SHOWN_VALUE = 16
"""The longest value a usage error repeats: a number's (a pasted key is longer, and stays
off the screen and the scrollback)."""


def _given(error: typer.BadParameter) -> str:
    """`, got '五'` for the value Typer's validation refused (its cause holds it), with the
    ASCII a full-width one stands for: an input method types ５, `-n ５` said only "must be
    a whole number", the one thing on the line that was right."""
    import unicodedata

    from chatmem.text import is_valid

    errors = getattr(error.__cause__, "errors", None)
    found = errors()[0].get("input") if callable(errors) and errors() else None
    if not isinstance(found, str) or len(found) > _SHOWN_VALUE or not is_valid(found):
        return ""  # bytes not UTF-8 (surrogate escapes) are said so by the caller, not shown
    ascii_form = unicodedata.normalize("NFKC", found)
    typed = f" (in ASCII: {ascii_form})" if ascii_form != found and ascii_form.isascii() else ""
    return f", got {found!r}{typed}"


def usage_error_line(error: typer.TyperException) -> str:
    """One line for a usage error: `--turn must be 1 or more`, `no such option --x`."""
    # Typer exports only TyperException and BadParameter of the error classes it raises, so
    # the others are told apart by their documented attributes (`param_type` is
    # MissingParameter's, `possibilities` NoSuchOption's), never imported from the Click
    # that Typer vendors privately.
    param = getattr(error, "param", None)
    if isinstance(error, typer.BadParameter) and param is not None:
        if hasattr(error, "param_type"):
            kind = "option" if isinstance(param, TyperOption) else "argument"
            return f"missing {kind} {_param_name(param)}"
        message = error.message
        for pattern, replacement in _REWORDS:
            message = re.sub(pattern, replacement, message)
        name = _param_name(param)
        if message.startswith("must"):
            return f"{name} {message}{_given(error)}"
        return f"{name}: {message}"
    if hasattr(error, "possibilities"):
        possibilities = getattr(error, "possibilities", None) or ()
        close = f" (did you mean {', '.join(sorted(possibilities))}?)" if possibilities else ""
        return f"no such option {getattr(error, 'option_name', '')}{close}"
    message = error.format_message().rstrip(".")
    message = message[:1].lower() + message[1:]
    ctx = getattr(error, "ctx", None)
    unknown = re.fullmatch(r"no such command '(.+)'", message)
    if unknown is not None:
        top = ctx is None or ctx.parent is None  # `chatmem config list` is not sessions'
        other = _COMMANDS_BY_OTHER_NAMES.get(unknown[1].lower()) if top else None
        where = ctx.command_path if ctx is not None else "chatmem"
        return message + (f" (try: {other})" if other
                          else f" (`{where} --help` lists the commands)")
    if message.startswith("got unexpected extra argument") and ctx is not None:
        # `logs trip`, `sessions export trip t.md`: the word is likely an option's value;
        # a lone word where the command takes --session is likely a session's name.
        # (The words are known only as the message lists them, space-joined: one word
        # alone is told so; more, or one with a space, is the help's to explain.)
        extra = re.fullmatch(r"got unexpected extra argument\(s\) \((\S+)\)", message)
        # (A command taking words of its own, `inspect SESSION`, has them all already.)
        params = ctx.command.params
        takes_session = any("--session" in getattr(p, "opts", ()) for p in params) and not any(
            getattr(p, "param_type_name", "") == "argument" for p in params)
        if takes_session and extra is not None and not extra[1].startswith("-"):
            word = extra[1] if re.fullmatch(r"[\w.@/-]+", extra[1]) else shlex.quote(extra[1])
            message += (f" (a session's name goes after --session: `{ctx.command_path} "
                        f"--session {word}`)")
        else:
            message += f" (`{ctx.command_path} --help` says what it takes)"
    return message


def _asks_for_help(error: typer.TyperException) -> bool:
    """`chatmem` or `chatmem sessions` alone: Typer raises NoArgsIsHelpError, which it does
    not export; Typer's own error printer recognises it by name in the same way."""
    return type(error).__name__ == "NoArgsIsHelpError"


class ChatmemGroup(TyperGroup):
    """Usage errors as one `error: …` line on stderr with exit 2; bare `chatmem` is help;
    `--show-completion` and `--install-completion` take the shell as an optional word."""

    def get_params(self, ctx: Any) -> list[Any]:
        from chatmem.cli.completion import HELP

        params = list(super().get_params(ctx))
        for param in params:
            if isinstance(param, TyperOption) and param.name in HELP:
                param.help = HELP[param.name]
        return params

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:  # --help's reader gone: as a command's, not click's exit 1
            _stdout_closed()

    def invoke(self, ctx: Any) -> Any:
        from chatmem.cli.streams import discard_unwritten
        from chatmem.errors import OutputFailed

        try:
            result = super().invoke(ctx)
            # Flushed here: a reader gone is then handled below, not a traceback at exit.
            sys.stdout.flush()
        except BrokenPipeError:
            _stdout_closed()
        except OutputFailed as e:  # the last flush, past the command's own error handling
            from chatmem.cli.output import fail

            discard_unwritten()
            raise fail(str(e), e.exit_code) from None
        except BaseException:
            discard_unwritten()  # the command has said what failed; the rest goes nowhere
            raise
        return result

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        args = joined_model_options(sys.argv[1:] if args is None else args)
        if standalone_mode and (request := completion_request(args)) is not None:
            from chatmem.cli.output import handles_errors

            try:
                handles_errors(run_request)(*request)  # an error is one line, exit 2
            except typer.Exit as e:
                sys.exit(e.exit_code)
            sys.exit(0)
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode,
                                windows_expand_args, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args,
                                **extra)
        except typer.TyperException as e:
            if _asks_for_help(e):
                typer.echo(e.format_message())
                sys.exit(0)
            from chatmem.render import error_line, make_console

            make_console(stderr=True).print(error_line(usage_error_line(e)), soft_wrap=True)
            sys.exit(e.exit_code)
        except typer.Abort:
            typer.echo("aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def _stdout_closed() -> None:
    """Whatever read stdout has gone (`| head`): exit quietly, as git and cat do (killed by
    SIGPIPE, 128 + 13), table and JSON alike; what is still buffered goes nowhere."""
    import contextlib
    import os

    from chatmem.errors import ExitCode

    devnull = os.open(os.devnull, os.O_WRONLY)
    # A stdout without a descriptor has nothing to flush into the closed pipe.
    with contextlib.suppress(OSError, ValueError):
        os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(int(ExitCode.STDOUT_CLOSED))


def _version(value: bool) -> None:
    if value:
        from chatmem import __version__

        print(f"chatmem {__version__}")
        raise typer.Exit()


app = ChatmemTyper(
    name="chatmem",
    cls=ChatmemGroup,
    help="A chat REPL whose memory you can choose, see and measure.\n\n"
         "\b\nExample: chatmem chat travel --strategy window:k=3 --show-prompt",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", is_eager=True,
                           callback=_version)
    ] = False,
) -> None:
    # Before any command reads a key or the history (and in the tests' CliRunner too).
    no_core_files()


app.command("chat", short_help="Chat in a named session; strategy and tokens shown each turn.")(
    chat.chat)
app.command("ask")(chat.ask)
app.command("strategies")(strategies.strategies)
app.command("logs", short_help="List recent turns across sessions; -q searches them.")(
    logs.logs)
app.command("models", short_help="List the models the endpoint serves, with their aliases.")(
    models.models)
app.command("inspect", short_help="Show the exact context of a turn, part by part.")(
    inspect_cmd.inspect)
app.command("replay", short_help="Replay a conversation under each strategy and compare.")(
    replay_cmd.replay_command)
app.command("eval", short_help="Score what each strategy remembers, and what it costs.")(
    replay_cmd.eval_command)
app.command("index", short_help="Embed stored messages so retrieval recalls by meaning.")(
    index_cmd.index)
app.command("mcp", short_help="Serve this history's memory over MCP (stdio or HTTP).")(
    clients.mcp)
app.command("serve", short_help="Serve an OpenAI-compatible API with chatmem's memory.")(
    clients.serve)
app.add_typer(sessions.app, name="sessions")
app.add_typer(config_cmd.app, name="config")
app.add_typer(facts.app, name="facts")
app.command("encrypt", short_help="Encrypt the history file (chatmem[encrypt]).")(privacy.encrypt)
app.command("decrypt", short_help="Turn an encrypted history file back into plain SQLite.")(
    privacy.decrypt)
app.command("rekey", short_help="Encrypt the history file under a new key.")(privacy.rekey)
app.command("forget-me", short_help="Erase a user profile: its sessions and facts.")(
    privacy.forget_me)
sessions.app.command("prune", short_help="Erase sessions idle past their retention, and "
                                         "expired facts.")(privacy.prune)
sessions.app.command("retention", short_help="Show or set how long a session is kept idle.")(
    privacy.retention)
sessions.app.command("share", short_help="Let another role read (or write) one of your "
                                         "sessions (PostgreSQL).")(admin.share)
sessions.app.command("unshare", short_help="Stop sharing one of your sessions with a role.")(
    admin.unshare)
sessions.app.command("copy", short_help="Copy sessions between a history file and a "
                                        "PostgreSQL one.")(admin.copy)
app.add_typer(admin.app, name="admin")


def main() -> None:
    try:
        _main()
    finally:
        _leave_the_local_model_reading()


def _leave_the_local_model_reading() -> None:
    """End now, as the command ends, when the embedded model may still be reading the prompt
    of a cancelled reply: Python's own ending would wait for the read (a chat left with
    Ctrl-D stayed 90-110 s after a 2,000-token prompt), and ending while it reads crashes.
    What the command stored is committed and its history closed by now."""
    local = sys.modules.get("chatmem.providers.local")
    if local is None or not local.left_reading():
        return
    ending = sys.exc_info()[1]
    if ending is not None and not isinstance(ending, SystemExit):
        return  # a traceback to show: Python's own ending shows it
    code = ending.code if isinstance(ending, SystemExit) else 0
    import os
    from contextlib import suppress

    with suppress(Exception):
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 0)


def _main() -> None:
    # Named as installed, also under `python -m chatmem`: shell completion keys on the name
    # (_CHATMEM_COMPLETE), and the usage line shows what a person types.
    from chatmem.cli.starting import say_while_starting, started
    from chatmem.cli.streams import discard_unwritten, prepare_streams
    from chatmem.cli.threads import say_plugin_threads_failing
    from chatmem.errors import OutputFailed

    prepare_streams()
    if (words := _starting_words(sys.argv[1:])) is not None:
        say_while_starting(words)
    say_plugin_threads_failing()
    try:
        try:
            app(prog_name="chatmem")
        finally:
            # Flushed here: what --help and --version print (while the options are read,
            # before any command's handling) fails below, not in a traceback at exit.
            sys.stdout.flush()
    except BrokenPipeError:
        _stdout_closed()
    except OutputFailed as e:
        from chatmem.cli.output import fail

        raise SystemExit(fail(str(e), e.exit_code).exit_code) from None
    finally:
        started()  # a command that printed nothing leaves no loading line behind
        discard_unwritten()


def _starting_words(args: Sequence[str]) -> str | None:
    """The command's words for the line shown while it loads (`eval`, `sessions import`);
    None where none may show: help, the version and completion print at once, and `mcp`
    speaks its protocol on stdin and stdout, where a person reads nothing."""
    import os

    if any(a in ("--help", "-h", "--version") for a in args) or any(
            k.startswith("_CHATMEM_COMPLETE") for k in os.environ):
        return None
    words: list[str] = []
    for arg in args:
        if arg.startswith("-") or len(words) == 2:
            break
        words.append(arg)
    if words[:1] == ["mcp"]:
        return None
    known = {c.name for c in app.registered_commands} | {
        g.name for g in app.registered_groups}
    if not words or words[0] not in known:
        return ""
    return " ".join(words[:2] if words[0] in {g.name for g in app.registered_groups}
                    else words[:1])
