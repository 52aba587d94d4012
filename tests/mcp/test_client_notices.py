"""What an MCP client is told beside a result reads as the CLI says it, less the advice
only a REPL user can take: a summary's released pins (no `/summary`), and a context over
its budget warned of by get_context as `inspect --next --json` warns of it."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from chat_server import ChatServer
from cli_runner import output
from mcp_calls import mcp_calls
from waiting import wait_until

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")


def test_released_pins_are_told_without_the_repl_command_that_lists_them(
        tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    _, _, recorded = mcp_calls(["--db", db], [
        ("start_conversation", {"name": "散步", "strategy": "summary-buffer:max_tokens=60"}),
        ("record_turn", {"conversation_id": "散步", "user": "I like long walks on the beach"
                         " near Lisbon every morning with my dog Rex", "assistant": "Lovely"}),
        ("record_turn", {"conversation_id": "散步", "user": "My order number is ORD-7731,"
                         " 我住在杭州西湖边", "assistant": "Noted"})])
    [notice] = recorded["notices"]
    assert "released to keep pins within 16 tokens: " in notice, notice
    assert "/summary" not in notice


def test_a_turn_that_waited_for_another_process_write_says_so_to_its_client(
        tmp_path: Path) -> None:
    """The store told the wait to the server's workspace, which no listener hears: it was
    read only when a conversation opened, and record_turn's client heard nothing of it."""
    db, waited = tmp_path / "h.db", tmp_path / "waited"
    site = tmp_path / "site"
    site.mkdir()
    # Seen, not timed: the lock held a fixed 1.5 s was let go before a call on a loaded
    # machine reached its write (and waited past the first 500 ms), and the test failed.
    # The server marks the moment its store says it waits (the notice made as before).
    (site / "sitecustomize.py").write_text(
        "from pathlib import Path\n\n"
        "from chatmem.store import sqlite_backend\n\n"
        "told = sqlite_backend.WaitingForWrite\n\n\n"
        "def waiting(*args, **kwargs):\n"
        f"    Path({str(waited)!r}).touch()\n"
        "    return told(*args, **kwargs)\n\n\n"
        "sqlite_backend.WaitingForWrite = waiting\n", encoding="utf-8")
    holding, ended = threading.Event(), threading.Event()
    held = threading.Thread(target=_hold, args=(db, holding, lambda: waited.exists()
                                                or ended.is_set()))

    def begin_write() -> None:
        held.start()
        assert holding.wait(10)

    try:
        _, recorded, again = mcp_calls(["--db", str(db)], [
            ("start_conversation", {"name": "等待"}),
            ("record_turn", {"conversation_id": "等待", "user": "一", "assistant": "好"}),
            ("record_turn", {"conversation_id": "等待", "user": "二", "assistant": "好"})],
            before={1: begin_write}, site=site)
    finally:
        ended.set()  # a call that ended without waiting lets it go too
        if held.is_alive():
            held.join()
    assert recorded["turn"] == 1
    assert recorded["notices"] == [
        "waited for another process's write to the history (a long import)"]
    assert again["notices"] == []  # told once, by the call it held up


def _hold(db: Path, holding: threading.Event, until: Callable[[], bool]) -> None:
    """Another process's long write: the file's write lock held `until` it is let go."""
    with closing(sqlite3.connect(db, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")
        holding.set()
        wait_until(until, "the call waiting for the write")
        other.execute("COMMIT")


LONG = "长" * 3000 + " word" * 3000
"""A message a context of 4,000 tokens cannot hold."""


@pytest.fixture
def budgeted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A history file whose contexts have a budget of 4,000 tokens."""
    config = tmp_path / "config.toml"
    config.write_text("context_budget = 4000\n", encoding="utf-8")
    monkeypatch.setenv("CHATMEM_CONFIG", str(config))
    return str(tmp_path / "h.db")


def test_get_context_warns_of_a_context_over_its_budget_as_inspect_does(
        budgeted: str) -> None:
    db, long = budgeted, LONG
    _, _, seen = mcp_calls(["--db", db], [
        ("start_conversation", {"name": "长谈", "strategy": "window"}),
        ("record_turn", {"conversation_id": "长谈", "user": long, "assistant": "好"}),
        ("get_context", {"conversation_id": "长谈", "input": "?"})])
    inspected = json.loads(output("inspect", "长谈", "--next", "?", "--json", "--db", db))
    assert seen["tokens"] > seen["budget"] == 4000
    assert seen["warnings"] == inspected["context"]["warnings"]
    assert seen["warnings"][0].startswith("context is ") and "over the budget of 4,000" in (
        seen["warnings"][0])


def test_explain_turn_gives_the_warnings_of_the_context_sent_as_inspect_does(
        budgeted: str) -> None:
    db, long = budgeted, LONG
    *_, explained = mcp_calls(["--db", db], [
        ("start_conversation", {"name": "长谈", "strategy": "window"}),
        ("record_turn", {"conversation_id": "长谈", "user": long, "assistant": "好"}),
        ("record_turn", {"conversation_id": "长谈", "user": "?", "assistant": "嗯"}),
        ("explain_turn", {"conversation_id": "长谈", "turn": 2})])
    inspected = json.loads(output("inspect", "长谈", "2", "--json", "--db", db))
    assert explained["tokens"] > explained["budget"] == 4000
    assert explained["warnings"] == inspected["context"]["warnings"]
    assert explained["warnings"][0].startswith("context is ")


def _summary_notice(tmp_path: Path, base_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """What an MCP client is told of a summary its helper model (at `base_url`) failed."""
    config = tmp_path / "config.toml"
    config.write_text(f'provider = "scripted"\nhelper_provider = "openai"\n'
                      f'helper_model = "test-small"\nbase_url = "{base_url}"\n'
                      'max_retries = 0\n', encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdefghijklmnopqrstuvwxyz123456")
    _, recorded = mcp_calls(["--db", str(tmp_path / "h.db"), "--config", str(config)], [
        ("start_conversation", {"name": "助手", "strategy": "summary"}),
        ("record_turn", {"conversation_id": "助手", "user": "我叫安娜，住在杭州",
                         "assistant": "好的"})])
    [said] = recorded["notices"]
    return str(said)


def test_a_failed_summary_is_told_without_the_helper_models_url(
        tmp_path: Path, chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Leftover: a summary the helper model failed was told to the MCP client with the
    model's URL as its error named it (`http://ann:***@127.0.0.1:PORT/v1 answered 500`): a
    user name and host of the server's owner, told to any client of hers. It is "the
    model's server" to the client."""
    chat_server.plan = ["500"] * 8
    url = chat_server.base_url.replace("http://", "http://ann:s3cret-pw@")
    said = _summary_notice(tmp_path, url, monkeypatch)
    assert said.startswith("summary is behind (the model's server answered 500")
    host = chat_server.base_url.split("//")[1].split("/")[0]
    assert "ann" not in said and host not in said


def test_a_helper_model_whose_host_is_not_found_is_told_without_its_host_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The URL was left out of what an MCP client is told, but a host name the resolver did
    not know was named on its own (`the host name 'ann-nas.invalid' was not found`): the
    owner's host, told to any client holding a token of hers. Her own log keeps it."""
    said = _summary_notice(tmp_path, "http://ann:s3cret-pw@ann-nas.invalid:8080/v1",
                           monkeypatch)
    assert said.startswith("summary is behind (cannot reach the model's server"), said
    assert "was not found (DNS)" in said
    assert "ann-nas" not in said and "ann:" not in said, said
