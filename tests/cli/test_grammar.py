"""One grammar: the session positional everywhere, one name rule, export by extension,
usage lines in the Typer/Click convention."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path

import pytest
import typer
from cli_runner import invoke
from typer.core import TyperGroup

from chatmem.cli import app
from chatmem.store import Store

SAMPLE = Path(__file__).resolve().parents[2] / "sessions" / "support.jsonl"


run = partial(invoke, width=100)


def commands() -> list[list[str]]:
    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    found = []
    for name, command in root.commands.items():
        subs = getattr(command, "commands", None)
        found += [[name, sub] for sub in subs] if subs else [[name]]
    return found


@pytest.mark.parametrize("path", commands(), ids=" ".join)
def test_help_follows_the_click_convention(path: list[str]) -> None:
    result = run(*path, "--help")
    assert result.exit_code == 0
    usage = result.stdout.splitlines()[0]
    assert usage.startswith(f"Usage: chatmem {' '.join(path)} [OPTIONS]")
    assert not re.search(r"[{}]", usage), usage
    assert not re.search(r"<\w+>", result.stdout), "value types are TEXT, PATH, INTEGER"
    arguments = usage.split("[OPTIONS]", 1)[1]
    for word in re.findall(r"[A-Za-z]+", arguments):
        assert word.isupper(), usage
    assert "Example: " in result.stdout  # a command's docstring is its --help


@pytest.mark.parametrize("group", ["sessions", "config", "facts", "admin"])
def test_a_command_groups_help_has_an_example_too(group: str) -> None:
    result = run(group, "--help")
    assert result.exit_code == 0 and f"Example: chatmem {group} " in result.stdout


def test_ask_usage_names_the_optional_session() -> None:
    assert run("ask", "--help").stdout.splitlines()[0] == (
        "Usage: chatmem ask [OPTIONS] [SESSION] TEXT")


def test_ask_takes_the_session_first_or_as_an_option_or_not_at_all(tmp_path: Path) -> None:
    db = str(tmp_path / "a.db")
    base = ["--db", db, "--provider", "scripted"]
    assert run("ask", "trip", "where to?", *base).stdout == "echo #1: where to?\n"
    assert run("ask", "no session given", *base).exit_code == 0
    assert run("ask", "--session", "trip", "and then?", *base).exit_code == 0
    assert run("ask", "trip", "and now?", "--session", "trip", *base).exit_code == 0
    assert run("ask", "trip", "-", *base, input="from stdin\n").stdout == "echo #1: from stdin\n"
    with Store(db) as store:
        assert [m.content for m in store.history.messages(store.sessions.session("trip").id)
                if m.role == "user"] == ["where to?", "and then?", "and now?", "from stdin"]
        assert store.sessions.find_session("default") is None  # a one-off question is kept nowhere
    clash = run("ask", "trip", "x", "--session", "other", *base)
    assert clash.exit_code == 2
    assert clash.stderr == ("error: two sessions given: 'trip' and --session 'other'; "
                            "give one\n")
    many = run("ask", "trip", "where", "to", *base)
    assert many.exit_code == 2
    assert many.stderr == ("error: usage: chatmem ask [SESSION] TEXT (quote what has spaces); "
                           "got 3 words: 'trip where to'\n")


def test_chat_and_inspect_take_the_session_first_or_as_an_option(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    base = ["--db", db, "--provider", "scripted"]
    assert run("chat", "trip", *base, input="first\n").stdout == "echo #1: first\n"
    assert run("chat", "--session", "trip", *base, input="second\n").exit_code == 0
    assert run("chat", "trip", "--session", "trip", *base, input="third\n").exit_code == 0
    assert run("chat", *base, input="elsewhere\n").exit_code == 0  # no session: default
    with Store(db) as store:
        assert [m.content for m in store.history.messages(store.sessions.session("trip").id)
                if m.role == "user"] == ["first", "second", "third"]
        assert [s.name for s in store.sessions.list_sessions()] == ["default", "trip"]
    shown = run("inspect", "trip", "--json", *base)
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["input"] == "third"
    assert run("inspect", "--session", "trip", "--json", *base).stdout == shown.stdout
    assert run("inspect", "trip", "--session", "trip", "--json", *base).stdout == shown.stdout
    for command in (["chat", "trip", "--session", "other"],
                    ["inspect", "trip", "--session", "other"]):
        clash = run(*command, *base, input="never sent\n")
        assert (clash.exit_code, clash.stdout) == (2, ""), command
        assert clash.stderr == ("error: two sessions given: 'trip' and --session 'other'; "
                                "give one\n")
    with Store(db) as store:
        assert store.sessions.find_session("other") is None
        # the clash sent nothing
        assert len(store.history.messages(store.sessions.session("trip").id)) == 6
    missing = run("inspect", *base)
    assert (missing.exit_code, missing.stderr) == (
        2, "error: missing argument SESSION (or --session SESSION)\n")


BAD_NAME = "error: invalid session name 'bad name/with slash': use letters, digits, '-', '_'," \
           " '.' or '+', starting with a letter or digit, no spaces or '/', up to 64 " \
           "characters (e.g. trip-b)\n"


@pytest.mark.parametrize("command", [
    ["chat", "bad name/with slash"],
    ["ask", "bad name/with slash", "hi"],
    ["sessions", "rename", "trip", "bad name/with slash"],
    ["sessions", "fork", "trip", "bad name/with slash"],
    ["sessions", "import", str(SAMPLE), "bad name/with slash"],
    ["sessions", "import", str(SAMPLE), "--name", "bad name/with slash"],
    ["replay", str(SAMPLE), "-s", "window", "--save-as", "bad name/with slash"],
])
def test_one_session_name_rule_for_every_command_that_names_one(
    tmp_path: Path, command: list[str]
) -> None:
    db = tmp_path / "n.db"
    assert run("ask", "trip", "hello", "--db", str(db), "--provider", "scripted").exit_code == 0
    model = ["--provider", "scripted"] if command[0] in ("chat", "ask", "replay") else []
    result = run(*command, "--db", str(db), *model)
    assert result.exit_code == 2
    assert result.stderr == BAD_NAME
    with Store(db) as store:
        assert [s.name for s in store.sessions.list_sessions()] == ["trip"]


def test_the_rule_takes_any_script_and_the_usual_punctuation(tmp_path: Path) -> None:
    db = str(tmp_path / "n.db")
    for name in ("旅行", "trip-b", "v1.2_final", "a+b", "Ünïcode"):
        assert run("ask", name, "hi", "--db", db, "--provider", "scripted").exit_code == 0


def test_import_names_a_session_from_a_free_text_title(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"chatmem": 1, "title": "my long chat / 2"}\n'
                          '{"role": "user", "content": "hi"}\n', encoding="utf-8")
    db = str(tmp_path / "i.db")
    result = run("sessions", "import", str(transcript), "--db", db)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ("imported 1 message into session my-long-chat-2 "
                             "(named from 'my long chat / 2')\n")
    positional = run("sessions", "import", str(transcript), "mine", "--db", db)
    assert positional.stderr == "imported 1 message into session mine\n"


def test_export_never_overwrites_without_force_and_writes_what_the_extension_names(
    tmp_path: Path
) -> None:
    db = str(tmp_path / "e.db")
    run("sessions", "import", str(SAMPLE), "--db", db)
    target = tmp_path / "keep.jsonl"
    target.write_text("precious\n", encoding="utf-8")
    refused = run("sessions", "export", "support", "-o", str(target), "--db", db)
    assert refused.exit_code == 2
    assert refused.stderr == f"error: {target} already exists; add --force to overwrite it\n"
    assert target.read_text(encoding="utf-8") == "precious\n"
    forced = run("sessions", "export", "support", "-o", str(target), "--force", "--db", db)
    assert forced.exit_code == 0
    assert forced.stderr == f"exported 60 messages to {target} (jsonl)\n"
    assert json.loads(target.read_text(encoding="utf-8").splitlines()[0])["chatmem"] == 1
    markdown = tmp_path / "s.md"
    assert run("sessions", "export", "support", "-o", str(markdown), "--db", db).exit_code == 0
    assert markdown.read_text(encoding="utf-8").startswith("# support\n")
    document = tmp_path / "s.json"
    assert run("sessions", "export", "support", "-o", str(document), "--db", db).exit_code == 0
    items = json.loads(document.read_text(encoding="utf-8"))["messages"]
    # Its probes go in "messages" as in JSON Lines, so it imports back whole.
    assert sum("role" in item for item in items) == 60 and sum(
        "probe" in item for item in items) == 6
    mismatch = run("sessions", "export", "support", "-o", str(tmp_path / "x.md"), "--format",
                   "jsonl", "--db", db)
    assert mismatch.exit_code == 2
    assert mismatch.stderr == (f"error: {tmp_path / 'x.md'} names the markdown format, not "
                               "jsonl; drop --format or change the extension\n")
    unknown = run("sessions", "export", "support", "-o", str(tmp_path / "x.txt"), "--db", db)
    assert unknown.exit_code == 2
    assert "the extension does not name a format" in unknown.stderr
    assert not (tmp_path / "x.txt").exists()


def test_the_local_provider_refuses_a_model_file_that_is_not_there(tmp_path: Path) -> None:
    result = run("ask", "hi", "--provider", "local", "--model", "/nope/x.gguf",
                 "--db", str(tmp_path / "l.db"))
    assert result.exit_code == 1
    assert result.stderr == ("error: model '/nope/x.gguf' (flag --model): the local provider "
                             "runs a GGUF file, and there is none at that path\n")


def test_facts_take_the_session_first_too(tmp_path: Path) -> None:
    db = str(tmp_path / "f.db")
    base = ["--db", db, "--provider", "scripted"]
    for session in ("trip", "work"):
        assert run("chat", session, *base, input="/remember --session city: Lisbon\n"
                   ).exit_code == 0
    listed = run("facts", "list", "trip", "--json", "--db", db)
    assert [(f["value"], f["owner"]) for f in json.loads(listed.stdout)] == [
        ("Lisbon", "session trip")]
    assert json.loads(run("facts", "list", "--session", "trip", "--json", "--db", db).stdout
                      ) == json.loads(listed.stdout)
    clash = run("facts", "list", "trip", "--session", "work", "--db", db)
    assert clash.exit_code == 2 and "two sessions given" in clash.stderr
    forgot = run("facts", "forget", "trip", "city", "--db", db)
    assert forgot.exit_code == 0, forgot.stderr
    assert [f["owner"] for f in json.loads(run("facts", "list", "--json", "--db", db).stdout)
            ] == ["session work"]
