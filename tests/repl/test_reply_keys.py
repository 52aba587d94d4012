"""Keys pressed while a reply streams, in a real terminal (tmux), as a person presses them.

The reply comes from the local test server in its `slow` mode: the first piece is
sent, then the reply is held open until the test releases it, so each key arrives
mid-reply however busy the machine is. Every check waits for what the screen or
the history file shows; nothing sleeps a fixed time.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from chat_server import ChatServer
from test_terminal import Terminal, terminal  # noqa: F401  (the fixture)
from waiting import HANG

from chatmem.store import Store

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def start_chat(terminal: Terminal, tmp_path: Path, server: ChatServer,  # noqa: F811
               *extra: str) -> Path:
    """`chatmem chat t` on the test server, at its prompt; returns the history file.

    The terminal's settings are written to `stty.before` and `stty.after` around it.
    """
    db = tmp_path / "t.db"
    terminal.start({"HOME": str(tmp_path), "TERM": "xterm", "PATH": os.environ["PATH"],
                    "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"})
    terminal.run(f"stty -g > {tmp_path / 'stty.before'}; "
                 f"{sys.executable} -m chatmem chat t --db {db} --model test-small "
                 + " ".join(extra) + f"; code=$?; stty -g > {tmp_path / 'stty.after'}; "
                 "(exit $code)")
    terminal.wait_for("t>")
    return db


def ask_and_hold(terminal: Terminal, server: ChatServer, text: str,  # noqa: F811
                 shown: str) -> None:
    """Send `text`; return once the reply's first piece (`shown`) is on the screen."""
    server.plan = ["slow"]
    terminal.keys(text, "Enter")
    assert server.first_delta_sent.wait(HANG)
    terminal.wait_for(shown)


def turns(db: Path) -> list[tuple[str, str, str | None]]:
    with Store(db) as store:
        return [(t.status, t.input,
                 t.reply) for t in store.turns.turns(store.sessions.session("t").id)]


def wait_until(done: Callable[[], bool], terminal: Terminal) -> None:  # noqa: F811
    import time

    deadline = time.monotonic() + HANG
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened; the screen:\n{terminal.screen()}")
        time.sleep(0.05)


def test_ctrl_d_while_a_reply_streams_cancels_it_and_leaves(
    terminal: Terminal, tmp_path: Path, chat_server: ChatServer  # noqa: F811
) -> None:
    db = start_chat(terminal, tmp_path, chat_server)
    ask_and_hold(terminal, chat_server, "hello there", "Hello")
    terminal.keys("C-d")
    terminal.wait_for("EXITED 0")
    # Stored as cancelled, with what had arrived; nothing of it entered memory.
    assert turns(db) == [("cancelled", "hello there", "Hello")]
    with Store(db) as store:
        assert store.history.messages(store.sessions.session("t").id) == []
    # The terminal is left as it was found: echo and line editing back on.
    assert (tmp_path / "stty.after").read_text() == (tmp_path / "stty.before").read_text()


def test_ctrl_d_while_the_server_has_sent_nothing_yet_cancels_and_leaves(
    terminal: Terminal, tmp_path: Path, chat_server: ChatServer  # noqa: F811
) -> None:
    db = start_chat(terminal, tmp_path, chat_server)
    chat_server.plan = ["hang"]  # the request is taken and never answered
    terminal.keys("hello there", "Enter")
    wait_until(lambda: len(chat_server.requests) == 1, terminal)
    terminal.keys("C-d")
    terminal.wait_for("EXITED 0")
    assert turns(db) == [("cancelled", "hello there", None)]


def test_keys_typed_during_a_reply_wait_for_the_next_prompt_unechoed(
    terminal: Terminal, tmp_path: Path, chat_server: ChatServer  # noqa: F811
) -> None:
    db = start_chat(terminal, tmp_path, chat_server, "--plain")
    ask_and_hold(terminal, chat_server, "hello there", "Hello")
    # Typed ahead, as in a shell: a line with its Enter, then text without one.
    terminal.keys("first ahead", "Enter", "中文 second ahead")
    chat_server.release.set()
    # The typed line is sent once the reply ends; the rest waits at the prompt.
    screen = terminal.wait_for("t> 中文 second ahead")
    wait_until(lambda: len(turns(db)) == 2, terminal)
    assert [(status, text) for status, text, _ in turns(db)] == [
        ("ok", "hello there"), ("ok", "first ahead")]
    screen = terminal.screen()
    # Nothing typed was echoed into a reply: each reply line is whole.
    replies = [line for line in screen.splitlines() if "Hello" in line]
    assert replies == ["Hello from the test server."] * 2, screen
    assert screen.count("ahead") == 2  # at the prompts that read them, once each
    terminal.keys("Enter")
    wait_until(lambda: len(turns(db)) == 3, terminal)
    assert turns(db)[-1][1] == "中文 second ahead"


def test_up_pressed_during_a_reply_recalls_the_last_message_at_the_next_prompt(
    terminal: Terminal, tmp_path: Path, chat_server: ChatServer  # noqa: F811
) -> None:
    db = start_chat(terminal, tmp_path, chat_server, "--plain")
    ask_and_hold(terminal, chat_server, "我们五月去杭州", "Hello")
    terminal.keys("Up")
    chat_server.release.set()
    terminal.wait_for("t> 我们五月去杭州", times=2)  # typed once, recalled once
    terminal.keys("Enter")
    wait_until(lambda: len(turns(db)) == 2, terminal)
    assert [text for _, text, _ in turns(db)] == ["我们五月去杭州"] * 2


