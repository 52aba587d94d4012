"""cli.output: how a command's errors and Ctrl-C end it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from cli_runner import RUNNER, invoke

from chatmem.cli.output import done_for_good, handles_errors


def test_a_ctrl_c_after_the_work_is_done_for_good_is_ignored_and_put_back_after() -> None:
    """rekey, forget-me, prune and a saved replay printed their success and exited 130, or
    said only "interrupted" over an erasure that was done (a script retried the rekey with
    the old key)."""
    # As a terminal's Ctrl-C acts, whatever the process started with (an earlier test, or a
    # runner that starts pytest with SIGINT ignored): put back as found at the end.
    found = signal.signal(signal.SIGINT, signal.default_int_handler)
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
    signal.signal(signal.SIGINT, found)


@pytest.mark.parametrize("json_out", [(), ("--json",)], ids=["table", "json"])
def test_a_reader_that_leaves_early_ends_the_command_quietly_with_141(
        tmp_path: Path, json_out: tuple[str, ...]) -> None:
    """`sessions show big --all | head -1` exited 1 (Rich's broken-pipe exit; 1 says "not
    found") for a table and 0 or 1 for JSON: one exit code now, as git's, nothing said."""
    transcript = tmp_path / "big.jsonl"
    rows = [{"chatmem": 1, "title": "big"}]
    for i in range(200):
        rows += [{"role": "user", "content": f"问题 {i} " + "x" * 400},
                 {"role": "assistant", "content": f"answer {i} " + "y" * 400}]
    transcript.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                          encoding="utf-8")
    db = tmp_path / "h.db"
    assert invoke("sessions", "import", str(transcript), "big", "--db", str(db)).exit_code == 0
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}
    command = [sys.executable, "-m", "chatmem", "sessions", "show", "big", "--all", "--db",
               str(db), *json_out]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env) as shown:
        assert shown.stdout is not None and shown.stderr is not None
        assert shown.stdout.read(100)  # far less than the output, which fills the pipe
        shown.stdout.close()
        said = shown.stderr.read()
        assert shown.wait(timeout=60) == 141
    assert said == b""
