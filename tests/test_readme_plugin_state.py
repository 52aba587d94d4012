"""The README's example of a strategy keeping state (`notes`) is one a plugin author can copy:
it keeps the strategy contract alone and combined, and its state is forked, rebuilt and
purged as the README says of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run
from plugin_site import Install, readme_files
from test_contract import KEEPS_STATE, run_conversation

INPUTS = ["note: my order is ORD-7731", "记住：预算是五千元", "what did I ask you to remember?"]


@pytest.fixture
def notes(installed: Install) -> None:
    installed("chatmem-notes", "chatmem_notes", readme_files()["chatmem_notes.py"])


@pytest.mark.parametrize("name", ["notes", "notes+window"])
def test_the_readme_notes_strategy_keeps_the_contract(
        notes: None, tmp_path: Path, name: str) -> None:
    run_conversation(name, {**KEEPS_STATE, "inputs": INPUTS}, tmp_path, embedder="hash")


def noted(shown: dict[str, Any]) -> str:
    """The text of the notes part of an `inspect --json` context ('' when none is sent)."""
    parts = [p for p in shown["context"]["parts"] if p["kind"] == "facts"]
    return "".join(m["content"] for p in parts for m in p["messages"])


def test_the_readme_notes_state_is_kept_forked_and_purged(notes: None, tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    run(db, "chat", "s", "-s", "notes:k=1", "--provider", "scripted",
        input="\n".join(INPUTS) + "\n", code=0)
    last = json.loads(run(db, "inspect", "s", "--json", code=0).stdout)
    assert noted(last) == ("The user asked you to remember:\n- my order is ORD-7731\n"
                           "- 预算是五千元")
    # Forked before the turn that said the second note: the fork's state is rebuilt.
    run(db, "sessions", "fork", "s", "f", "--at-turn", "1", code=0)
    forked = json.loads(run(db, "inspect", "f", "--next", "what was it?", "--json",
                            code=0).stdout)
    assert noted(forked) == "The user asked you to remember:\n- my order is ORD-7731"
    # A what-if rebuilds it in one catch-up, as replay builds it turn by turn.
    whatif = json.loads(run(db, "inspect", "s", "--turn", "3", "--strategy", "notes:k=0",
                            "--json", code=0).stdout)
    assert noted(whatif) == noted(last)
    # A purge erases the mention from its state, as from the messages.
    run(db, "chat", "s", "--provider", "scripted", input="/remember order: ORD-7731\n", code=0)
    run(db, "facts", "forget", "s", "order", "--purge", "--yes", code=0)
    purged = json.loads(run(db, "inspect", "s", "--next", "and now?", "--json", code=0).stdout)
    assert noted(purged) == ("The user asked you to remember:\n- my order is [forgotten]\n"
                             "- 预算是五千元")
