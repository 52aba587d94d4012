"""`chatmem sessions list|show|delete`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chatmem.cli import app

runner = CliRunner()
SECRET = "ZEBRA-XYZZY-42 杭州秘密"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "x.db"
    for name, lines, extra in (
        ("alpha", "first\nsecond\n", ["--strategy", "window", "--param", "k=2"]),
        ("秘密", f"remember {SECRET}\n", ["--strategy", "tokens"]),
    ):
        result = runner.invoke(app, ["chat", name, "--db", str(path), "--provider", "scripted",
                                     *extra], input=lines)
        assert result.exit_code == 0, result.stderr
    return path


def test_list_json(db: Path) -> None:
    result = runner.invoke(app, ["sessions", "list", "--db", str(db), "--json"])
    assert result.exit_code == 0
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert set(rows) == {"alpha", "秘密"}
    assert rows["alpha"]["strategy"] == "window" and rows["alpha"]["params"] == {"k": 2}
    assert (rows["alpha"]["messages"], rows["alpha"]["turns"]) == (4, 2)
    assert rows["秘密"]["params"] == {"max_tokens": 2000}
    assert rows["秘密"]["provider"] == "scripted"


def test_list_table(db: Path) -> None:
    result = runner.invoke(app, ["sessions", "list", "--db", str(db)])
    assert result.exit_code == 0
    assert "alpha" in result.stdout and "秘密" in result.stdout and "k=2" in result.stdout


def test_list_on_a_new_file_is_empty(tmp_path: Path) -> None:
    result = runner.invoke(app, ["sessions", "list", "--db", str(tmp_path / "new.db"), "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == []


def test_show(db: Path) -> None:
    result = runner.invoke(app, ["sessions", "show", "alpha", "--db", str(db), "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["name"] == "alpha" and data["system"] == "You are a helpful assistant."
    assert [(m["turn"], m["role"], m["content"]) for m in data["messages"]] == [
        (1, "user", "first"), (1, "assistant", "echo #1: first"),
        (2, "user", "second"), (2, "assistant", "echo #2: second")]
    text = runner.invoke(app, ["sessions", "show", "秘密", "--db", str(db)])
    assert text.exit_code == 0 and f"remember {SECRET}" in text.stdout


def test_show_unknown_session(db: Path) -> None:
    result = runner.invoke(app, ["sessions", "show", "nope", "--db", str(db)])
    assert result.exit_code == 1
    assert result.stderr == f"error: no session named 'nope' in {db}\n"


def test_delete_is_physical(db: Path) -> None:
    result = runner.invoke(app, ["sessions", "delete", "秘密", "--yes", "--db", str(db)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == "deleted session 秘密\n"
    listed = json.loads(runner.invoke(app, ["sessions", "list", "--db", str(db),
                                            "--json"]).stdout)
    assert [r["name"] for r in listed] == ["alpha"]
    data = b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))
    for needle in ("ZEBRA", "zebra", "xyzzy", "杭州", "秘密", "州秘"):
        assert needle.encode() not in data, needle
    assert b"echo #2: second" in data  # the other session is intact


def test_delete_asks_first(db: Path) -> None:
    result = runner.invoke(app, ["sessions", "delete", "alpha", "--db", str(db)], input="n\n")
    assert result.exit_code == 1
    listed = json.loads(runner.invoke(app, ["sessions", "list", "--db", str(db),
                                            "--json"]).stdout)
    assert {r["name"] for r in listed} == {"alpha", "秘密"}
