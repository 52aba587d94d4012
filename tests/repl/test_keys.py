"""Keys typed ahead (chatmem.repl.keys), replayed into the next prompt."""

from __future__ import annotations

import threading
from pathlib import Path

from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.keys import Keys
from prompt_toolkit.output import DummyOutput
from test_repl_input import make_repl

from chatmem.repl.keys import as_draft, key_presses
from chatmem.repl.prompt import Prompt

COLOURED = "看 \x1b[31m红色\x1b[0m 文字".encode()
"""Text copied from a coloured log: colour codes around 红色."""
RESCUE_SECONDS = 10.0
"""When a replay fails, prompt-toolkit waits for Enter after each error; this often, the test
sends one. A replay that works is done long before, and no Enter is sent."""


def test_colour_codes_typed_ahead_are_no_mouse_events() -> None:
    keys = key_presses(COLOURED + b"\x1b[A")
    assert Keys.Vt100MouseEvent not in [key.key for key in keys]
    assert "".join(key.data for key in keys[:-1]) == "看 红色 文字"
    assert keys[-1].key == Keys.Up  # a real key after them still arrives as a key


def test_a_coloured_paste_typed_ahead_reaches_the_prompt_whole(tmp_path: Path) -> None:
    store, repl = make_repl(tmp_path / "k.db")
    with store, create_pipe_input() as typed, create_app_session(input=typed,
                                                                 output=DummyOutput()):
        prompt = Prompt(repl, DummyOutput())
        prompt.typed_ahead = key_presses(COLOURED + b"\r")
        done = threading.Event()

        def rescue() -> None:
            while not done.wait(RESCUE_SECONDS):
                typed.send_text("\r")

        threading.Thread(target=rescue, daemon=True).start()
        try:
            line = prompt.ask()
        finally:
            done.set()
    assert line == "看 红色 文字"


def test_keys_typed_during_a_reply_cut_by_ctrl_c_wait_as_one_unsent_draft(
        tmp_path: Path) -> None:
    store, repl = make_repl(tmp_path / "k.db")
    with store, create_pipe_input() as typed, create_app_session(input=typed,
                                                                 output=DummyOutput()):
        prompt = Prompt(repl, DummyOutput())
        # As the terminal sent them (Enter as Ctrl-J), a paste among them.
        prompt.typed_ahead = as_draft(key_presses(
            "first\n中文 second \x1b[200~粘贴\n两行\x1b[201~\n\n".encode()))
        typed.send_text("\r")  # the Enter pressed at the prompt, after the draft
        line = prompt.ask()
    assert line == "first\n中文 second 粘贴\n两行"
