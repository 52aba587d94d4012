"""RELIABILITY.md's exit-code table is the codes chatmem exits with: each named in ExitCode,
each name there in the table, the signals' codes included."""

from __future__ import annotations

import re
import signal
from pathlib import Path

from chatmem.errors import ExitCode

RELIABILITY = Path(__file__).resolve().parents[2] / "RELIABILITY.md"


def _table() -> dict[str, tuple[int, str]]:
    text = RELIABILITY.read_text(encoding="utf-8")
    section = text[text.index("## Exit codes"):]
    section = section[:section.index("\n## ", 1)]
    return {name: (int(code), when) for code, name, when in re.findall(
        r"^\| (\d+) \| ([A-Z_]+) \| (.+) \|$", section, re.MULTILINE)}


def test_the_table_names_every_exit_code_and_no_other() -> None:
    table = _table()
    assert {name: code for name, (code, _) in table.items()} == {
        name: int(code) for name, code in ExitCode.__members__.items()}  # aliases too


def test_a_stop_by_sigterm_or_sighup_and_a_refused_piped_command_are_in_the_table() -> None:
    """`replay --save-as` and `sessions import` exit 128 + the signal (cli.output.
    stopped_as_by_ctrl_c): the table had neither, nor a piped chat's refused /command."""
    codes = {code for code, _ in _table().values()}
    assert {128 + signal.SIGTERM, 128 + signal.SIGHUP} <= codes
    assert "slash command" in _table()["USAGE"][1]
