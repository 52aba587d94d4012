"""`sessions export --all` on PostgreSQL: a session another role shares with the user under
the name of one of the user's own is exported too, each once, under its own member name."""

from __future__ import annotations

import json
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from cli_runner import invoke, output
from pg import PostgresServer


@pytest.fixture
def urls(pg_server: PostgresServer, pg_template: str) -> Iterator[tuple[str, str]]:
    database = pg_server.create_database(pg_template)
    yield pg_server.url(database, "ann"), pg_server.url(database, "bob")
    pg_server.drop_database(database)


def ask(url: str, session: str, text: str) -> None:
    output("ask", session, text, "--provider", "scripted", "--db", url)


def test_export_all_keeps_ones_own_and_a_shared_session_of_the_same_name(
        urls: tuple[str, str], tmp_path: Path) -> None:
    ann, bob = urls
    ask(ann, "旅行", "ann's own trip: 杭州 hotel")
    ask(bob, "旅行", "bob's trip: Paris")
    output("sessions", "share", "旅行", "--with", "ann", "--db", bob)
    archive = tmp_path / "all.zip"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # zipfile warns of a duplicate member name
        result = invoke("sessions", "export", "--all", "-o", str(archive), "--db", ann)
    assert result.exit_code == 0, result.stderr
    assert "exported 2 sessions (4 messages)" in result.stderr
    with zipfile.ZipFile(archive) as zf:
        members = zf.namelist()
        assert len(members) == len(set(members))
        listed = json.loads(zf.read("manifest.json"))["sessions"]
        firsts = {json.loads(zf.read(s["transcript"]).splitlines()[1])["content"]
                  for s in listed}
    assert [s["name"] for s in listed] == ["旅行", "旅行"]
    assert firsts == {"ann's own trip: 杭州 hotel", "bob's trip: Paris"}


def test_a_shared_session_is_exported_as_owner_name_and_says_whose_it_is(
        urls: tuple[str, str], tmp_path: Path) -> None:
    ann, bob = urls
    ask(bob, "旅行", "bob's trip: Paris")
    ask(ann, "旅行", "ann's own trip: 杭州 hotel")
    output("sessions", "share", "旅行", "--with", "ann", "--db", bob)
    archive = tmp_path / "all.zip"
    output("sessions", "export", "--all", "-o", str(archive), "--db", ann)
    with zipfile.ZipFile(archive) as zf:
        listed = json.loads(zf.read("manifest.json"))["sessions"]
    assert sorted((s["transcript"], s["shared_by"] or "") for s in listed) == [
        ("sessions/bob-旅行.jsonl", "bob"), ("sessions/旅行.jsonl", "")]


def test_facts_json_names_a_shared_session_owner_slash_name_and_restores_into_it(
        urls: tuple[str, str], tmp_path: Path) -> None:
    """ann's own 旅行 and bob's, shared with her, each hold a phone fact: facts.json and the
    summaries name bob's `bob/旅行`, and a restore puts each fact back in its own session
    (bob's is restored as bob-旅行), never bob's in ann's namesake."""
    ann, bob = urls
    for url, phone in ((bob, "Pixel9"), (ann, "Nokia3")):
        output("ask", "旅行", f"My phone is {phone}.", "--strategy", "entity", "--provider",
               "scripted", "--db", url)
    output("sessions", "share", "旅行", "--with", "ann", "--db", bob)
    archive = tmp_path / "all.zip"
    output("sessions", "export", "--all", "-o", str(archive), "--db", ann)
    with zipfile.ZipFile(archive) as zf:
        facts = json.loads(zf.read("facts.json"))
        summaries = {json.loads(zf.read(name))["session"] for name in zf.namelist()
                     if name.startswith("summaries/")}
    assert sorted((f["session"], f["stated_in"], f["value"]) for f in facts
                  if f["key"] == "phone") == [("bob/旅行", "bob/旅行", "Pixel9"),
                                              ("旅行", "旅行", "Nokia3")]
    assert summaries == {"bob/旅行", "旅行"}
    restored = tmp_path / "restored.db"
    output("sessions", "import", str(archive), "--db", str(restored))
    listed = json.loads(output("facts", "list", "--json", "--db", str(restored)))
    assert sorted((f["owner"], f["value"]) for f in listed if f["key"] == "phone") == [
        ("session bob-旅行", "Pixel9"), ("session 旅行", "Nokia3")]


def test_a_superusers_archive_holding_two_peoples_default_allergy_imports_nothing(
        urls: tuple[str, str], tmp_path: Path, pg_server: PostgresServer) -> None:
    """A superuser's archive holds ann's and bob's profiles, both named `default`: restored
    into one history, two live values of `allergy` would each reach contexts. One value
    held twice is restored once."""
    ann, bob = urls
    superuser = pg_server.url(urlsplit(ann).path.lstrip("/"))
    for url, name, value in ((ann, "a", "peanuts"), (bob, "b", "shellfish")):
        output("chat", name, "--provider", "scripted", "--db", url,
               input=f"/remember --user allergy: {value}\n/remember --user 城市: 杭州\n")
    archive = tmp_path / "all.zip"
    output("sessions", "export", "--all", "-o", str(archive), "--db", superuser)
    restored = tmp_path / "restored.db"
    result = invoke("sessions", "import", str(archive), "--db", str(restored))
    assert result.exit_code != 0 and result.stderr.count("\n") == 1
    assert "user default's 'allergy' ('peanuts' and 'shellfish'" in result.stderr
    assert json.loads(output("sessions", "list", "--json", "--db", str(restored))) == []
    output("facts", "forget", "allergy", "--db", bob)
    output("sessions", "export", "--all", "-o", str(archive), "--force", "--db", superuser)
    output("sessions", "import", str(archive), "--db", str(restored))
    listed = json.loads(output("facts", "list", "--json", "--db", str(restored)))
    assert sorted((f["key"], f["value"]) for f in listed) == [
        ("allergy", "peanuts"), ("城市", "杭州")]


def test_files_left_out_name_a_shared_session_owner_slash_name(
        urls: tuple[str, str], tmp_path: Path) -> None:
    """Each session's files left out were keyed by its plain name: ann's own 旅行 and bob's,
    shared with her, were counted as one session (旅行) holding the last one's files."""
    ann, bob = urls
    for url, said in ((bob, "Paris 行程"), (ann, "杭州 hotel")):
        note = tmp_path / f"{urlsplit(url).username}.txt"
        note.write_text(said, encoding="utf-8")
        output("ask", "旅行", "read this", "-a", str(note), "--provider", "scripted",
               "--db", url)
    output("sessions", "share", "旅行", "--with", "ann", "--db", bob)
    result = invoke("sessions", "export", "--all", "-o", str(tmp_path / "all.zip"),
                    "--db", ann)
    assert result.exit_code == 0, result.stderr
    assert "not in the archive: 2 files attached to turns of 2 sessions (" in result.stderr
    assert "bob/旅行" in result.stderr
