"""Every command on a PostgreSQL history (`--db postgresql://…`, CHATMEM_DB, config `db`),
against the embedded test server; a URL is never a path and its password is never shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import invoke
from pg import PostgresServer
from typer.testing import Result

from chatmem.errors import StoreError

PASSWORD = "pw-S3CRET-x"
SAMPLES = Path(__file__).resolve().parents[2] / "sessions"


@pytest.fixture
def url(pg_server: PostgresServer, pg_database: str) -> str:
    """The database's URL with a password in it (the test server trusts its socket, so
    the password is carried, never checked: what matters is that it is never shown)."""
    return f"postgresql://postgres:{PASSWORD}@/{pg_database}?host={pg_server.socket_dir}"


class Run:
    """Runs commands, keeping every output so a test can grep them all."""

    def __init__(self) -> None:
        self.outputs: list[str] = []

    def __call__(self, *args: str, input: str | None = None, env: dict[str, str] | None = None,
                 code: int = 0) -> Result:
        result = invoke(*args, input=input, env=env)
        self.outputs += [result.stdout, result.stderr, repr(result.exception)]
        assert result.exit_code == code, (args, result.stdout, result.stderr)
        return result


def test_every_command_works_on_postgresql_and_never_shows_the_password(
        url: str, tmp_path: Path) -> None:
    run = Run()
    db = ["--db", url]
    run("chat", "trip", *db, "--provider", "scripted", "-s", "window:k=2",
        input="I am going to Hangzhou\n我喜欢龙井茶\nwhat about tea?\n")
    run("ask", "trip", "where am I going?", *db, "--provider", "scripted")
    listed = json.loads(run("sessions", "list", *db, "--json").stdout)
    assert [(s["name"], s["turns"]) for s in listed] == [("trip", 4)]
    shown = json.loads(run("inspect", "trip", *db, "--json").stdout)
    assert shown["turn"]["number"] == 4
    run("sessions", "fork", "trip", "trip2", *db)
    exported = tmp_path / "trip.jsonl"
    run("sessions", "export", "trip", *db, "-o", str(exported))
    run("sessions", "import", str(exported), "--name", "again", *db)
    names = {s["name"] for s in json.loads(run("sessions", "list", *db, "--json").stdout)}
    assert names == {"trip", "trip2", "again"}
    run("replay", "trip", *db, "-s", "window", "--provider", "scripted")
    run("sessions", "import", str(SAMPLES / "travel-zh.jsonl"), "--name", "zh", *db)
    scored = json.loads(run("eval", "zh", *db, "-s", "window", "--json").stdout)
    assert [r["strategy"]["name"] for r in scored["strategies"]] == ["window"]
    run("facts", "list", *db)
    run("logs", *db)
    run("logs", *db, "-q", "龙井")
    run("sessions", "prune", *db)
    run("sessions", "delete", "trip2", *db, "--yes")
    run("forget-me", *db, "--yes")
    assert json.loads(run("sessions", "list", *db, "--json").stdout) == []  # all the default user's
    everything = "\n".join(run.outputs)
    assert PASSWORD not in everything


def test_chatmem_db_and_the_config_name_the_database(url: str, tmp_path: Path) -> None:
    run = Run()
    run("chat", "trip", "--provider", "scripted", input="hello\n", env={"CHATMEM_DB": url})
    config = tmp_path / "c.toml"
    config.write_text(f'db = "{url}"\n[embeddings]\nprovider = "hash"\n')
    listed = json.loads(run("sessions", "list", "--config", str(config), "--json").stdout)
    assert [s["name"] for s in listed] == ["trip"]
    indexed = json.loads(run("index", "trip", "--config", str(config), "--json").stdout)
    assert indexed["embedded"] == 2
    for shown in (run("config", "show", "--config", str(config)).stdout,
                  run("config", "show", "--config", str(config), "--json").stdout,
                  run("config", "show", env={"CHATMEM_DB": url}).stdout):
        assert "postgresql://postgres:***@/" in shown
    assert PASSWORD not in "\n".join(run.outputs)


@pytest.mark.parametrize("command", ["encrypt", "decrypt", "rekey"])
def test_file_only_commands_refuse_a_url_in_one_line(url: str, command: str) -> None:
    result = Run()(command, "--db", url, code=2)
    assert result.stderr.count("\n") == 1
    assert "postgresql://postgres:***@/" in result.stderr and PASSWORD not in result.stderr


def test_a_url_is_never_taken_for_a_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         pg_server: PostgresServer) -> None:
    """A database that does not exist is the server's error (masked), not an empty history
    read from a file called `postgresql:`, and nothing is created in the working folder."""
    monkeypatch.chdir(tmp_path)
    missing = f"postgresql://postgres:{PASSWORD}@/no_such_db?host={pg_server.socket_dir}"
    result = Run()("sessions", "list", "--db", missing, code=int(StoreError.exit_code))
    assert result.stderr.startswith("error: postgresql://postgres:***@/no_such_db")
    assert PASSWORD not in result.stderr + result.stdout
    assert list(tmp_path.iterdir()) == []


def test_the_background_indexer_gets_the_url_but_not_on_its_command_line(
        url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sessions import` embeds in a background `chatmem index`: on the same database, with
    the URL passed in its environment (a command line is visible to every user's `ps`)."""
    import os
    import re

    config = tmp_path / "c.toml"
    config.write_text('strategy = "retrieval"\n[embeddings]\nprovider = "hash"\n')
    monkeypatch.setenv("CHATMEM_CONFIG", str(config))
    run = Run()
    imported = run("sessions", "import", str(SAMPLES / "travel-zh.jsonl"), "zh", "--db", url)
    [pid] = [int(p) for p in re.findall(r"\(process (\d+)\)", imported.stderr)]
    command_line = Path(f"/proc/{pid}/cmdline")
    if command_line.exists():  # until it is reaped below
        assert PASSWORD not in command_line.read_text(errors="replace")
    os.waitpid(pid, 0)
    left = json.loads(run("index", "zh", "--db", url, "--json").stdout)["embedded"]
    assert left == 0
    assert PASSWORD not in "\n".join(run.outputs)
