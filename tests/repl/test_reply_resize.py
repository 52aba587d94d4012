"""A terminal resized while a reply streams, in a real terminal (tmux).

The reply is drawn as Markdown and redrawn in place as it grows: each redraw goes back up
the rows the last one filled. rich.markdown padded every line with blanks to the width, so
a terminal narrowed mid-reply rewrapped each line onto two rows, the redraw went back up
half of them, and the top of the reply stayed in the scrollback twice.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from chat_server import ChatServer
from test_reply_keys import ask_and_hold, start_chat
from test_terminal import Terminal, terminal  # noqa: F401  (the fixture)

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_a_terminal_narrowed_while_a_reply_streams_keeps_one_copy_of_it(
    terminal: Terminal, tmp_path: Path, chat_server: ChatServer  # noqa: F811
) -> None:
    chat_server.reply_words = ["First paragraph, 第一段。\n\nSecond paragraph, 第二段。\n\n",
                               "The end, 完。"]
    start_chat(terminal, tmp_path, chat_server)
    ask_and_hold(terminal, chat_server, "hello there", "Second paragraph, 第二段。")
    terminal.resize(60)
    chat_server.release.set()
    terminal.wait_for("last context")
    history = terminal.history()
    assert history.count("First paragraph, 第一段。") == 1, history
    assert history.count("The end, 完。") == 1, history
