"""Running chatmem's commands in process, the one way the tests do it.

`invoke` returns Typer's `Result` for tests that look at the exit code, stdout and
stderr themselves; `output` asserts the exit code and returns the stream that
matters (stdout on success, stderr on failure); `repl` types lines into the REPL
over a store the test opened (its clock, its key). Passing `code` makes a wrong exit
code fail with the command and both streams, so the failure says what happened.
"""

from __future__ import annotations

import io
from collections.abc import Mapping

from rich.console import Console
from typer.testing import CliRunner, Result

from chatmem.cli import app
from chatmem.config.settings import Settings
from chatmem.engine import open_session
from chatmem.providers.scripted import ScriptedProvider
from chatmem.repl.loop import Repl
from chatmem.store import Store

RUNNER = CliRunner()


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


def repl(store: Store, session: str, lines: list[str], *, user: str = "default",
         strategy: str = "entity", user_facts: bool = False) -> tuple[str, str]:
    """Type `lines` into the REPL of `session` with the scripted model; (stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    engine = open_session(store, Settings(system="Be brief.", user=user, user_facts=user_facts),
                          ScriptedProvider(), session, strategy=strategy)
    Repl(engine, Console(file=out, width=200), Console(file=err, width=200)).run(lines)
    return out.getvalue(), err.getvalue()
