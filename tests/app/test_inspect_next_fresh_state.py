"""`inspect --next` on a session holding none of its plugin strategy's state (a fork before
the turns it covered) shows the state the next turn's catch-up rebuilds, even when the
session holds memory that is no part of it: a fact /remember put there, copied by the fork."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_runner import run
from plugin_site import LEDGER, Install


def ledger(shown: dict[str, Any]) -> str:
    """The text of the ledger's part in an `inspect --json` context ('' when none is sent)."""
    return "".join(m["content"] for p in shown["context"]["parts"] if p["kind"] == "summary"
                   for m in p["messages"])


def test_inspect_next_on_a_fork_with_a_remembered_fact_shows_the_rebuilt_plugin_state(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-ledger", "chatmem_ledger", LEDGER)
    db = tmp_path / "h.db"
    run(db, "chat", "账", "-s", "ledger", "--provider", "scripted",
        input="订单 111\n预算 222\n/remember 订单: 111\n", code=0)
    forked = run(db, "sessions", "fork", "账", "账2", "--at-turn", "1", code=0)
    assert "copied 1 fact stated with /remember" in forked.stderr

    shown = json.loads(run(db, "inspect", "账2", "--next", "还有呢", "--json", code=0).stdout)
    assert ledger(shown) == "账本：1:111"  # main showed none: the fact read as its memory
    assert shown["replayed"] == {"turns": 1, "strategy_model_calls": 0}
    # What the next turn sends, after its catch-up.
    run(db, "chat", "账2", "--provider", "scripted", input="还有呢\n", code=0)
    sent = json.loads(run(db, "inspect", "账2", "--json", code=0).stdout)
    assert ledger(sent) == ledger(shown)


def parts(shown: dict[str, Any]) -> dict[str, str]:
    """Each memory part's text in an `inspect --json` context, by kind."""
    return {p["kind"]: "".join(m["content"] for m in p["messages"])
            for p in shown["context"]["parts"] if p["kind"] in ("summary", "facts")}


def test_inspect_next_on_a_fork_of_a_combination_shows_the_plugin_members_rebuilt_state(
        installed: Install, tmp_path: Path) -> None:
    """`ledger+entity`: the fact /remember put in the parent, copied by the fork, is the
    entity member's memory, not the ledger's; the ledger's state was left out of the preview
    while the next turn's catch-up rebuilt it and sent it."""
    installed("chatmem-ledger", "chatmem_ledger", LEDGER)
    db = tmp_path / "h.db"
    run(db, "chat", "账", "-s", "ledger+entity", "--provider", "scripted",
        input="订单 111\n预算 222\n/remember 订单: 111\n", code=0)
    run(db, "sessions", "fork", "账", "账2", "--at-turn", "1", code=0)
    shown = json.loads(run(db, "inspect", "账2", "--next", "还有呢", "--json", code=0).stdout)
    run(db, "chat", "账2", "--provider", "scripted", input="还有呢\n", code=0)
    sent = json.loads(run(db, "inspect", "账2", "--json", code=0).stdout)
    assert parts(sent)["summary"] == "账本：1:111"
    assert parts(shown) == parts(sent)
