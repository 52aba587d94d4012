"""`chatmem sessions copy`: a history moves between a file and PostgreSQL with every table,
and every turn inspects the same afterwards."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from cli_runner import invoke, output
from pg import PostgresServer
from test_json_schema import check

from chatmem.errors import NotFound, UsageError
from chatmem.store import Store
from chatmem.store.connection import fetch_value

SAMPLES = Path(__file__).resolve().parents[2] / "sessions"
STRATEGIES = {"support": "summary-buffer:max_tokens=300", "travel-zh": "retrieval",
              "long-chat": "window:k=2"}
TABLES = ("sessions", "session_prompts", "messages", "token_counts", "turns", "summaries",
          "facts", "fact_history", "strategy_state", "probes", "message_vectors")


@pytest.fixture
def url(pg_server: PostgresServer, pg_template: str) -> Iterator[str]:
    name = pg_server.create_database(pg_template)
    yield pg_server.url(name)
    pg_server.drop_database(name)


def sample_history(db: str, config: Path) -> None:
    """The sample sessions imported, then two turns each: summaries, facts, vectors."""
    for name, strategy in STRATEGIES.items():
        output("sessions", "import", str(SAMPLES / f"{name}.jsonl"), "--name", name, "--db", db)
        output("chat", name, "--db", db, "--config", str(config), "--provider", "scripted",
               "-s", strategy,
               input="My name is Lin and I live in 杭州\n/remember city: 杭州\n"
                     "/remember city: 上海\nwhere do I live?\n")
        output("index", name, "--db", db, "--config", str(config))


def every_turn(db: str) -> dict[str, dict[int, object]]:
    """`inspect --json` of every turn that has a record (imported turns have none), by number.

    The numbers come from the history's turn rows: inspecting each of a session's hundreds
    of imported turns only to be told it has no record cost most of this test's time.
    """
    shown: dict[str, dict[int, object]] = {}
    for session in json.loads(output("sessions", "list", "--db", db, "--json")):
        name = session["name"]
        with Store(db) as store:
            recorded = [t.number for t in store.turns.turns(store.sessions.session(name).id)]
        assert set(recorded) <= set(range(1, session["turns"] + 1))
        shown[name] = {n: json.loads(output("inspect", name, "--request", str(n), "--db", db,
                                            "--json")) for n in recorded}
    return shown


def row_counts(location: str) -> dict[str, int]:
    with Store(location) as store:
        return {t: int(fetch_value(store.db, f"SELECT count(*) FROM {t}")) for t in TABLES}


def test_sqlite_to_postgresql_to_sqlite_inspects_every_turn_the_same(
        tmp_path: Path, url: str) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[embeddings]\nprovider = "hash"\n')
    first, last = str(tmp_path / "first.db"), str(tmp_path / "last.db")
    sample_history(first, config)
    before = every_turn(first)
    assert sorted(before) == sorted(STRATEGIES)
    assert all(len(turns) == 2 for turns in before.values())
    copied = json.loads(output("sessions", "copy", "--from", first, "--to", url, "--json"))
    assert copied["sessions"] == list(STRATEGIES) and copied["to"] == url
    check("sessions_copy", copied)  # the whole schema takes it, not only its $defs entry
    output("sessions", "copy", "--from", url, "--to", last)
    assert every_turn(url) == before
    assert every_turn(last) == before
    counts = row_counts(first)
    assert [t for t in TABLES if counts[t] == 0] == []  # every table has rows to copy
    assert row_counts(url) == counts == row_counts(last)
    assert output("logs", "-q", "杭州", "--db", last, "--json") == output(
        "logs", "-q", "杭州", "--db", first, "--json")


def test_copy_refuses_a_name_the_target_has_and_writes_nothing(
        tmp_path: Path, url: str) -> None:
    first = str(tmp_path / "first.db")
    for name in ("a", "b"):
        output("chat", name, "--db", first, "--provider", "scripted", input="hi\n")
    output("chat", "b", "--db", url, "--provider", "scripted", input="other\n")
    error = output("sessions", "copy", "--from", first, "--to", url, code=int(UsageError.exit_code))
    assert error.count("\n") == 1 and "'b'" in error
    assert [s["name"] for s in json.loads(output("sessions", "list", "--db", url, "--json"))] == [
        "b"]
    output("sessions", "copy", "a", "--from", first, "--to", url)
    names = {s["name"] for s in json.loads(output("sessions", "list", "--db", url, "--json"))}
    assert names == {"a", "b"}
    error = output("sessions", "copy", "nope", "--from", first, "--to", url,
                code=int(NotFound.exit_code))
    assert "nope" in error


def test_copy_leaves_out_a_shared_namesake_and_a_name_chatmem_refuses_and_says_so(
        tmp_path: Path, url: str, pg_server: PostgresServer) -> None:
    """ann sees her own 旅行, bob's 旅行 shared with her, and a session bob renamed with
    plain SQL to a name no command accepts: her own is copied, once and counted, and each
    left out is named in one line saying why."""
    database = urlsplit(url).path.lstrip("/")
    ann, bob = pg_server.url(database, "ann"), pg_server.url(database, "bob")
    output("ask", "旅行", "ann's own 杭州 trip", "--provider", "scripted", "--db", ann)
    for name in ("旅行", "bad"):
        output("ask", name, f"bob's {name}", "--provider", "scripted", "--db", bob)
        output("sessions", "share", name, "--with", "ann", "--db", bob)
    with pg_server.driver.connect(bob, autocommit=True) as conn:
        conn.execute("UPDATE sessions SET name = %s WHERE name = 'bad'", ("a b\n\x1b[31mc",))
    target = str(tmp_path / "copy.db")
    copied = invoke("sessions", "copy", "--from", ann, "--to", target)
    assert copied.exit_code == 0, copied.stderr
    assert copied.stderr.splitlines() == [
        "not copied: session '旅行' (shared with you by bob): another session copied has that"
        " name (rename one and copy it by name)",
        "not copied: session 'a b\\n\\x1b[31mc' (shared with you by bob): its name is not one"
        " chatmem accepts (letters, digits, '-', '_', '.' or '+', up to 64)",
        f"copied 1 session (2 messages, 1 turn record) from {ann} to {target}"]
    listed = json.loads(output("sessions", "list", "--db", target, "--json"))
    assert [s["name"] for s in listed] == ["旅行"]
    shown = json.loads(output("inspect", "旅行", "--db", target, "--json"))
    assert shown["turn"]["input"] == "ann's own 杭州 trip"
    report = json.loads(output("sessions", "copy", "--from", ann, "--to",
                               str(tmp_path / "again.db"), "--json"))
    check("sessions_copy", report)
    assert report["sessions"] == ["旅行"] and report["rows"]["messages"] == 2
    assert report["skipped"] == [
        {"name": "旅行", "reason": "name-taken", "shared_by": "bob", "owner": "bob"},
        {"name": "a b\n\x1b[31mc", "reason": "invalid-name", "shared_by": "bob",
         "owner": "bob"}]


def test_a_superusers_copy_says_whose_namesake_it_left_out_not_that_it_was_shared(
        tmp_path: Path, url: str, pg_server: PostgresServer) -> None:
    """A superuser reads every person's sessions, shared with it or not, and copies them:
    the one left out is bob's, which nobody shared with it."""
    database = urlsplit(url).path.lstrip("/")
    ann, bob = pg_server.url(database, "ann"), pg_server.url(database, "bob")
    output("ask", "旅行", "ann's 杭州 trip", "--provider", "scripted", "--db", ann)
    output("ask", "旅行", "bob's 旅行", "--provider", "scripted", "--db", bob)
    target = str(tmp_path / "copy.db")
    copied = invoke("sessions", "copy", "--from", url, "--to", target)
    assert copied.exit_code == 0, copied.stderr
    assert copied.stderr.splitlines()[0] == (
        "not copied: session '旅行' (bob's, not shared with you: row security does not bind"
        " postgres, a superuser): another session copied has that name (copy bob/旅行 by name"
        " into another history)")
    report = json.loads(output("sessions", "copy", "bob/旅行", "--from", url, "--to",
                               str(tmp_path / "bob.db"), "--json"))
    check("sessions_copy", report)
    assert report["sessions"] == ["旅行"] and report["skipped"] == []
    report = json.loads(output("sessions", "copy", "--from", url, "--to",
                               str(tmp_path / "again.db"), "--json"))
    check("sessions_copy", report)
    assert report["skipped"] == [
        {"name": "旅行", "reason": "name-taken", "shared_by": None, "owner": "bob"}]


