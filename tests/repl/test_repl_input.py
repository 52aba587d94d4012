"""The interactive prompt keeps typed lines in memory only."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from chatmem.render import make_console
from chatmem.repl.loop import Repl


def test_typed_lines_are_not_written_to_a_history_file(
    make_engine, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine("window")
    repl = Repl(engine, make_console(), make_console(stderr=True))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    with create_pipe_input() as typed, create_app_session(input=typed, output=DummyOutput()):
        typed.send_text("my secret is ZEBRA-42\n")
        lines = repl.lines()
        assert next(lines) == "my secret is ZEBRA-42"
    # `sessions delete` erases a conversation for good only if no copy lives elsewhere.
    leftovers = [p for p in isolated_home.rglob("*") if p.is_file()]
    assert not [p for p in leftovers if b"ZEBRA-42" in p.read_bytes()]
