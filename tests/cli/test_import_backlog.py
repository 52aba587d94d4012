"""`sessions import` and `replay --save-as` start embedding what recall by meaning needs."""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

import pytest
from cli_runner import invoke

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
WAITING = re.compile(r"^([\d,]+) messages? of (\S+) wait for vectors \(([^)]+)\)")
BACKGROUND = re.compile(r"\(process (\d+)\)")


def waiting_lines(stderr: str) -> list[tuple[int, str, str, int | None]]:
    """(messages, session, model, background pid) per line that says what waits."""
    found = []
    for line in stderr.splitlines():
        if match := WAITING.match(line):
            pid = BACKGROUND.search(line)
            found.append((int(match[1].replace(",", "")), match[2], match[3],
                          int(pid[1]) if pid else None))
    return found


def wait_for(pid: int) -> None:
    """The background indexer is this process's child (CliRunner runs in-process)."""
    with contextlib.suppress(ChildProcessError):  # already reaped: it has ended
        os.waitpid(pid, 0)


def left_to_embed(db: Path, session: str) -> int:
    result = invoke("index", session, "--db", str(db), "--json")
    assert result.exit_code == 0, result.stderr
    return int(json.loads(result.stdout)["embedded"])


@pytest.mark.usefixtures("retrieval_config")
def test_import_embeds_in_the_background_and_the_next_process_finds_it_done(
        tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    result = invoke("sessions", "import", str(SESSIONS / "long-chat.jsonl"), "lc",
                    "--db", str(db))
    assert result.exit_code == 0, result.stderr
    [(missing, session, model, pid)] = waiting_lines(result.stderr)
    assert (missing, session, model) == (400, "lc", "hash:256")
    assert pid is not None
    wait_for(pid)
    assert left_to_embed(db, "lc") == 0


@pytest.mark.usefixtures("retrieval_config")
def test_no_index_says_how_many_wait_and_leaves_them(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    result = invoke("sessions", "import", str(SESSIONS / "travel-zh.jsonl"), "旅行",
                    "--db", str(db), "--no-index")
    assert result.exit_code == 0, result.stderr
    [(missing, session, _, pid)] = waiting_lines(result.stderr)
    assert (session, pid) == ("旅行", None)
    assert left_to_embed(db, "旅行") == missing > 0


@pytest.mark.usefixtures("retrieval_config")
def test_replay_save_as_indexes_only_the_sessions_whose_own_strategy_recalls(
        tmp_path: Path) -> None:
    """Saved under retrieval and window: the retrieval session's replay embedded what it
    recalls from, and the window one never reads a vector, whatever strategy the config
    names for new sessions, so nothing waits and no sentence says recall is coming."""
    db = tmp_path / "h.db"
    result = invoke("replay", str(SESSIONS / "support.jsonl"), "-s", "retrieval", "-s", "window",
                    "--save-as", "rs", "--db", str(db), "--json")
    assert result.exit_code == 0, result.stderr
    recalling, windowed = (run["session"] for run in json.loads(result.stdout)["strategies"])
    assert waiting_lines(result.stderr) == []
    assert windowed not in result.stderr
    assert left_to_embed(db, recalling) == 0


def test_nothing_starts_when_no_strategy_recalls_by_meaning(
        tmp_path: Path, hash_embedder: Path) -> None:
    db = tmp_path / "h.db"
    result = invoke("sessions", "import", str(SESSIONS / "support.jsonl"), "s",
                    "--db", str(db))
    assert result.exit_code == 0, result.stderr
    assert waiting_lines(result.stderr) == []
    assert left_to_embed(db, "s") > 0


@pytest.mark.usefixtures("retrieval_config")
def test_the_background_indexer_never_imports_from_the_current_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m` puts the cwd first on the path: a typer.py in the folder the user
    imported from ran as the user in the indexer, which then did nothing."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    ran = tmp_path / "ran"
    (folder / "typer.py").write_text(f"open({str(ran)!r}, 'w').close()\nraise SystemExit(3)\n",
                                     encoding="utf-8")
    monkeypatch.chdir(folder)
    db = tmp_path / "h.db"
    result = invoke("sessions", "import", str(SESSIONS / "support.jsonl"), "s", "--db", str(db))
    assert result.exit_code == 0, result.stderr
    [(_, _, _, pid)] = waiting_lines(result.stderr)
    assert pid is not None
    wait_for(pid)
    assert not ran.exists()
    assert left_to_embed(db, "s") == 0


@pytest.mark.usefixtures("retrieval_config")
def test_an_archive_of_several_sessions_is_embedded_by_one_process_in_turn(
        tmp_path: Path) -> None:
    """A restored archive started one `chatmem index` per session at once: each loads the
    embedding model (about 100 MB) and all of them fought for the CPU and the history file's
    write lock, three sessions three processes, thirty thirty. One process embeds them in turn."""
    first = tmp_path / "first.db"
    for source, name in (("support.jsonl", "客服"), ("travel-zh.jsonl", "旅行"),
                         ("long-chat.jsonl", "lc")):
        made = invoke("sessions", "import", str(SESSIONS / source), name, "--db", str(first),
                      "--no-index")
        assert made.exit_code == 0, made.stderr
    archive = tmp_path / "all.zip"
    exported = invoke("sessions", "export", "--all", str(archive), "--db", str(first))
    assert exported.exit_code == 0, exported.stderr
    db = tmp_path / "second.db"
    result = invoke("sessions", "import", str(archive), "--db", str(db))
    assert result.exit_code == 0, result.stderr
    # One line for the one process (a line per session, each naming it, was noise).
    [line] = [line for line in result.stderr.splitlines() if "wait for vectors" in line]
    match = re.match(r"^([\d,]+) messages of 3 sessions \((.+)\) wait for vectors", line)
    assert match is not None, line
    assert sorted(match[2].split(", ")) == ["lc", "客服", "旅行"]
    pid = BACKGROUND.search(line)
    assert pid is not None
    wait_for(int(pid[1]))
    assert [left_to_embed(db, name) for name in ("客服", "旅行", "lc")] == [0, 0, 0]
