"""A write-share grantee's purge in the owner's session (PostgreSQL): a purge of the
owner's fact is refused (an erasure is complete or does not happen), a dry run refuses
alike, and a purge of the grantee's own value says what it left in the owner's sessions."""

from __future__ import annotations

import pytest
from cli_runner import chat, run
from grantees import NOT_PERMITTED, PROFILE, shared
from pg import Team

pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")


def test_a_grantee_cannot_purge_the_owners_fact_and_the_dry_run_says_so_too(
        team: Team) -> None:
    ann, bob = shared(team)
    for extra in ("--dry-run", "--yes"):
        refused = run(bob, "facts", "forget", "ann/proj", "phone", "--purge", extra,
                      code=NOT_PERMITTED)
        assert refused.stderr.splitlines() == [
            "error: only ann, its owner, can purge a fact of session 'ann/proj' (it is shared"
            " with you for writing)"], extra
    run(ann, "sessions", "share", "proj", "--with", "bob", code=0)  # read-only now
    refused = run(bob, "facts", "forget", "ann/proj", "phone", "--purge", "--dry-run",
                  code=NOT_PERMITTED)
    assert "only ann, its owner, can purge a fact of session 'ann/proj'" in refused.stderr
    # Nothing changed: the owner still purges it by its key, every mention.
    dry = run(ann, "facts", "forget", "proj", "phone", "--purge", "--dry-run", code=0)
    assert "2 mentions in 2 messages" in dry.stderr
    run(ann, "facts", "forget", "proj", "phone", "--purge", "--yes", code=0)
    shown = run(ann, "sessions", "show", "proj", code=0).stdout
    assert "Pixel9" not in shown


def test_a_grantees_purge_of_their_own_value_says_what_it_left_in_the_owners_session(
        team: Team) -> None:
    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", "proj", "hello", "--provider", "scripted", env=PROFILE, code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    chat(bob, "ann/proj", ["/remember --user phone: Nokia3310", "my phone is Nokia3310"],
         env=PROFILE, code=0)
    dry = run(bob, "facts", "forget", "phone", "--user", "team", "--purge", "--dry-run",
              env=PROFILE, code=0)
    assert dry.stderr.splitlines()[-1] == (
        "2 mentions in 2 messages of sessions owned by ann would not be changed (they are ann's"
        " to erase)")
    done = run(bob, "facts", "forget", "phone", "--user", "team", "--purge", "--yes",
               env=PROFILE, code=0)
    assert done.stderr.splitlines()[1] == (
        "2 mentions in 2 messages of sessions owned by ann were not changed (they are ann's"
        " to erase)")
