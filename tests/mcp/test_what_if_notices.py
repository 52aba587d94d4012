"""get_context with a strategy (a what-if) tells the client what rebuilding that strategy's
memory told, as `inspect -s` does (second reading, finding 5: a plugin's failed update was
shown by the CLI and dropped by MCP, the context resting on state never written)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke
from plugin_site import FORGETS, HALTS, PONDERS, Install, install

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

from test_strategy_gone import run_server

from chatmem.mcp.memory import INTERRUPTED


def test_a_what_if_whose_memory_update_fails_tells_the_client(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(site, "chatmem-forgets", "chatmem_forgets", FORGETS)
    db = tmp_path / "h.db"
    invoke("chat", "旅行", "--provider", "scripted", "--db", str(db),
           input="我想去杭州\n住三晚\n", code=0)
    [(failed, seen)] = run_server(db, site, [
        ("get_context", {"conversation_id": "旅行", "input": "住哪里", "strategy": "forgets"})])
    assert failed is False
    [notice] = seen["notices"]
    assert "KeyError: '记忆更新失败'" in notice and "strategy 'forgets'" in notice
    assert seen["parts"]  # the context is still shown


def test_a_what_if_interrupted_while_it_rebuilds_is_answered_as_cancelled(
        installed: Install, tmp_path: Path) -> None:
    """A Ctrl-C (KeyboardInterrupt) inside the rebuild answered the call with the half-built
    context and "the turn is stored and the update is retried next turn" (long-history
    reading, finding 3); now the call fails, and the server answers the next one."""
    installed("chatmem-halts", "chatmem_halts", HALTS, name="halts")
    db = tmp_path / "h.db"
    invoke("chat", "旅行", "-s", "window", "--provider", "halts", "--db", str(db),
           input="".join(f"I want to go to 杭州, day {i} 第{i}天\n" for i in range(120)), code=0)
    halted, again = run_server(db, tmp_path / "site", [
        ("get_context", {"conversation_id": "旅行", "input": "住哪里",
                         "strategy": "summary-buffer:max_tokens=120"}),
        ("get_context", {"conversation_id": "旅行", "input": "住哪里"})],
        provider="halts", env={"CHATMEM_HALT_AT": "2"})
    assert halted[0] is True and halted[1].endswith(f"get_context: {INTERRUPTED}")
    assert again[0] is False and again[1]["parts"]


def test_compare_strategies_tells_a_failing_plugin_strategy_and_scores_the_others(
        tmp_path: Path) -> None:
    """One strategy's failure (a plugin's) failed the whole call: the others' scores,
    computed, were lost."""
    from plugin_site import BUILD_FAILS

    site = tmp_path / "site"
    install(site, "chatmemtest-boom", "chatmemtest_boom", BUILD_FAILS, name="boom")
    db = tmp_path / "h.db"
    invoke("chat", "旅行", "--provider", "scripted", "--db", str(db),
           input="我想去杭州\n住三晚\n", code=0)
    [(is_error, compared)] = run_server(db, site, [
        ("compare_strategies", {"conversation_id": "旅行",
                                "strategies": ["window", "boom", "buffer"]})])
    assert is_error is False, compared
    assert [s["strategy"] for s in compared["strategies"]] == ["window", "buffer"]
    assert all(s["turns"] == 2 for s in compared["strategies"])
    [failed] = compared["failed"]
    assert failed["strategy"] == "boom"
    assert "strategy 'boom' failed in its build: RuntimeError: 上下文炸了" in failed["error"]


def test_get_context_says_a_slow_plugin_build_once_as_record_turn_does(
        installed: Install, tmp_path: Path) -> None:
    """record_turn said a plugin strategy's slow build; get_context, which builds the same
    context (or a what-if's), said nothing of the seconds each call waited."""
    from chatmem.session_notices import SLOW_BUILD

    installed("chatmem-ponders", "chatmem_ponders", PONDERS)
    db = tmp_path / "h.db"
    invoke("chat", "慢", "-s", "ponders", "--provider", "scripted", "--db", str(db),
           input="我想去杭州\n", code=0)
    said = run_server(db, tmp_path / "site", [
        ("get_context", {"conversation_id": "慢", "input": "住哪里"}),
        ("get_context", {"conversation_id": "慢", "input": "住几晚"}),  # said once
        ("get_context", {"conversation_id": "慢", "input": "住哪里",
                         "strategy": "ponders+summary"})],
        env={"PONDER": str(SLOW_BUILD + 0.1)})
    assert [failed for failed, _ in said] == [False, False, False]
    warned = [[n for n in seen["notices"] if "to build the context" in n] for _, seen in said]
    assert [len(w) for w in warned] == [1, 0, 1], said
    assert "'ponders'" in warned[0][0] and "chatmem-ponders" in warned[0][0]
