"""How a command answers: its consoles, JSON on stdout, private files, and chatmem's
errors as one line on stderr with their exit code."""

from __future__ import annotations

import functools
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from chatmem.errors import ChatmemError, ExitCode, NoModelAtAll

if TYPE_CHECKING:
    from rich.console import Console

    from chatmem.plugin_entries import PluginProblem
    from chatmem.transcripts.format import Transcript


F = TypeVar("F", bound=Callable[..., Any])


def consoles() -> tuple[Console, Console]:
    from chatmem.render import make_console

    return make_console(), make_console(stderr=True)


def fail(message: str, code: ExitCode = ExitCode.USAGE) -> typer.Exit:
    from chatmem.render import error_line

    # soft_wrap: one line, however narrow the terminal, so scripts can match it.
    consoles()[1].print(error_line(message), soft_wrap=True)
    return typer.Exit(int(code))


def handles_errors(func: F) -> F:
    """Turn chatmem errors into one line on stderr and their exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        warn_about_plugins()
        on_ctrl_c = signal.getsignal(signal.SIGINT) if _on_main_thread() else None
        try:
            return func(*args, **kwargs)
        except NoModelAtAll as e:
            # Nothing chosen, nothing installed: the ways to get a model, not one line.
            from chatmem.render import no_model_panel

            consoles()[1].print(no_model_panel(str(e)))
            raise typer.Exit(int(e.exit_code)) from None
        except ChatmemError as e:
            from chatmem.render.errors import error_text

            raise fail(error_text(e) + listing_hint(e), e.exit_code) from None
        except KeyboardInterrupt:
            # Said, so an interrupt is told from a silent exit (a chat's cancelled reply has
            # said so already and never gets here).
            from chatmem.render import notice_line

            consoles()[1].print(notice_line("interrupted"), soft_wrap=True)
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        finally:
            if on_ctrl_c is not None:
                signal.signal(signal.SIGINT, on_ctrl_c)  # as `done_for_good` found it

    return wrapper  # type: ignore[return-value]


def done_for_good() -> None:
    """The command's work is committed and cannot be undone: from here on Ctrl-C is ignored
    while it says what it did. Else a rekey, erasure or saved replay that was done printed
    its line and exited 130, or said only "interrupted" (a script then retried a rekey with
    the old key). `handles_errors` puts Ctrl-C back as it was when the command ends."""
    if _on_main_thread():
        said: list[bool] = []

        def finishing(number: int, frame: object) -> None:
            if not said:  # once: a long vacuum must not look hung, nor print per key
                said.append(True)
                sys.stderr.write("(done already: Ctrl-C cannot undo it; finishing)\n")
                sys.stderr.flush()

        signal.signal(signal.SIGINT, finishing)


@contextmanager
def stopped_as_by_ctrl_c() -> Iterator[None]:
    """SIGTERM and SIGHUP (a `kill`, a closed terminal) stop the command as Ctrl-C does, so
    what it undoes on Ctrl-C is undone on these too; by default the process died where it
    stood (a replay's half-saved sessions stayed). The exit code stays the signal's, 128 +
    its number. A second one while the command stops is ignored: the undoing is short, and
    kill -9 remains."""
    if not _on_main_thread():
        yield
        return
    received: list[int] = []

    def stop(number: int, frame: object) -> None:
        if not received:
            received.append(number)
            raise KeyboardInterrupt

    numbers = [n for n in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if n is not None]
    previous = {n: signal.signal(n, stop) for n in numbers}
    try:
        yield
    except KeyboardInterrupt:
        if not received:
            raise
        # The shell's 128 + N, named (RELIABILITY's exit table lists them).
        code = ExitCode.HUNG_UP if received[0] == getattr(signal, "SIGHUP", None) \
            else ExitCode.TERMINATED
        raise typer.Exit(int(code)) from None
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


LISTING = {"sessions": "chatmem sessions list", "strategies": "chatmem strategies"}
"""The command that lists each kind of name (chatmem.names.Listed), by its value."""


def listing_hint(error: ChatmemError) -> str:
    """` (chatmem sessions list lists them)` after an error about a name not known, and for
    a strategy, the plugins that failed to load (`-s odd` while odd's plugin was skipped
    said only which names it takes, as of a typo)."""
    if error.listed is None:
        return ""
    from chatmem.errors import StrategyGone

    hint = f" (`{LISTING[error.listed.value]}` lists them)"
    # A session's strategy gone says which plugins failed to load itself (render.errors).
    unsaid = error.listed.value == "strategies" and not isinstance(error, StrategyGone)
    return hint + (skipped_plugins() if unsaid else "")


def skipped_plugins(value: str | None = None) -> str:
    """`--provider shout` (`value`) while shout's plugin fails to load said only which names
    it takes: the plugin skipped is named, its warning above says why."""
    from chatmem.config.options import shown_value
    from chatmem.plugin_entries import registered_by
    from chatmem.plugins import load_registries

    broken = [registered_by(p.plugin) for p in load_registries().problems
              if not p.plugin.builtin]
    if not broken:
        return ""
    said = "its warning says" if len(broken) == 1 else "their warnings say"
    which = "it" if value is None else shown_value(value)
    return (f"; {' and '.join(broken)} failed to load ({said} why): if {which} is a"
            " plugin's, mend that plugin")


def warn_about_plugins() -> None:
    """A plugin that cannot be loaded is one warning on stderr, printed when the registries
    load (commands load them only when they need them), never a failed command."""
    from chatmem.plugins import load_registries

    load_registries().listen(_warn_plugin_problem)


def _warn_plugin_problem(problem: PluginProblem) -> None:
    from chatmem.render.plugins import plugin_problem_line

    consoles()[1].print(plugin_problem_line(problem), soft_wrap=True)


def write_private(path: Path, text: str) -> None:
    """Write `text` to a file only its owner can read (0600): exports and reports hold
    the conversation, and a config file may come to hold a key in its base_url."""
    from chatmem.privacy.files import open_private

    with open_private(path) as f:
        f.write(text)


def print_json(data: Any) -> None:
    import json

    from chatmem.text import json_safe

    sys.stdout.write(json_safe(json.dumps(data, ensure_ascii=False, indent=2, default=str))
                     + "\n")


def stdin_transcript() -> Transcript:
    """The transcript piped in, for `-` as FILE (`cat x.jsonl | chatmem sessions import - x`)."""
    from chatmem.transcripts.reader import read_piped_transcript

    return read_piped_transcript(sys.stdin.buffer)


def warn_if_dated_back(transcript: Transcript) -> None:
    """One warning line when a transcript's times go back (Transcript.dated_back), and one
    when a time is at the calendar's edge (Transcript.undated)."""
    warnings = []
    if (undated := transcript.undated()) is not None:
        warnings.append((undated, f"ts {undated.ts!r} is at the calendar's edge (year 1 or"
                                  " 9999), where not every time zone can show it: read as undated"))
    if (back := transcript.dated_back()) is not None:
        warnings.append((back, "a message dated before one above it; recall by a named time"
                               " (\"last May\") reads a conversation in time order"))
    for message, said in warnings:
        where = f"{transcript.source}:{message.line}" if message.line else transcript.source
        consoles()[1].print(f"warning: {where}: {said}", style="yellow", soft_wrap=True)


def say_passed_over(passed: Iterable[tuple[str, str | None, str | None]]) -> None:
    """One line on stderr for each (session as named, its owner, strategy or None for the
    whole session) a listing, an erasure or an export passed over: a row another role's
    shared session holds that cannot be read."""
    from chatmem.render.facts import unread_pins_text

    for session, owner, strategy in passed:
        consoles()[1].print(unread_pins_text(session, owner or "its owner", strategy),
                            markup=False, soft_wrap=True)


def confirm_erasure(question: str) -> None:
    """Ask `question` (an erasure for good) and go on only on yes. A no said nothing before
    (exit 1, silence), and an answer that never came (a script, stdin closed) said only
    "aborted": either way the user is told nothing was erased and how not to be asked."""
    try:
        agreed = typer.confirm(question)
    except typer.Abort:
        agreed = False
        typer.echo("", err=True)  # the question's line ends: no answer came
    if not agreed:
        consoles()[1].print("nothing was erased (-y/--yes erases without asking)",
                            markup=False, soft_wrap=True)
        raise typer.Exit(1)
