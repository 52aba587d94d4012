"""A write-share grantee's strategy, system prompt and model (PostgreSQL) hold for their
run only: the session's settings are its owner's, and the owner's next run is unaffected."""

from __future__ import annotations

import json

import pytest
from cli_runner import chat, run
from grantees import shared
from pg import Team

from chatmem.errors import StoreError
from chatmem.store import Store

pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")


def settings(url: str) -> tuple[str, str | None, str | None]:
    with Store(url) as store:
        record = store.sessions.session("proj")
        return record.strategy, record.model, record.system


def test_a_grantees_strategy_system_prompt_and_model_hold_for_their_run_only(
        team: Team) -> None:
    ann, bob = shared(team)
    before = settings(ann)
    asked = run(bob, "ask", "ann/proj", "hi", "--system", "Answer only in pirate speak.",
                "--strategy", "buffer", "--save", "--provider", "scripted", "--model", "other",
                code=0)
    not_saved = "(not saved: only ann, its owner, changes the session's settings)"
    assert sum(not_saved in line for line in asked.stderr.splitlines()) == 3, asked.stderr
    assert settings(ann) == before
    # The owner's next run: her strategy, prompt and model, and nothing to tell.
    again = run(ann, "ask", "proj", "next", "--provider", "scripted", "--json", code=0)
    assert "ran on" not in again.stderr and "other" not in again.stderr
    turns = json.loads(run(ann, "inspect", "proj", "--json", code=0).stdout)["turn"]
    assert turns["input"] == "next" and turns["model"] == before[1]
    # In the store too: only the owner changes them.
    with Store(bob) as store:
        session_id = store.sessions.session("ann/proj").id
        with pytest.raises(StoreError, match="only ann, its owner, can change the settings"):
            store.sessions.update_session(session_id, system="arr")
    # The REPL's /system and /strategy say so in the same words.
    typed = chat(bob, "ann/proj", ["/system Talk like a pirate.", "/strategy buffer"], code=0)
    assert "session ann/proj: system prompt for this chat only " + not_saved in typed.stdout \
        + typed.stderr
    assert "session ann/proj: strategy for this chat only " + not_saved in typed.stdout \
        + typed.stderr
    assert settings(ann) == before


def test_the_owners_own_changes_are_still_saved(team: Team) -> None:
    ann, _ = shared(team)
    run(ann, "ask", "proj", "hi", "--system", "Be brief.", "--strategy", "buffer", "--save",
        "--provider", "scripted", code=0)
    assert settings(ann)[0] == "buffer" and settings(ann)[2] == "Be brief."


def test_a_grantees_model_notice_names_the_session_owner_slash_name(team: Team) -> None:
    _, bob = shared(team)
    run(bob, "ask", "proj", "bob's own proj", "--provider", "scripted", code=0)
    asked = run(bob, "ask", "ann/proj", "hi", "--provider", "scripted", "--model", "other",
                code=0)
    assert asked.stderr.splitlines()[0] == (
        "session ann/proj ran on scripted:scripted; this run runs on scripted:other (--model)"
        " (not saved: only ann, its owner, changes the session's settings)")
    # One's own session keeps its bare name.
    own = run(bob, "ask", "proj", "again", "--provider", "scripted", "--model", "other",
              code=0)
    assert own.stderr.splitlines()[0] == (
        "session proj ran on scripted:scripted; its next turns run on scripted:other (--model)")
