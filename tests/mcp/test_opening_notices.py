"""What opening the history told (retention erasing idle conversations or failing, an older
chatmem's history file moved or left behind) reaches an MCP client in the notices of the
call that opened the conversation, as the CLI says it on stderr; once per server, and
without the history's path on the server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cli_runner import repl
from mcp_calls import mcp_calls

from chatmem.store import Store

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")




@pytest.fixture
def aged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """旧的: idle 45 days; recent: 5 days; and a config whose retention is 30 days."""
    db = tmp_path / "历史" / "h.db"
    db.parent.mkdir()
    for name, line, days in (("旧的", "我的订单是 ZX-1001", 45), ("recent", "蓝色大门", 5)):
        moment = datetime.now(UTC) - timedelta(days=days)
        with Store(db, clock=lambda moment=moment: moment) as store:
            repl(store, name, [line], strategy="window")
    config = tmp_path / "config.toml"
    config.write_text("retention_days = 30\n", encoding="utf-8")
    monkeypatch.setenv("CHATMEM_CONFIG", str(config))
    return db


def test_retention_at_opening_is_told_by_the_call_that_opened_the_conversation(
        aged: Path) -> None:
    recorded, started, listed = mcp_calls(["--db", str(aged)], [
        ("record_turn", {"conversation_id": "recent", "user": "还在吗", "assistant": "在"}),
        ("start_conversation", {"name": "recent"}),
        ("list_conversations", {})])
    assert recorded["notices"] == [
        "retention: erased 1 conversation (2 messages) past their retention (旧的); "
        "the file was vacuumed"]
    assert started["notices"] == []  # once per server, not per call
    assert [c["conversation_id"] for c in listed["conversations"]] == ["recent"]


def test_retention_that_could_not_run_is_told_without_the_historys_path(
        aged: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    # The server's retention meets a busy history (as tests/cli/test_retention_cli.py has it).
    (site / "sitecustomize.py").write_text(
        "from chatmem.errors import StoreError\n"
        "from chatmem.privacy import retention\n\n\n"
        "def busy(*args, **kwargs):\n"
        f"    raise StoreError({str(aged)!r} + ' is busy: another process held it for over "
        "5 s; try again')\n\n\n"
        "retention.prune = busy\n", encoding="utf-8")
    [started] = mcp_calls(["--db", str(aged)], [("start_conversation", {"name": "recent"})],
                      site=site)
    assert started["notices"] == ["retention not applied this time: the history is busy: "
                                  "another process held it for over 5 s; try again"]


def older_history(home: Path) -> Path:
    """A history file where an older chatmem kept it, with conversation 旅行 in it."""
    old = home / ".config" / "chatmem" / "chatmem.db"
    with Store(old) as store:
        repl(store, "旅行", ["我们去杭州"], strategy="window")
    return old


def test_a_history_file_moved_at_opening_is_told_without_its_paths(
        isolated_home: Path) -> None:
    old = older_history(isolated_home)
    context, again = mcp_calls([], [
        ("get_context", {"conversation_id": "旅行", "input": "去哪里"}),
        ("get_context", {"conversation_id": "旅行", "input": "去哪里"})])
    assert context["notices"] == [
        "moved the history file from the config directory, where an older chatmem kept it, "
        "to the platform's data directory"]
    assert again["notices"] == []
    assert not old.exists()
    assert (isolated_home / ".local" / "share" / "chatmem" / "chatmem.db").is_file()


def test_an_older_history_left_behind_is_told_at_opening(isolated_home: Path) -> None:
    old = older_history(isolated_home)
    new = isolated_home / ".local" / "share" / "chatmem" / "chatmem.db"
    with Store(new) as store:
        repl(store, "新的", ["你好"], strategy="window")
    [started] = mcp_calls([], [("start_conversation", {"name": "新的"})])
    [said] = started["notices"]
    assert said.startswith("an older chatmem's history is still in the config directory")
    assert str(isolated_home) not in said
    assert old.is_file()  # left as it was: one is in the data directory already
