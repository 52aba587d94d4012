"""On a team's PostgreSQL history a plain session name is one's own session (made when
missing), never one another role shares under that name: ann shares her `plan` with bob
for writing and with carol read-only, and neither has a `plan` of their own yet."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import invoke, output
from pg import PostgresServer

from chatmem.errors import NotFound, StoreError


@pytest.fixture
def team(pg_server: PostgresServer, pg_template: str) -> Iterator[tuple[str, str, str]]:
    database = pg_server.create_database(pg_template)
    carol = f"carol_{database}"
    output("admin", "add-user", carol, "--db", pg_server.url(database))
    ann, bob = pg_server.url(database, "ann"), pg_server.url(database, "bob")
    output("chat", "plan", "--provider", "scripted", "--db", ann, input="ann 的计划\n")
    output("sessions", "share", "plan", "--with", "bob", "--write", "--db", ann)
    output("sessions", "share", "plan", "--with", carol, "--db", ann)
    yield ann, bob, pg_server.url(database, carol)
    pg_server.drop_database(database)


def inputs(url: str, session: str) -> list[str]:
    shown = json.loads(output("sessions", "show", session, "--json", "--db", url))
    return [m["content"] for m in shown["messages"] if m["role"] == "user"]


def listed(url: str) -> list[tuple[str, str]]:
    return sorted((s["name"], s["shared_by"] or "")
                  for s in json.loads(output("sessions", "list", "--json", "--db", url)))


def test_a_plain_name_is_never_a_write_share_of_that_name(
        team: tuple[str, str, str]) -> None:
    ann, bob, _ = team
    asked = invoke("ask", "plan", "my salary is 100k, keep it private", "--provider",
                   "scripted", "--db", bob)
    assert asked.exit_code == 0, asked.stderr
    assert inputs(ann, "plan") == ["ann 的计划"]
    assert inputs(bob, "plan") == ["my salary is 100k, keep it private"]
    assert listed(bob) == [("plan", ""), ("plan", "ann")]
    output("chat", "ann/plan", "--provider", "scripted", "--db", bob, input="bob 写进 ann 的\n")
    assert inputs(ann, "plan") == ["ann 的计划", "bob: bob 写进 ann 的"]
    assert inputs(bob, "plan") == ["my salary is 100k, keep it private"]


def test_a_plain_name_reaches_no_share_until_one_makes_it(team: tuple[str, str, str]) -> None:
    _, _, carol = team
    missing = invoke("inspect", "plan", "--db", carol)
    assert missing.exit_code == int(NotFound.exit_code)
    assert "did you mean 'ann/plan'?" in missing.stderr
    invoke("sessions", "rename", "plan", "mine", "--db", carol, code=int(NotFound.exit_code))
    invoke("sessions", "delete", "plan", "--yes", "--db", carol, code=int(NotFound.exit_code))


def test_a_read_only_share_leaves_its_name_free_for_chat_import_and_fork(
        team: tuple[str, str, str], tmp_path: Path) -> None:
    ann, _, carol = team
    chatted = invoke("chat", "plan", "--provider", "scripted", "--db", carol,
                     input="carol 自己的计划\n")
    assert chatted.exit_code == 0, chatted.stderr
    assert inputs(carol, "plan") == ["carol 自己的计划"]
    assert inputs(carol, "ann/plan") == ["ann 的计划"]
    output("sessions", "delete", "plan", "--yes", "--db", carol)
    transcript = tmp_path / "c.jsonl"
    transcript.write_text('{"role": "user", "content": "导入的计划"}\n'
                          '{"role": "assistant", "content": "好"}\n', encoding="utf-8")
    output("sessions", "import", str(transcript), "plan", "--db", carol)
    assert inputs(carol, "plan") == ["导入的计划"]
    output("sessions", "delete", "plan", "--yes", "--db", carol)
    output("sessions", "fork", "ann/plan", "plan", "--db", carol)
    # Her words in carol's copy are hers (the copy keeps who wrote them), named as hers.
    assert inputs(carol, "plan") == ["ann: ann 的计划"]
    output("chat", "plan", "--provider", "scripted", "--db", carol, input="在副本里\n")
    assert inputs(carol, "plan") == ["ann: ann 的计划", "在副本里"]
    assert inputs(ann, "plan") == ["ann 的计划"]
    # Her own `plan` taken now, a second one is refused by her own name only.
    taken = invoke("sessions", "import", str(transcript), "plan", "--db", carol)
    assert taken.exit_code == int(StoreError.exit_code), taken.stderr
    assert listed(carol) == [("plan", ""), ("plan", "ann")]
