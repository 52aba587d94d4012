"""Bad bytes and bad values: one line, a documented exit code, nothing stored changed.

Findings 3 and 5 of issue 13: a byte that is not UTF-8 used to end a piped chat
with a traceback, and nan or huge values were stored and broke a session for good.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import invoke
from dialect import intact

from chatmem.store import Store


def chatmem(args: list[bytes | str], home: Path, stdin: bytes = b"",
            env: dict[bytes, bytes] | None = None) -> subprocess.CompletedProcess:
    environ = {**os.environb, b"HOME": str(home).encode(), b"NO_COLOR": b"1",
               b"COLUMNS": b"200", **(env or {})}
    return subprocess.run([sys.executable, "-m", "chatmem", *args], input=stdin,
                          capture_output=True, env=environ, timeout=60)


def contents(db: Path, session: str = "s") -> list[str]:
    with Store(db) as store:
        return [m.content for m in store.history.messages(store.sessions.session(session).id)]


def test_a_byte_that_is_not_utf8_in_a_piped_chat_is_replaced_and_the_script_goes_on(
    tmp_path: Path,
) -> None:
    db = tmp_path / "h.db"
    done = chatmem(["chat", "s", "--db", str(db), "--provider", "scripted"], tmp_path,
                   b"caf\xe9\nsecond\nthird\n")
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    assert b"not UTF-8; each was replaced by \xef\xbf\xbd" in done.stderr
    assert [c for c in contents(db)[::2]] == ["caf\ufffd", "second", "third"]


def test_ask_with_a_byte_that_is_not_utf8_is_answered(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    done = chatmem([b"ask", b"\xff price?", b"--session", b"s", b"--db", str(db).encode(),
                    b"--provider", b"scripted"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert contents(db)[0] == "\ufffd price?"


@pytest.mark.parametrize(("args", "line"), [
    # As an option, named by the command line's check of every text parameter.
    ([b"ask", b"hi", b"--session", b"a\xff"],
     "error: --session must be UTF-8 text; it holds bytes that are not\n"),
    # As ask's first word (its words keep such bytes: a question's are replaced).
    ([b"ask", b"a\xff", b"hi"], "error: session name 'a\\udcff' is not valid UTF-8\n"),
])
def test_a_session_name_that_is_not_utf8_is_one_line_and_exit_2(
    tmp_path: Path, args: list[bytes], line: str
) -> None:
    db = tmp_path / "h.db"
    done = chatmem([*args, b"--db", str(db).encode(), b"--provider", b"scripted"], tmp_path)
    assert done.returncode == 2
    assert done.stderr.decode() == line
    assert not db.exists()


@pytest.mark.parametrize(("where", "args", "env"), [
    ("--model", [b"--model", b"m\xff"], {}),
    ("--system", [b"--system", b"be \xe9 brief"], {}),
    ("--helper-model", [b"--helper-model", b"\xc3("], {}),
    ("CHATMEM_MODEL", [], {b"CHATMEM_MODEL": b"m\xff"}),
    ("CHATMEM_SYSTEM", [], {b"CHATMEM_SYSTEM": "说中文".encode("gbk")}),
    ("CHATMEM_KEY", [], {b"CHATMEM_KEY": "café".encode("latin-1")}),
])
def test_an_option_or_variable_that_is_not_utf8_is_one_line_and_exit_2(
    tmp_path: Path, where: str, args: list[bytes], env: dict[bytes, bytes]
) -> None:
    db = tmp_path / "h.db"
    done = chatmem([b"chat", b"s", b"--db", str(db).encode(), b"--provider", b"scripted", *args],
                   tmp_path, b"hi\n", env)
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"error: {where} must be UTF-8 text; it holds bytes that are not\n")
    assert not db.exists()


@pytest.mark.parametrize(("where", "args"), [
    ("--user", [b"facts", b"list", b"--user", "李".encode("gbk")]),
    ("--user", [b"forget-me", b"--user", b"a\xff", b"--dry-run"]),
    ("--turn", [b"inspect", b"s", b"--turn", b"\xff"]),
])
def test_other_options_that_are_not_utf8_are_one_line_and_exit_2(
    tmp_path: Path, where: str, args: list[bytes]
) -> None:
    db = tmp_path / "h.db"
    # The history is made in process (a process of its own only cost a second of CPU);
    # the command given bytes runs as a real process, its argv the operating system's.
    invoke("chat", "s", "--db", str(db), "--provider", "scripted", input="hi\n", code=0)
    before = db.read_bytes()
    done = chatmem([*args, b"--db", str(db).encode()], tmp_path)
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"error: {where} must be UTF-8 text; it holds bytes that are not\n")
    assert db.read_bytes() == before


RULE = ("use letters, digits, '-', '_', '.' or '+', starting with a letter or digit,"
        " no spaces or '/', up to 64 characters (e.g. trip-b)")


@pytest.mark.parametrize("name", ["a\x1b]0;PWNED\x07", "x" * 10_000, "../x", "a;rm -rf /",
                                  "$(whoami)", "旅行 计划", "a'b\"c", "-rf"])
def test_session_names_outside_the_name_rule_are_one_line_and_nothing_is_created(
    tmp_path: Path, name: str
) -> None:
    db = tmp_path / "h.db"
    result = invoke("chat", name, "--db", str(db), "--provider", "scripted",
                    input="hi\n")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert "\x1b" not in result.stderr
    if name != "-rf":  # an option-like name is a usage error before anything opens
        assert result.stderr == f"error: invalid session name {name!r}: {RULE}\n"
    assert not db.exists() or sqlite3.connect(db).execute(
        "SELECT count(*) FROM sessions").fetchone() == (0,)


@pytest.mark.parametrize("name", ["旅行计划", "trip-b.2026+x", "a" * 64])
def test_names_within_the_rule_work_in_any_script(tmp_path: Path, name: str) -> None:
    db = tmp_path / "h.db"
    result = invoke("chat", name, "--db", str(db), "--provider", "scripted",
                    input="hi\n")
    assert result.exit_code == 0, result.stderr
    assert contents(db, name) == ["hi", "echo #1: hi"]


def test_an_empty_session_name_is_refused(tmp_path: Path) -> None:
    result = invoke("chat", "   ", "--db", str(tmp_path / "h.db"), "--provider",
                    "scripted", input="hi\n")
    assert result.exit_code == 2
    assert result.stderr == "error: a session name cannot be empty\n"


@pytest.mark.parametrize(("spec", "message"), [
    ("summary-buffer:max_tokens=200,prune_to=nan",
     "parameter prune_to='nan' of strategy 'summary-buffer' must be a finite number"),
    ("summary-buffer:prune_to=inf",
     "parameter prune_to='inf' of strategy 'summary-buffer' must be a finite number"),
    ("window:k=-1", "parameter k='-1' of strategy 'window' must be at least 0"),
    ("tokens:max_tokens=0", "parameter max_tokens='0' of strategy 'tokens' must be at least 1"),
    ("window:k=1000000000000",
     "parameter k='1000000000000' of strategy 'window' must be at most 1000000000"),
    ("window:k=" + "9" * 5000, None),
    # Finite, but the ranking adds them up: inf, then nan scores in `inspect --next`.
    ("retrieval:sitting=1e308,smooth=1e308",
     "parameter smooth='1e308' of strategy 'retrieval' must be at most 1000000000"),
    ("retrieval:gap_hours=1e300",
     "parameter gap_hours='1e300' of strategy 'retrieval' must be at most 1000000000"),
])
def test_bad_strategy_values_are_refused_before_anything_is_stored(
    tmp_path: Path, spec: str, message: str | None
) -> None:
    db = tmp_path / "h.db"
    Store(db).close()
    before = db.read_bytes()
    result = invoke("chat", "s", "-s", spec, "--db", str(db), "--provider",
                    "scripted", input="hi\n")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: parameter k=")  \
        if message is None else result.stderr == f"error: {message}\n"
    assert db.read_bytes() == before


def test_a_session_stored_with_a_nan_parameter_says_so_in_one_line(tmp_path: Path) -> None:
    """A file written before values were checked: the session opens with the default in its
    place and says so in one line; giving the parameter again is still checked."""
    db = tmp_path / "h.db"
    with Store(db) as store:
        store.sessions.create_session("s", "summary-buffer", {"max_tokens": 200, "prune_to": "nan"})
    args = ["chat", "s", "--db", str(db), "--provider", "scripted"]
    result = invoke(*args, "-p", "prune_to=nan", input="hi\n")
    assert result.exit_code == 2
    assert result.stderr == ("error: parameter prune_to='nan' of strategy 'summary-buffer'"
                             " must be a finite number\n")
    result = invoke(*args, input="hi\n")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        "session s was saved by another version of strategy summary-buffer; left out "
        "prune_to=nan (refused now: the default is used)")
    assert contents(db) == ["hi", "echo #1: hi"]


@pytest.mark.parametrize(("line", "message"), [
    ("timeout = nan", "key 'timeout' must be a finite number, got nan"),
    ("timeout = inf", "key 'timeout' must be a finite number, got inf"),
    ("max_retries = 1000000000", "key 'max_retries' must be at most 10, got 1000000000"),
    ("reply_timeout = inf", "key 'reply_timeout' must be a finite number, got inf"),
    ("idle_timeout = 1e9", "key 'idle_timeout' must be at most 3600, got 1000000000.0"),
    ("context_budget = 0", "key 'context_budget' must be at least 1, got 0"),
])
def test_config_values_that_would_break_every_request_are_refused(
    tmp_path: Path, line: str, message: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(line + "\n", encoding="utf-8")
    result = invoke("chat", "s", "--db", str(tmp_path / "h.db"), "--config",
                    str(config), "--provider", "scripted", input="hi\n")
    assert result.exit_code == 2
    assert result.stderr == f"error: {config}: {message}\n"
    assert not (tmp_path / "h.db").exists()


def test_an_unstorable_reply_or_transcript_text_is_stored_with_replacement_characters(
    make_engine, store: Store
) -> None:
    engine = make_engine("buffer")
    engine.replay_turn("lone \ud800 surrogate", "reply \udcff")
    assert [m.content for m in store.history.messages(engine.session.id)] == [
        "lone \ufffd surrogate", "reply \ufffd"]
    assert intact(store)


def test_a_refused_turn_in_a_new_session_leaves_no_session(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    result = invoke("chat", "r", "--db", str(db), "--provider", "scripted",
                    "-s", "tokens:max_tokens=1", input="hi\n")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].startswith("error: not sent:")
    with Store(db) as store:
        assert store.sessions.find_session("r") is None


def test_a_refused_turn_keeps_the_sessions_strategy_and_system_prompt(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    args = ["chat", "r", "--db", str(db), "--provider", "scripted"]
    assert invoke(*args, "-s", "window:k=3", "--system", "简短回答",
                  input="你好\n").exit_code == 0
    result = invoke(*args, "-s", "tokens:max_tokens=1", "--system", "other",
                    input="hi\n")
    assert result.exit_code == 2
    with Store(db) as store:
        session = store.sessions.session("r")
        assert (session.strategy, session.params, session.system) == (
            "window", {"k": 3}, "简短回答")
        assert [t.status for t in store.turns.turns(session.id)] == ["ok"]
    # A change whose turn is sent is kept, with that turn.
    result = invoke(*args, "-s", "tokens:max_tokens=100", input="hi\n")
    assert result.exit_code == 0, result.stderr
    with Store(db) as store:
        session = store.sessions.session("r")
        assert (session.strategy, session.params) == ("tokens", {"max_tokens": 100})