def test_ctrl_c_while_a_reply_streams_shows_the_partial_reply_once(
    terminal: Terminal, tmp_path: Path, chat_server: ChatServer  # noqa: F811
) -> None:
    chat_server.reply_words = ["Partial reply, first line.\n\n- item one\n- item two\n",
                               " never sent"]
    db = start_chat(terminal, tmp_path, chat_server)
    ask_and_hold(terminal, chat_server, "hello there", "item two")
    terminal.keys("C-c")
    screen = terminal.wait_for("(reply cancelled")
    for line in ("Partial reply, first line.", "item one", "item two"):
        assert screen.count(line) == 1, screen
    assert "^C" not in screen
    assert turns(db) == [("cancelled", "hello there",
                          "Partial reply, first line.\n\n- item one\n- item two\n")]
    # The chat goes on: Ctrl-C cancels the reply only.
    terminal.keys("next")
    terminal.wait_for("t> next")
    terminal.keys("C-u")
    terminal.keys("C-d")
    terminal.wait_for("EXITED 0")


def test_a_line_typed_during_a_reply_cut_by_ctrl_c_waits_at_the_prompt_unsent(
    terminal: Terminal, tmp_path: Path, chat_server: ChatServer  # noqa: F811
) -> None:
    db = start_chat(terminal, tmp_path, chat_server, "--plain")
    ask_and_hold(terminal, chat_server, "hello there", "Hello")
    # A line typed ahead with its Enter, then more, then Ctrl-C stops the reply.
    terminal.keys("first ahead", "Enter", "中文 second", "Enter", "C-c")
    terminal.wait_for("(reply cancelled")
    # Nothing typed is lost, and nothing typed before the Ctrl-C is sent by it.
    terminal.wait_for("中文 second")
    assert len(chat_server.requests) == 1
    assert turns(db) == [("cancelled", "hello there", "Hello")]
    terminal.keys("Enter")  # a new Enter sends it, one message
    wait_until(lambda: len(turns(db)) == 2, terminal)
    assert turns(db)[-1][1] == "first ahead\n中文 second"


def test_ctrl_d_after_the_reply_lets_memory_finish_its_update_then_leaves(
    terminal: Terminal, tmp_path: Path, chat_server: ChatServer  # noqa: F811
) -> None:
    db = start_chat(terminal, tmp_path, chat_server, "--strategy", "summary")
    # The reply comes whole; the summary update after it is held by the server.
    chat_server.plan = ["ok", "slow"]
    terminal.keys("hello there", "Enter")
    wait_until(lambda: len(chat_server.requests) == 2, terminal)
    terminal.keys("C-d")
    chat_server.release.set()
    terminal.wait_for("EXITED 0")
    # Ctrl-D cancelled nothing: the turn and the summary it led to are both stored.
    assert turns(db) == [("ok", "hello there", "Hello from the test server.")]
    with Store(db) as store:
        session_id = store.sessions.session("t").id
        assert [m.role for m in store.history.messages(session_id)] == ["user", "assistant"]
        summary = store.memory.latest_summary(session_id, "summary")
        assert summary is not None and summary.text == "Hello from the test server."


def test_a_multi_line_paste_during_a_reply_stays_one_message(
    terminal: Terminal, tmp_path: Path, chat_server: ChatServer  # noqa: F811
) -> None:
    db = start_chat(terminal, tmp_path, chat_server, "--plain")
    ask_and_hold(terminal, chat_server, "hello there", "Hello")
    pasted = tmp_path / "paste.txt"
    block = "粘贴第一行\n粘贴第二行\n粘贴第三行"
    pasted.write_text(block, encoding="utf-8")
    terminal.tmux("load-buffer", "-b", "p", str(pasted))
    terminal.tmux("paste-buffer", "-p", "-b", "p", "-t", "t")  # marked, if the REPL asks
    chat_server.release.set()
    # The paste waits at the next prompt, whole; nothing of it was sent on its own.
    terminal.wait_for("粘贴第三行")
    terminal.keys("Enter")
    wait_until(lambda: len(turns(db)) == 2, terminal)
    assert [text for _, text, _ in turns(db)] == ["hello there", block]
    assert len(chat_server.requests) == 2


def test_a_line_typed_during_a_command_cut_by_ctrl_c_waits_at_the_prompt_unsent(
    terminal: Terminal, tmp_path: Path, chat_server: ChatServer  # noqa: F811
) -> None:
    config = tmp_path / "slow-copy.toml"
    running = tmp_path / "copying"
    config.write_text(f'clipboard_command = "sh -c \'touch {running}; exec sleep 60\'"\n',
                      encoding="utf-8")
    db = start_chat(terminal, tmp_path, chat_server, "--plain", "--config", str(config))
    terminal.keys("hello there", "Enter")
    wait_until(lambda: len(turns(db)) == 1, terminal)
    terminal.keys("/copy", "Enter")  # the clipboard command holds the chat
    # Keys sent with the Enter, before the prompt gave the line up, are the prompt's own
    # type-ahead (its next line): these are typed while the command runs.
    wait_until(running.exists, terminal)
    terminal.keys("typed ahead", "Enter", "中文 second", "C-c")
    terminal.wait_for("(interrupted)")
    terminal.wait_for("中文 second")
    assert len(chat_server.requests) == 1  # nothing typed before the Ctrl-C was sent by it
    terminal.keys("Enter")
    wait_until(lambda: len(turns(db)) == 2, terminal)
    assert turns(db)[-1][1] == "typed ahead\n中文 second"
