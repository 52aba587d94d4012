"""Running chatmem's commands in process, the one way the tests do it.

`invoke` returns Typer's `Result` for tests that look at the exit code, stdout and
stderr themselves; `output` asserts the exit code and returns the stream that
matters (stdout on success, stderr on failure). Passing `code` makes a wrong exit
code fail with the command and both streams, so the failure says what happened.
"""

from __future__ import annotations

from collections.abc import Mapping

from typer.testing import CliRunner, Result

from chatmem.cli import app

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
