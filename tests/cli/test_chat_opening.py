"""`chatmem chat` at a terminal says what it waits for while the session and its model open.

The embedded model takes seconds to load (ten on a busy machine); the screen stayed blank
until the prompt, and a person pressed Ctrl-C or typed into nothing. Run at a
pseudo-terminal with the real SmolLM2-135M, as a person starts it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from in_a_terminal import at_a_terminal
from local_model import local_model_missing

pytestmark = pytest.mark.local

if (missing := local_model_missing()) is not None:
    pytest.skip(missing, allow_module_level=True)

OPENING = "opening session 旅行 and starting its model"


def shown_before_the_prompt(args: list[str], prompt: bytes, *, leave: bool = True) -> str:
    """What chatmem drew at a pseudo-terminal until `prompt` came; then it is left (Ctrl-D),
    or, not `leave`, ended (an ask's reply is not this test's, and a whole one took over a
    minute on a loaded machine)."""
    env = {**os.environ, "COLUMNS": "100", "LINES": "30", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    shown, _ = at_a_terminal([sys.executable, "-m", "chatmem", *args], env, seconds=90,
                             answers=[(prompt.decode(), "\x04")] if leave else (),
                             until=None if leave else prompt)
    assert prompt.decode() in shown, shown
    return shown[:shown.index(prompt.decode())]


def test_a_chat_says_it_opens_its_session_and_model_until_the_prompt(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[local]\nthreads = 1\n", encoding="utf-8")
    shown = shown_before_the_prompt(
        ["chat", "旅行", "--provider", "local", "--db", str(tmp_path / "h.db"),
         "--config", str(config)], "旅行>".encode())
    assert OPENING in shown
    # Transient: the spinner's line is erased before the session's first line is drawn.
    assert shown.rindex("\x1b[2K") > shown.rindex(OPENING)


def test_an_ask_says_it_starts_the_model_until_the_reply_is_awaited(tmp_path: Path) -> None:
    """`ask` loaded the model for seconds (20 on a busy machine) with nothing shown."""
    config = tmp_path / "config.toml"
    config.write_text("[local]\nthreads = 1\n", encoding="utf-8")
    shown = shown_before_the_prompt(
        ["ask", "你好", "--provider", "local", "--db", str(tmp_path / "h.db"),
         "--config", str(config)], b"waiting for", leave=False)
    assert "starting the model" in shown
    assert shown.rindex("\x1b[2K") > shown.rindex("starting the model")
