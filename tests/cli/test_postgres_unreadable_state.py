"""A strategy state row chatmem cannot read (SQL by the sharer, or by a write grantee) on a
team's PostgreSQL history: in a session shared with you it is passed over by name, never
blocking your own listing, erasure or export; in your own it is named with the way out,
`sessions reset-state`, which drops only derived memory."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import psycopg
import pytest
from cli_runner import run
from pg import Team

from chatmem.errors import NotFound, StoreError

pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")
SKIPPED = ("passed over the summary-buffer pins of session bob/gift (shared with you by bob):"
           " they cannot be read (written outside chatmem); bob can drop them with `chatmem"
           " sessions reset-state gift summary-buffer`")


def sql_as(url: str, sql: str, params: tuple[str, ...] = ()) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql, params).rowcount


def broken_pins(url: str, owner: str, session: str, value: str = "{") -> None:
    """The summary-buffer pin list of `owner`'s `session` written by the role of `url`."""
    assert sql_as(url, "INSERT INTO strategy_state (session_id, strategy, key, value)"
                       " SELECT id, 'summary-buffer', 'pinned', %s FROM sessions"
                       " WHERE owner = %s AND name = %s ON CONFLICT (session_id, strategy, key)"
                       " DO UPDATE SET value = excluded.value", (value, owner, session)) == 1


def test_a_sharers_unreadable_pins_never_block_your_facts_or_your_export(
        team: Team, tmp_path: Path) -> None:
    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", "mine", "My name is Ann Lee. 我住在杭州", "-s", "entity+summary-buffer",
        "--provider", "scripted", code=0)
    run(bob, "ask", "gift", "notes", "-s", "entity+summary-buffer", "--provider", "scripted",
        code=0)
    broken_pins(bob, "bob", "gift")
    run(bob, "sessions", "share", "gift", "--with", "ann", code=0)

    listed = run(ann, "facts", "list", "--json", code=0)
    assert listed.stderr.splitlines() == [SKIPPED]
    facts = {f["key"]: f for f in json.loads(listed.stdout)}
    assert facts["name"]["value"] == "Ann Lee"
    archive = tmp_path / "a.zip"
    exported = run(ann, "sessions", "export", "--all", "-o", str(archive), code=0)
    assert exported.stderr.splitlines()[0] == SKIPPED
    with zipfile.ZipFile(archive) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        assert sorted(s["name"] for s in manifest["sessions"]) == ["gift", "mine"]
        assert json.loads(zf.read("summaries/bob-gift.json"))["pinned"] == []
    # A row of the shared session's own that cannot be read leaves that session out, by name.
    assert sql_as(bob, "UPDATE sessions SET updated_at = 'garbage' WHERE name = 'gift'") == 1
    exported = run(ann, "sessions", "export", "--all", "-o", str(archive), "--force", code=0)
    assert exported.stderr.splitlines()[0] == (
        "left out session bob/gift (shared with you by bob): a row of it cannot be read"
        " (written outside chatmem)")
    with zipfile.ZipFile(archive) as zf:
        assert [s["name"] for s in json.loads(zf.read("manifest.json"))["sessions"]] == ["mine"]
    fact_id = facts["name"]["id"]
    purged = run(ann, "facts", "forget", str(fact_id), "--purge", "--yes", code=0)
    assert purged.stderr.splitlines()[0] == SKIPPED
    assert "Ann Lee" not in run(ann, "sessions", "show", "mine", code=0).stdout


def test_a_broken_state_of_a_shared_session_is_named_and_its_owner_resets_it_keeping_the_turns(
        team: Team) -> None:
    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", "p1", "my sister Alice lives in 杭州", "-s", "summary-buffer",
        "--provider", "scripted", code=0)
    run(ann, "sessions", "share", "p1", "--with", "bob", "--write", code=0)
    # Edited by hand by its owner (one a grantee writes is not hers at all: below).
    broken_pins(ann, "ann", "p1", "{not json")
    refused = run(ann, "ask", "p1", "again", "--provider", "scripted", code=int(
        StoreError.exit_code))
    assert refused.stderr.splitlines() == [
        "error: session 'p1': summary-buffer state 'pinned' is not valid JSON in the history"
        " (was it edited by hand?); `chatmem sessions reset-state p1 summary-buffer` drops"
        " that state (never the turns) and the strategy builds it again"]
    refused = run(bob, "ask", "ann/p1", "again", "--provider", "scripted", code=2)
    assert refused.stderr.endswith(
        "ann, its owner, can drop that state (never the turns) with `chatmem sessions"
        " reset-state p1 summary-buffer`\n")
    # Only the owner drops it; a strategy the session holds no state of is said so.
    run(bob, "sessions", "reset-state", "ann/p1", "summary-buffer", code=2)
    run(ann, "sessions", "reset-state", "p1", "window", code=int(NotFound.exit_code))
    # JSON, but not what chatmem stores there: named alike, never a traceback.
    broken_pins(ann, "ann", "p1", "[[1]]")
    refused = run(ann, "ask", "p1", "again", "--provider", "scripted", code=2)
    assert "summary-buffer state 'pinned' is not in the form chatmem stores it in" \
        in refused.stderr
    done = run(ann, "sessions", "reset-state", "p1", "summary-buffer", code=0)
    assert done.stderr.startswith("dropped the summary-buffer state of session p1 (1 value,")
    run(ann, "ask", "p1", "again", "--provider", "scripted", code=0)
    shown = run(ann, "sessions", "show", "p1", code=0).stdout
    assert "my sister Alice lives in 杭州" in shown and "again" in shown
    # A state row a write grantee writes (p025) is not her memory: it never blocks her turn,
    # read as absent (the strategy builds it again from the turns).
    broken_pins(bob, "ann", "p1", "{not json")
    asked = run(ann, "ask", "p1", "还在吗", "--provider", "scripted", code=0)
    assert "state" not in asked.stderr


def test_a_shared_style_name_no_one_shares_is_said_so_not_a_name_rule(team: Team) -> None:
    bob = team.url("bob")
    refused = run(bob, "ask", "ann/work", "hi", "--provider", "scripted",
                  code=int(NotFound.exit_code))
    assert refused.stderr.splitlines() == [
        "error: no session 'ann/work' is shared with you (OWNER/NAME names a session another"
        " role shares with you; a name without a '/' names one of your own)"]
