"""A session another role shares is named `OWNER/NAME` wherever a command names it to the
user (PostgreSQL): bob's own session may have its name. One's own keeps its bare name."""

from __future__ import annotations

import json

import pytest
from cli_runner import run
from pg import Team
from pinned_share import share_pinned_session

pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")


@pytest.fixture
def pinned(team: Team, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """ann's `summary` session `a`, whose summarizer lost ORD-7731 (pinned p2), shared with
    bob for writing; bob has an `a` of his own."""
    ann, bob = share_pinned_session(team, monkeypatch)
    run(bob, "ask", "a", "bob's own a", "--provider", "scripted", code=0)
    return ann, bob


def test_facts_forget_unpins_in_a_shared_session_naming_it_owner_slash_name(
        pinned: tuple[str, str]) -> None:
    ann, bob = pinned
    # The owner's own: its bare name.
    done = run(ann, "facts", "forget", "a", "p1", code=0)
    assert done.stderr == ("unpinned p1: 五千元 (summary v1 (pinned), session a);"
                           " it is not pinned again\n")
    done = run(bob, "facts", "forget", "ann/a", "p2", code=0)
    assert done.stderr == ("unpinned p2: ORD-7731 (summary v2 (pinned), session ann/a);"
                           " it is not pinned again\n")


def test_inspect_summaries_json_names_a_shared_session_owner_slash_name(
        pinned: tuple[str, str]) -> None:
    _, bob = pinned
    shared = json.loads(run(bob, "inspect", "ann/a", "--summaries", "--json", code=0).stdout)
    assert shared["session"] == "ann/a" and len(shared["summaries"]) == 2
    # As `inspect --json` names it; bob's own `a` (no summaries) keeps its bare name.
    assert json.loads(run(bob, "inspect", "ann/a", "--json", code=0).stdout)["session"] == "ann/a"
    own = json.loads(run(bob, "inspect", "a", "--summaries", "--json", code=0).stdout)
    assert own["session"] == "a" and own["summaries"] == []
    empty = run(bob, "inspect", "a", "--summaries", code=0)
    assert (empty.stdout, empty.stderr) == ("", "session 'a' has no summaries yet\n")
