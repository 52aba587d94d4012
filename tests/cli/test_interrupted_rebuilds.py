"""Ctrl-C while a what-if or a replay rebuilds a strategy's memory ends the command: exit 130,
one line, nothing printed as if complete (long-history reading, finding 3: `inspect -s entity`
interrupted after 2,023 of its model calls exited 0, printed "replayed 50,000 turns", and said
"the turn is stored and the update is retried next turn", when a what-if stores nothing).
A real turn interrupted the same way is stored, its memory update retried next turn."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import run
from plugin_site import HALTS, Install

SUMMARY = "summary-buffer:max_tokens=120"
"""Summarizes every few turns of the history below: several calls to rebuild it."""

CANCELLED = "memory update cancelled; the turn is stored and the update is retried next turn"


def _recorded(installed: Install, tmp_path: Path) -> Path:
    """A 120-turn conversation, English and Chinese, as imported:
    catching a summary up on it takes batches, one model call each."""
    installed("chatmem-halts", "chatmem_halts", HALTS, name="halts")
    db = tmp_path / "h.db"
    transcript = tmp_path / "订单.jsonl"
    transcript.write_text("".join(
        json.dumps({"role": role, "content": text}, ensure_ascii=False) + "\n"
        for i in range(120)
        for role, text in (("user", f"My order number is ORD-{i} and I live in 杭州, 第{i}天"),
                           ("assistant", f"Noted ORD-{i}. 记下了")))
        , encoding="utf-8")
    run(db, "sessions", "import", str(transcript), "订单", code=0)
    return db


def test_ctrl_c_during_a_what_if_rebuild_exits_130_with_no_partial_context(
        installed: Install, tmp_path: Path) -> None:
    db = _recorded(installed, tmp_path)
    whole = run(db, "inspect", "订单", "-s", SUMMARY, "--provider", "halts", code=0,
                width=300)
    assert "rebuilt in memory from 119 turns in one catch-up (3 strategy model calls)" \
        in whole.stdout
    for json_out in ((), ("--json",)):
        halted = run(db, "inspect", "订单", "-s", SUMMARY, "--provider", "halts", *json_out,
                     env={"CHATMEM_HALT_AT": "2"}, code=130)
        assert halted.stdout == ""
        assert halted.stderr.splitlines() == ["interrupted"]
    again = run(db, "inspect", "订单", "-s", SUMMARY, "--provider", "halts", code=0,
                width=300)
    assert again.stdout == whole.stdout  # nothing of the interrupted rebuild was kept


def test_ctrl_c_during_a_replay_s_memory_update_exits_130(installed: Install,
                                                          tmp_path: Path) -> None:
    db = _recorded(installed, tmp_path)
    transcript = tmp_path / "订单.jsonl"
    halted = run(db, "replay", str(transcript), "-s", SUMMARY, "--provider", "halts",
                 "--save-as", "半途", env={"CHATMEM_HALT_AT": "2"}, code=130)
    assert halted.stdout == ""
    assert CANCELLED not in halted.stderr
    assert "半途" not in run(db, "sessions", "list", code=0).stdout  # no half-played session


def test_ctrl_c_during_a_real_turn_s_memory_update_keeps_the_turn(installed: Install,
                                                                  tmp_path: Path) -> None:
    db = _recorded(installed, tmp_path)
    asked = run(db, "ask", "订单", "我住哪里？", "--provider", "halts", "-s", SUMMARY,
                env={"CHATMEM_HALT_AT": "1"}, code=0)
    assert asked.stdout.startswith("echo #1: 我住哪里？")
    assert CANCELLED in asked.stderr.splitlines()
    shown = run(db, "sessions", "show", "订单", code=0).stdout
    assert "我住哪里？" in shown
