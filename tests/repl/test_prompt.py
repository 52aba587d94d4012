"""The prompt's own line: a session name of any width leaves room to type."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len
from test_terminal import Terminal, terminal  # noqa: F401  (the fixture)

from chatmem.render.terminal import prompt_label

LONG_NAME = "这是一个非常非常长的中文会话名字用来测试工具栏的宽度是否正确处理"


def test_a_name_wider_than_half_the_terminal_is_cut() -> None:
    assert prompt_label("旅行", 100) == "旅行> "
    for columns in (20, 30, 50, 100):
        label = prompt_label(LONG_NAME, columns)
        assert cell_len(label) <= columns // 2, (columns, label)
        assert label.endswith("…> ") and LONG_NAME.startswith(label.removesuffix("…> "))
    assert prompt_label(LONG_NAME, 140) == f"{LONG_NAME}> "


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_what_is_typed_shows_after_a_long_name_on_a_narrow_terminal(
    terminal: Terminal, tmp_path: Path  # noqa: F811
) -> None:
    terminal.start({"HOME": str(tmp_path), "TERM": "xterm", "PATH": os.environ["PATH"]},
                   columns=50)
    terminal.run(f"{sys.executable} -m chatmem chat {LONG_NAME} --db {tmp_path / 't.db'} "
                 "--provider scripted --plain")
    terminal.wait_for("…>")
    terminal.keys("能看见我打的字吗")
    terminal.wait_for(f"{prompt_label(LONG_NAME, 50)}能看见我打的字吗")