def test_a_role_that_is_not_superuser_copies_a_file_in_and_the_sessions_are_its_own(
        tmp_path: Path, url: str, pg_server: PostgresServer) -> None:
    """The README's way to move a history: the person's own role (ann) copies the file in.
    /retry left a mark in the source session's `erasures`, a column ann may not insert."""
    database = urlsplit(url).path.lstrip("/")
    ann, bob = pg_server.url(database, "ann"), pg_server.url(database, "bob")
    source = str(tmp_path / "source.db")
    output("chat", "旅行", "--db", source, "--provider", "scripted",
           input="我住在杭州\n/retry\n下周去上海\n")
    with Store(source) as store:
        assert store.sessions.erasures(store.sessions.session("旅行").id) == 1
    copied = invoke("sessions", "copy", "--from", source, "--to", ann)
    assert copied.exit_code == 0, copied.stderr
    assert [s["name"] for s in json.loads(output("sessions", "list", "--db", ann, "--json"))] == [
        "旅行"]
    assert json.loads(output("sessions", "list", "--db", bob, "--json")) == []
    last = json.loads(output("inspect", "旅行", "--db", ann, "--json"))["turn"]
    assert last["input"] == "下周去上海"
    output("ask", "旅行", "我住在哪里?", "--provider", "scripted", "--db", ann)
    asked = json.loads(output("inspect", "旅行", "--db", ann, "--json"))["turn"]
    assert (asked["number"], asked["input"]) == (last["number"] + 1, "我住在哪里?")


