"""Running chatmem's commands in process, the one way the tests do it.

`invoke` returns Typer's `Result` for tests that look at the exit code, stdout and
stderr themselves; `output` asserts the exit code and returns the stream that
matters (stdout on success, stderr on failure); `repl` types lines into the REPL
over a store the test opened (its clock, its key). Passing `code` makes a wrong exit
code fail with the command and both streams, so the failure says what happened.

Typer's own runner turns the Typer app into a Click command on every call (about
35 ms of CPU for chatmem's, most of some tests' time); RUNNER builds chatmem's
once and has Typer's runner run that, in the same isolation and with the same Result.
"""

from __future__ import annotations

import io
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import typer
import typer.main
from registered import open_session
from rich.console import Console
from typer.testing import CliRunner, Result

from chatmem.cli import app
from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.repl.loop import Repl
from chatmem.store import Store


class Runner(CliRunner):
    """typer.testing.CliRunner over chatmem's app built into a Click command once per shape.

    CliRunner.invoke builds the command of the Typer app it is given. It is given a
    one-command app that costs nothing to build, whose command runs chatmem's built
    command on the arguments of this call: Typer's own invoke does the rest (isolation,
    exit codes, exceptions, the Result), nothing of it copied here.
    """

    def __init__(self) -> None:
        super().__init__()
        self._built: tuple[tuple[int, int], Any] | None = None
        self._call: tuple[Sequence[str], dict[str, Any]] = ((), {})
        self._runs_built = typer.Typer(add_completion=False)
        self._runs_built.command()(self._run_built)

    def command(self) -> Any:
        """chatmem's app as a Click command, built anew only when a command or group was
        registered since (a plugin's)."""
        shape = (len(app.registered_commands), len(app.registered_groups))
        if self._built is None or self._built[0] != shape:
            self._built = (shape, typer.main.get_command(app))
        return self._built[1]

    def _run_built(self) -> Any:
        args, extra = self._call
        cli = self.command()
        return cli.main(args=list(args), prog_name=extra.pop("prog_name", None) or cli.name,
                        **extra)

    def invoke(self, typer_app: typer.Typer, args: str | Sequence[str] | None = None,  # type: ignore[override]
               input: bytes | str | None = None, env: Mapping[str, str | None] | None = None,
               catch_exceptions: bool = True, color: bool = False, **extra: Any) -> Result:
        if typer_app is not app:
            return super().invoke(typer_app, args, input=input, env=env,
                                  catch_exceptions=catch_exceptions, color=color, **extra)
        self._call = (shlex.split(args) if isinstance(args, str) else args or (), extra)
        return super().invoke(self._runs_built, [], input=input, env=env,
                              catch_exceptions=catch_exceptions, color=color)


RUNNER = Runner()


def invoke(*args: str, input: str | None = None, env: Mapping[str, str | None] | None = None,
           width: int | None = None, code: int | None = None) -> Result:
    """Run `chatmem ARGS`; `width` sets the terminal's COLUMNS, `code` the expected exit."""
    environment = dict(env or {})
    if width is not None:
        environment["COLUMNS"] = str(width)
    result = RUNNER.invoke(app, list(args), input=input, env=environment or None)
    if code is not None:
        assert result.exit_code == code, (args, result.exit_code, result.stdout, result.stderr)
    return result


def output(*args: str, input: str | None = None, env: Mapping[str, str | None] | None = None,
           code: int = 0) -> str:
    """Run `chatmem ARGS` expecting exit `code`; its stdout on success, else its stderr."""
    result = invoke(*args, input=input, env=env, code=code)
    return result.stdout if code == 0 else result.stderr


def run(db: Path | str, *args: str, input: str | None = None,
        env: Mapping[str, str | None] | None = None, width: int | None = None,
        code: int | None = None) -> Result:
    """`chatmem ARGS --db DB`: a command on one history, a file or a PostgreSQL URL."""
    return invoke(*args, "--db", str(db), input=input, env=env, width=width, code=code)


def chat(db: Path | str, session: str, lines: str | Sequence[str], *extra: str,
         env: Mapping[str, str | None] | None = None, width: int | None = 200,
         code: int | None = None) -> Result:
    """`chatmem chat SESSION --db DB EXTRA`, typing `lines` (a string is typed as it is),
    on the scripted model unless EXTRA names a --provider or a --model."""
    text = lines if isinstance(lines, str) else "".join(f"{line}\n" for line in lines)
    if "--provider" not in extra and "--model" not in extra:
        extra = (*extra, "--provider", "scripted")
    return run(db, "chat", session, *extra, input=text, env=env, width=width, code=code)


def repl(store: Store | Path, session: str, lines: list[str], *, user: str = "default",
         strategy: str = "entity", user_facts: bool = False) -> tuple[str, str]:
    """Type `lines` into the REPL of `session` with the scripted model; (stdout, stderr).

    `store` is an open store (its clock, its key) or the path of a history file to open.
    """
    if not isinstance(store, Store):
        with Store(store) as opened:
            return repl(opened, session, lines, user=user, strategy=strategy,
                        user_facts=user_facts)
    out, err = io.StringIO(), io.StringIO()
    engine = open_session(store, Settings(system="Be brief.", user=user, user_facts=user_facts),
                          ScriptedProvider(), session, strategy=strategy)
    Repl(engine, Console(file=out, width=200), Console(file=err, width=200)).run(lines)
    return out.getvalue(), err.getvalue()
