"""cli.output: how a command's errors and Ctrl-C end it."""

from __future__ import annotations

import os
import signal

import typer
from cli_runner import RUNNER

from chatmem.cli.output import done_for_good, handles_errors


def test_a_ctrl_c_after_the_work_is_done_for_good_is_ignored_and_put_back_after() -> None:
    """rekey, forget-me, prune and a saved replay printed their success and exited 130, or
    said only "interrupted" over an erasure that was done (a script retried the rekey with
    the old key)."""
    before = signal.getsignal(signal.SIGINT)

    @handles_errors
    def erase() -> None:
        typer.echo("erasing 删除中")
        done_for_good()
        os.kill(os.getpid(), signal.SIGINT)  # while it says what it did
        os.kill(os.getpid(), signal.SIGINT)  # said once
        typer.echo("erased 201 sessions")

    @handles_errors
    def not_yet() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        typer.echo("never said")

    for command, code, said in ((erase, 0, "erasing 删除中\nerased 201 sessions\n"),
                                (not_yet, 130, "")):
        probe = typer.Typer()
        probe.command()(command)
        result = RUNNER.invoke(probe, [])
        assert (result.exit_code, result.stdout) == (code, said)
        assert signal.getsignal(signal.SIGINT) is before
        assert result.stderr == ("(done already: Ctrl-C cannot undo it; finishing)\n"
                                 if code == 0 else "interrupted\n")