def test_copy_refuses_a_profile_fact_the_target_holds_otherwise_and_skips_the_same_one(
        tmp_path: Path, url: str, pg_server: PostgresServer) -> None:
    """Copied in, a profile fact the target's profile holds with another value would leave
    two live values of one key (each reaching contexts; `facts forget` refusing to pick):
    refused before anything is written, naming the profile and the key, as an archive's
    import refuses it. The same value is not copied again; a superuser's copy of two
    people's `default` profiles is refused too."""
    h1, h2, h3 = (str(tmp_path / f"h{n}.db") for n in (1, 2, 3))
    for db, name, value in ((h1, "s1", "peanuts"), (h2, "s2", "shellfish"),
                            (h3, "s3", "peanuts")):
        output("chat", name, "-s", "entity", "--provider", "scripted", "--db", db,
               input=f"/remember --user allergy: {value}\n")
    error = output("sessions", "copy", "--from", h2, "--to", h1, code=int(UsageError.exit_code))
    assert error.count("\n") == 1
    assert "user default's profile in" in error and "'allergy' already ('peanuts')" in error
    assert [s["name"] for s in json.loads(output("sessions", "list", "--db", h1, "--json"))] == [
        "s1"]
    report = json.loads(output("sessions", "copy", "--from", h3, "--to", h1, "--json"))
    assert report["sessions"] == ["s3"] and report["rows"]["facts"] == 0
    output("facts", "forget", "allergy", "--db", h1)  # one fact: forget names it
    assert json.loads(output("facts", "list", "--db", h1, "--json")) == []
    database = urlsplit(url).path.lstrip("/")
    for role, value in (("ann", "peanuts"), ("bob", "shellfish")):
        output("chat", role, "--provider", "scripted", "--db", pg_server.url(database, role),
               input=f"/remember --user allergy: {value}\n")
    target = str(tmp_path / "everyone.db")
    error = output("sessions", "copy", "--from", url, "--to", target,
                   code=int(UsageError.exit_code))
    assert "holds two values of user default's 'allergy'" in error
    assert json.loads(output("sessions", "list", "--db", target, "--json")) == []


def test_copy_counts_turn_records_not_the_conversations_turns(tmp_path: Path) -> None:
    """An imported session of 60 turns has no turn record: the copy's line said '3 turns'
    where `sessions list` counts 61 (and it said 'session(s)')."""
    first, backup = str(tmp_path / "first.db"), str(tmp_path / "backup.db")
    output("sessions", "import", str(SAMPLES / "travel-zh.jsonl"), "--name", "tz", "--db", first)
    output("ask", "tz", "我住在杭州", "--db", first, "--provider", "scripted")
    listed = json.loads(output("sessions", "list", "--db", first, "--json"))
    assert [(s["turns"], s["requests"]) for s in listed] == [(61, 1)]
    result = invoke("sessions", "copy", "--from", first, "--to", backup, code=0)
    assert "copied 1 session (122 messages, 1 turn record) from " in result.stderr


def test_copy_names_every_session_the_target_has_at_once(tmp_path: Path, url: str) -> None:
    """Two clashing names ('旅行', '笔记') were refused one at a time: the error named '旅行',
    and after a rename the next copy was refused for '笔记'. Now both are named, and the
    copy by name of the rest is pointed to."""
    first = str(tmp_path / "first.db")
    for name in ("旅行", "笔记", "other"):
        output("chat", name, "--db", first, "--provider", "scripted", input="你好\n")
    for name in ("旅行", "笔记"):
        output("chat", name, "--db", url, "--provider", "scripted", input="hi\n")
    error = output("sessions", "copy", "--from", first, "--to", url, code=int(UsageError.exit_code))
    assert error.count("\n") == 1, error
    assert "2 of these sessions: '旅行', '笔记'" in error and "name the others" in error
