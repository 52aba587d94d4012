"""Encrypted history files from the command line: same commands, one-line key errors,
`chatmem encrypt|decrypt|rekey`, key_command, the REPL's key prompt, and no key written anywhere."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import invoke
from conftest import needs_sqlcipher
from in_a_terminal import at_a_terminal
from typer.testing import Result
from waiting import HANG, Watched

from chatmem.store import Store, cipher

pytestmark = needs_sqlcipher
KEY = "Kf7 ZQX ключ 钥匙 9931"
"""A passphrase no output or file may ever contain."""
NEW_KEY = "Second-Lock 4242 第二把钥匙"
TALK = ("Hello, my name is Mirela Quastbeck.\nMy order is QX-48213, a velvet armchair.\n"
        "我们五月去杭州旅行，住在西湖边的琉璃客栈。\nThe courier is Tobiasz Wrenfield.\n")
PHRASES = ["Quastbeck", "QX-48213", "velvet armchair", "琉璃客栈", "Wrenfield"]


def keyed(*args: str, input: str = "", key: str | None = None, **env: str) -> Result:
    """`chatmem ARGS` with CHATMEM_KEY set to `key` (unset when None) and `env` set."""
    return invoke(*args, input=input, env={"CHATMEM_KEY": key, **env})


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


# -- every command works the same -------------------------------------------------------------

_STAMP = re.compile(r"\d{4}-\d\d-\d\d[T ][\d:.]+(?:\+00:00)?|\"latency_ms\": \d+|\d+(?:\.\d)? s\b"
                    r"|\d+ (?:s|min|h|d)\b")


def session_of_commands(db: Path, folder: Path, key: str | None) -> list[tuple[str, int, str]]:
    """Run one user's day of commands; (command, exit code, stdout with times masked)."""
    transcript = folder / "trip.jsonl"
    commands = [
        (["chat", "trip", "-s", "summary-buffer:max_tokens=150"], TALK),
        (["chat", "ent", "-s", "entity"], TALK),
        (["ask", "what did I order?", "--session", "trip"], ""),
        (["sessions", "list", "--json"], ""),
        (["sessions", "show", "trip", "--json"], ""),
        (["sessions", "export", "trip", "-o", str(transcript)], ""),
        (["sessions", "import", str(transcript), "--name", "imported"], ""),
        (["sessions", "rename", "imported", "again"], ""),
        (["sessions", "fork", "trip", "branch", "--at-turn", "2", "--json"], ""),
        (["facts", "list", "--json"], ""),
        (["facts", "forget", "name", "--session", "ent"], ""),
        (["inspect", "trip", "--json"], ""),
        (["inspect", "trip", "--summaries", "--json"], ""),
        (["replay", "trip", "-s", "window", "-s", "entity", "--json"], ""),
        (["sessions", "delete", "branch", "--yes"], ""),
        (["sessions", "retention", "again", "90d"], ""),
        (["sessions", "prune", "--older-than", "30d", "--dry-run", "--json"], ""),
        (["forget-me", "--user", "nobody", "--yes"], ""),
        (["sessions", "list", "--json"], ""),
    ]
    out = []
    for args, stdin in commands:
        result = keyed(*args, "--db", str(db), *(["--provider", "scripted"]
                                                if args[0] in ("chat", "ask", "replay", "eval")
                                                else []), input=stdin, key=key)
        text = _STAMP.sub("T", result.stdout.replace(str(folder), "DIR"))
        out.append((" ".join(args[:2]), result.exit_code, text))
    return out


def test_every_command_works_the_same_on_an_encrypted_file(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "enc").mkdir()
    plain = session_of_commands(tmp_path / "plain" / "h.db", tmp_path / "plain", None)
    encrypted = session_of_commands(tmp_path / "enc" / "h.db", tmp_path / "enc", KEY)
    assert [code for _, code, _ in plain] == [0] * len(plain)
    for (command, code, text), (_, enc_code, enc_text) in zip(plain, encrypted, strict=True):
        assert (command, enc_code, enc_text) == (command, code, text)
    assert cipher.file_kind(tmp_path / "enc" / "h.db") == "encrypted"
    # An export is plaintext, as asked; the history file is not.
    held = [name for name, data in files(tmp_path / "enc").items()
            if any(p.encode() in data for p in PHRASES)]
    assert held == ["trip.jsonl"]


def test_an_export_of_an_encrypted_history_says_its_file_is_not_encrypted(tmp_path: Path) -> None:
    """`--all` said its archive is not encrypted; one session's export said nothing, though
    its file is as plain (the file under -o, 0600, holds the whole session)."""
    said = []
    for key in (KEY, None):
        db = tmp_path / f"{key is None}.db"
        chatted = keyed("chat", "trip", "--provider", "scripted", "--db", str(db),
                        input=TALK, key=key)
        assert chatted.exit_code == 0, chatted.stderr
        out = tmp_path / f"{key is None}.md"
        done = keyed("sessions", "export", "trip", "-o", str(out), "--db", str(db), key=key)
        assert done.exit_code == 0, done.stderr
        assert "琉璃客栈" in out.read_text(encoding="utf-8")
        said.append(done.stderr)
    assert said == [f"exported 8 messages to {tmp_path / 'False.md'} (markdown); the file is"
                    " not encrypted\n", f"exported 8 messages to {tmp_path / 'True.md'} "
                    "(markdown)\n"]
    out = tmp_path / "repl.jsonl"
    in_repl = keyed("chat", "trip", "--provider", "scripted", "--db", str(tmp_path / "False.db"),
                    input=f"/export {out}\n", key=KEY)
    assert in_repl.exit_code == 0, in_repl.stderr
    assert (f"exported 8 messages of session trip to {out} (jsonl); the file is not "
            "encrypted") in in_repl.stderr


# -- without the key ---------------------------------------------------------------------------

KEYED_COMMANDS = [
    ["chat", "trip", "--provider", "scripted"], ["ask", "trip", "hi", "--provider", "scripted"],
    ["sessions", "list"], ["sessions", "show", "trip"], ["sessions", "export", "trip"],
    ["sessions", "delete", "trip", "--yes"], ["sessions", "rename", "trip", "x"],
    ["sessions", "fork", "trip", "y"], ["sessions", "import", "sessions/support.jsonl"],
    ["facts", "list"], ["facts", "forget", "1"], ["inspect", "trip"],
    ["replay", "trip", "-s", "buffer", "--provider", "scripted"],
    ["eval", "trip", "-s", "buffer", "--provider", "scripted"], ["index", "trip"],
    ["sessions", "prune", "--older-than", "1d"], ["sessions", "retention", "trip", "forever"],
    ["sessions", "export", "--all", "-o", "{dir}/all.zip"], ["forget-me", "--yes"],
    ["decrypt"], ["rekey"],
]


@pytest.fixture(scope="module")
def encrypted_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("enc") / "h.db"
    result = keyed("chat", "trip", "--db", str(db), "--provider", "scripted", "-s", "entity",
                   input=TALK, key=KEY)
    assert result.exit_code == 0, result.stderr
    return db


@pytest.mark.parametrize("command", KEYED_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("key", [None, "wrong"])
def test_without_the_key_every_command_is_one_line_exit_3_and_changes_nothing(
    encrypted_db: Path, command: list[str], key: str | None
) -> None:
    before = files(encrypted_db.parent)
    args = [a.replace("{dir}", str(encrypted_db.parent)) for a in command]
    result = keyed(*args, "--db", str(encrypted_db), input="hello\n", key=key)
    assert result.exit_code == 3, result.output
    why = ("is encrypted: set CHATMEM_KEY, or key_command in the config" if key is None
           else ": wrong key: SQLCipher cannot decrypt it with the key given")
    assert result.stderr == f"error: {encrypted_db}{' ' if key is None else ''}{why}\n"
    assert result.stdout == ""
    assert files(encrypted_db.parent) == before


# -- encrypt, decrypt, rekey ---------------------------------------------------------------------


def test_encrypt_rekey_and_decrypt_a_history_file(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    assert keyed("chat", "s", "--db", str(db), "--provider", "scripted", input=TALK).exit_code == 0
    listed = keyed("sessions", "show", "s", "--db", str(db), "--json").stdout

    no_key = keyed("encrypt", "--db", str(db))
    assert (no_key.exit_code, no_key.stderr) == (2, (
        "error: no key to encrypt with: set CHATMEM_KEY or key_command, or run this in a "
        "terminal to type one\n"))
    assert keyed("sessions", "list", "--db", str(db), key=KEY).stderr == (
        f"error: {db} is not encrypted, but a key is set: `chatmem encrypt` encrypts it with "
        "that key (or unset CHATMEM_KEY and key_command)\n")

    done = keyed("encrypt", "--db", str(db), key=KEY)
    assert done.exit_code == 0, done.stderr
    assert re.fullmatch(rf"encrypted {re.escape(str(db))} \(\d+ KiB\); keep the key safe: "
                        r"without it the history cannot be read\n", done.stderr)
    assert not any(p.encode() in db.read_bytes() for p in PHRASES)
    assert keyed("sessions", "show", "s", "--db", str(db), "--json", key=KEY).stdout == listed
    again = keyed("encrypt", "--db", str(db), key=KEY)
    assert (again.exit_code, again.stderr) == (
        2, f"error: {db} is already encrypted; `chatmem rekey` changes its key\n")

    same = keyed("rekey", "--db", str(db), key=KEY, CHATMEM_NEW_KEY=KEY)
    assert (same.exit_code, same.stderr) == (
        2, "error: the new key is the current key; nothing was changed\n")
    rekeyed = keyed("rekey", "--db", str(db), key=KEY, CHATMEM_NEW_KEY=NEW_KEY)
    assert rekeyed.exit_code == 0, rekeyed.stderr
    assert keyed("sessions", "list", "--db", str(db), key=KEY).exit_code == 3
    assert keyed("sessions", "show", "s", "--db", str(db), "--json",
                 key=NEW_KEY).stdout == listed

    decrypted = keyed("decrypt", "--db", str(db), key=NEW_KEY)
    assert decrypted.stderr == (f"decrypted {db}: it is a plain SQLite file now; unset "
                                "CHATMEM_KEY and key_command\n")
    assert keyed("sessions", "show", "s", "--db", str(db), "--json").stdout == listed
    plain = keyed("decrypt", "--db", str(db))
    assert (plain.exit_code, plain.stderr) == (2, f"error: {db} is not encrypted\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.db"]


def test_key_command_gives_the_key_and_its_failure_is_one_line(tmp_path: Path) -> None:
    config, db = tmp_path / "config.toml", tmp_path / "h.db"
    config.write_text("key_command = \"printf '%s' 'pass phrase from a manager'\"\n")
    chatted = keyed("chat", "s", "--db", str(db), "--config", str(config), "--provider",
                    "scripted", input="hello\n")
    assert chatted.exit_code == 0, chatted.stderr
    assert cipher.file_kind(db) == "encrypted"
    with Store(db, key="pass phrase from a manager") as store:
        assert store.sessions.find_session("s") is not None
    shown = keyed("config", "show", "--config", str(config), "--json")
    assert json.loads(shown.stdout)["history_key"] == "from key_command"
    config.write_text("key_command = \"echo nope >&2; exit 7\"\n")
    failed = keyed("sessions", "list", "--db", str(db), "--config", str(config))
    assert (failed.exit_code, failed.stderr) == (
        3, "error: key_command failed (exit 7); no key, nothing opened (its output is never"
           " shown: run the command in a terminal to see why)\n")
    config.write_text("key_command = \"true\"\n")
    empty = keyed("sessions", "list", "--db", str(db), "--config", str(config))
    assert (empty.exit_code, empty.stderr) == (
        3, "error: key_command printed no key; nothing opened\n")


def test_key_command_runs_without_the_new_key_in_its_environment(tmp_path: Path) -> None:
    """`chatmem rekey` ran key_command, for the current key, with CHATMEM_NEW_KEY in its
    environment: a password manager's log or crash report had the key the file was about
    to be locked with, as /edit's editor and clipboard_command had it before 487296d8."""
    db, config, seen = tmp_path / "h.db", tmp_path / "config.toml", tmp_path / "env.txt"
    Store(db, key=KEY).close()
    dump = (f"import os, sys; open({str(seen)!r}, 'w', encoding='utf-8').write("
            f"repr(dict(os.environ))); sys.stdout.write({KEY!r})")
    config.write_text("key_command = " + json.dumps(
        f"{subprocess.list2cmdline([sys.executable])} -c {json.dumps(dump)}"),
        encoding="utf-8")
    rekeyed = keyed("rekey", "--db", str(db), "--config", str(config),
                    CHATMEM_NEW_KEY=NEW_KEY)
    assert rekeyed.exit_code == 0, rekeyed.stderr
    assert "PATH" in seen.read_text(encoding="utf-8")  # it ran, and saw the rest
    assert NEW_KEY not in seen.read_text(encoding="utf-8")
    with Store(db, key=NEW_KEY) as store:
        assert store.sessions.list_sessions() == []


SECRET = "Kc-7731 秘钥 leaked"
"""What a failing key_command printed on stdout before it failed: no output may show it."""


@pytest.mark.parametrize(("command", "timeout", "message"), [
    ("chatmem-no-such-password-manager --get history", 120,
     r"key_command failed \(command not found, exit 127\); no key, nothing opened "
     r"\(its output is never shown: run the command in a terminal to see why\)"),
    (f"printf '%s' '{SECRET}'; echo 'vault is locked' >&2; exit 5", 120,
     r"key_command failed \(exit 5\); no key, nothing opened "
     r"\(its output is never shown: run the command in a terminal to see why\)"),
    # Issue 19, finding 7: a failing command's stderr was quoted, and it may hold the key.
    (f"echo 'LEAKKEY-A1 {SECRET}' >&2; exit 1", 120,
     r"key_command failed \(exit 1\); no key, nothing opened "
     r"\(its output is never shown: run the command in a terminal to see why\)"),
    (f"printf '%s' '{SECRET}'; exec sleep 60", 0.2,
     r"key_command gave no key within 0\.2 s \(key_command_timeout\); nothing opened"),
    ("printf '\\377\\376'", 120,
     r"key_command printed bytes that are not UTF-8; nothing opened"),
    ("printf 'key\\000more'", 120, r"key_command printed a NUL byte; nothing opened"),
], ids=["not-found", "exits-non-zero", "stderr-holds-a-secret", "times-out", "not-utf-8",
        "nul"])
def test_a_key_command_that_gives_no_key_is_one_line_with_exit_3(
    tmp_path: Path, command: str, timeout: float, message: str
) -> None:
    """Whatever key_command printed stays out of every output; nothing is created or changed."""
    config, db, new = tmp_path / "config.toml", tmp_path / "h.db", tmp_path / "new.db"
    config.write_text(f"key_command = {json.dumps(command)}\n"
                      f"key_command_timeout = {timeout}\n", encoding="utf-8")
    Store(db, key=KEY).close()
    before = files(tmp_path)
    for args in (["sessions", "list", "--db", str(db)],
                 ["chat", "s", "--db", str(db), "--provider", "scripted"],
                 ["chat", "s", "--db", str(new), "--provider", "scripted"]):
        result = keyed(*args, "--config", str(config), input="hello\n")
        assert result.exit_code == 3, result.output
        assert re.fullmatch(f"error: {message}\n", result.stderr), result.stderr
        assert result.stdout == "" and SECRET not in result.output
        assert "LEAKKEY" not in result.output
    assert files(tmp_path) == before


def test_rekey_needs_a_new_key(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    Store(db, key=KEY).close()
    before = db.read_bytes()
    result = keyed("rekey", "--db", str(db), key=KEY)
    assert (result.exit_code, result.stderr) == (
        2, "error: no key to encrypt with: set $CHATMEM_NEW_KEY, or run this in a terminal to "
           "type one\n")
    assert db.read_bytes() == before


def test_an_empty_key_is_no_key_and_says_so_in_one_line(tmp_path: Path) -> None:
    plain, encrypted = tmp_path / "plain.db", tmp_path / "encrypted.db"
    Store(plain).close()
    Store(encrypted, key=KEY).close()
    before = files(tmp_path)
    refused = keyed("encrypt", "--db", str(plain), key="")
    assert (refused.exit_code, refused.stderr) == (2, (
        "error: no key to encrypt with: set CHATMEM_KEY or key_command, or run this in a "
        "terminal to type one\n"))
    locked = keyed("sessions", "list", "--db", str(encrypted), key="")
    assert (locked.exit_code, locked.stderr) == (
        3, f"error: {encrypted} is encrypted: set CHATMEM_KEY, or key_command in the config\n")
    assert refused.stdout == locked.stdout == ""
    assert files(tmp_path) == before


def test_a_file_open_in_another_process_is_not_converted_and_says_so(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CHATMEM_", "OPENAI_"))}
    # A chat in a process of its own (SQLite's locks are per process), idle between turns.
    other = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "chat", "s", "--db", str(db), "--provider",
         "scripted"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env={**base, "HOME": str(tmp_path)})
    assert other.stdin is not None and other.stdout is not None
    replies = Watched(other.stdout)
    try:
        other.stdin.write("你好 hello\n".encode())
        other.stdin.flush()
        replies.wait_for(lambda text: "echo #1: 你好 hello" in text, "the first reply")
        # The file's bytes are the chat's to change meanwhile; no converted copy may appear.
        before = sorted(p.name for p in tmp_path.iterdir())
        result = keyed("encrypt", "--db", str(db), key=KEY)
        assert (result.exit_code, result.stderr) == (2, (
            f"error: {db} is open in another chatmem process; close it and try again "
            "(nothing was changed)\n"))
        assert sorted(p.name for p in tmp_path.iterdir()) == before
        assert cipher.file_kind(db) == "plain"
        other.stdin.write(b"again\n")
    finally:
        other.stdin.close()
        other.wait(timeout=HANG)
    assert other.returncode == 0
    assert cipher.file_kind(db) == "plain"
    with Store(db) as store:
        session_id = store.sessions.session("s").id
        assert [t.input for t in store.turns.turns(session_id)] == ["你好 hello", "again"]


# -- the key is never written, shown or logged -----------------------------------------------------


def test_the_key_is_in_no_file_and_no_output(tmp_path: Path) -> None:
    """Real processes, every kind of output, a crash with a traceback: then grep it all."""
    home, db = tmp_path / "home", tmp_path / "data" / "h.db"
    home.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CHATMEM_", "OPENAI_"))}
    env = {**base, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "CHATMEM_DB": str(db), "CHATMEM_KEY": KEY, "CHATMEM_PROVIDER": "scripted"}
    outputs: list[str] = []
    for strategy in ("window", "summary-buffer:max_tokens=120", "entity"):
        name = strategy.split(":")[0]
        proc = subprocess.Popen([sys.executable, "-m", "chatmem", "chat", name, "-s", strategy],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        assert proc.stdin and proc.stdout and proc.stderr
        for line in TALK.splitlines() * 2:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            outputs.append(proc.stdout.readline())
        # The chat is still running: its WAL and shm are live, and hold no plaintext.
        live = files(db.parent)
        assert {"h.db-wal", "h.db-shm"} <= set(live)
        assert not [(f, p) for f, data in live.items() for p in PHRASES if p.encode() in data]
        proc.stdin.close()
        outputs += [proc.stdout.read(), proc.stderr.read()]
        assert proc.wait(timeout=60) == 0, outputs[-1]
    # The other commands in process (the same code; faster than a process each).
    keyed = {k: v for k, v in env.items() if k.startswith("CHATMEM_")}
    for args in (["ask", "what did I order?", "--session", "window"],
                 ["inspect", "entity", "--json"], ["inspect", "summary-buffer", "--summaries"],
                 ["facts", "list", "--json"], ["sessions", "list"], ["config", "show"],
                 ["sessions", "export", "window", "-o", str(tmp_path / "export.jsonl")]):
        done = invoke(*args, env=keyed)
        assert done.exit_code == 0, done.stderr
        outputs += [done.stdout, done.stderr]
    for wrong in ("not it", ""):
        done = invoke("sessions", "list", env={**keyed, "CHATMEM_KEY": wrong})
        assert done.exit_code == 3
        outputs += [done.stdout, done.stderr]
    rekeyed = invoke("rekey", env={**keyed, "CHATMEM_NEW_KEY": NEW_KEY})
    assert rekeyed.exit_code == 0, rekeyed.stderr
    outputs += [rekeyed.stdout, rekeyed.stderr]
    # An unexpected error while the key is held: the traceback shows code, never values.
    crash = subprocess.run(
        [sys.executable, "-c",
         "import sys; from chatmem.store import sqlite_backend as c\n"
         "def boom(self, *args): raise RuntimeError('unexpected')\n"
         "c.SqliteBackend._migrate = boom\n"
         "from chatmem.cli import main; sys.argv = ['chatmem', 'sessions', 'list']; main()"],
        env={**env, "CHATMEM_KEY": NEW_KEY}, capture_output=True, text=True, timeout=60)
    assert crash.returncode != 0 and "RuntimeError: unexpected" in crash.stderr
    outputs += [crash.stdout, crash.stderr]

    everything = {"output": "\n".join(outputs).encode(), **files(tmp_path)}
    for secret in (KEY, NEW_KEY):
        for needle in (secret.encode(), secret.encode("utf-16-le"),
                           secret.encode().hex().encode()):
            found = [name for name, data in everything.items() if needle in data]
            assert found == [], (secret, found)
    assert "echo #1: Hello, my name is Mirela Quastbeck.\n" in outputs  # the greps saw output


# -- the REPL asks for the key in a terminal -------------------------------------------------------


def _in_terminal(args: list[str], typed: list[tuple[str, str]],
                 env: dict[str, str]) -> tuple[int, str]:
    """Run chatmem on a pseudo-terminal, typing each (question, answer) once the question
    shows."""
    shown, code = at_a_terminal([sys.executable, "-m", "chatmem", *args], env,
                                answers=typed, seconds=HANG, controlling=True)
    return code, shown


def test_the_repl_asks_for_the_key_without_echoing_it(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    Store(db, key=KEY).close()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CHATMEM_", "OPENAI_"))}
    env = {**base, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config"),
           "TERM": "dumb", "NO_COLOR": "1"}
    args = ["chat", "s", "--db", str(db), "--provider", "scripted"]
    code, screen = _in_terminal(args, [(f"key for {db}: ", f"{KEY}\r"), ("/help", "hello\r"),
                                       ("echo #1: hello", "/quit\r")], env)
    assert code == 0, screen
    assert f"key for {db}: " in screen and "echo #1: hello" in screen
    assert KEY not in screen
    code, screen = _in_terminal(args, [(f"key for {db}: ", "wrong\r")], env)
    assert code == 3
    assert f"error: {db}: wrong key: SQLCipher cannot decrypt it with the key given" in screen
    assert "wrong\r\n" not in screen.split("key for", 1)[1]
    code, screen = _in_terminal(args, [(f"key for {db}: ", "\r")], env)
    assert code == 3 and "error: no key typed; nothing was opened or changed" in screen


def test_an_eval_of_a_session_with_its_key_typed_writes_no_vector_cache(tmp_path: Path) -> None:
    """eval reads the session in one workspace and runs in another, which never opened the
    file: with the key typed (set nowhere) it took the history for a plain one and wrote
    the vectors and sha256 digests of its messages to the plain cache file."""
    db = tmp_path / "h.db"
    config = tmp_path / "hash.toml"
    config.write_text('[embeddings]\nprovider = "hash"\n', encoding="utf-8")
    long_chat = Path(__file__).resolve().parents[2] / "sessions" / "long-chat.jsonl"
    imported = keyed("sessions", "import", str(long_chat), "trip", "--no-index", "--db",
                     str(db), "--config", str(config), key=KEY)
    assert imported.exit_code == 0, imported.stderr
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CHATMEM_", "OPENAI_"))}
    cache = tmp_path / ".cache"
    env = {**base, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(cache), "TERM": "dumb",
           "NO_COLOR": "1"}
    args = ["eval", "trip", "-s", "retrieval", "--provider", "scripted", "--db", str(db),
            "--config", str(config)]
    code, screen = _in_terminal(args, [(f"key for {db}: ", f"{KEY}\r")], env)
    assert code == 0, screen
    assert "What's my gym locker code?" in screen  # the probes were run
    assert [p.name for p in cache.rglob("*")] in ([], ["chatmem"])


def test_an_import_with_its_key_typed_starts_no_indexer_that_cannot_open_it(
        tmp_path: Path) -> None:
    """The background `chatmem index` has no typed key (set nowhere): it died at once,
    unseen, while the import said it was embedding the messages."""
    db = tmp_path / "h.db"
    Store(db, key=KEY).close()
    config = tmp_path / "hash.toml"
    config.write_text('strategy = "retrieval"\n[embeddings]\nprovider = "hash"\n',
                      encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CHATMEM_", "OPENAI_"))}
    env = {**base, "HOME": str(tmp_path), "TERM": "dumb", "NO_COLOR": "1"}
    long_chat = Path(__file__).resolve().parents[2] / "sessions" / "long-chat.jsonl"
    args = ["sessions", "import", str(long_chat), "trip", "--db", str(db),
            "--config", str(config)]
    code, screen = _in_terminal(args, [(f"key for {db}: ", f"{KEY}\r")], env)
    assert code == 0, screen
    said = " ".join(screen.split())
    assert "400 messages of trip wait for vectors" in said
    assert "in the background" not in said
    assert "`chatmem index trip` now" in said
    held = cipher.open_encrypted(db, KEY, 5)  # no lease taken for a process that is not
    try:
        assert held.execute("SELECT count(*) FROM index_leases").fetchone() == (0,)
    finally:
        held.close()


def test_ctrl_d_at_the_key_prompt_is_no_key_exit_3(tmp_path: Path) -> None:
    """Ctrl-D at the prompt was Click's 'aborted', exit 1: the code of a model that could
    not answer, not of a missing key."""
    db = tmp_path / "h.db"
    Store(db, key=KEY).close()
    before = db.read_bytes()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CHATMEM_", "OPENAI_"))}
    env = {**base, "HOME": str(tmp_path), "TERM": "dumb", "NO_COLOR": "1"}
    for args, prompts in ((["chat", "s", "--provider", "scripted"], [f"key for {db}: "]),
                          (["rekey"], [(f"key for {db}: ", f"{KEY}\r"), f"new key for {db}: "]),
                          (["rekey"], [(f"key for {db}: ", f"{KEY}\r"),
                                       (f"new key for {db}: ", f"{NEW_KEY}\r"),
                                       "again, to confirm: "])):
        typed = [*prompts[:-1], (prompts[-1], "\x04")]
        code, screen = _in_terminal([*args, "--db", str(db)], typed, env)
        assert code == 3, screen
        assert "error: no key typed; nothing was opened or changed" in screen
        assert "aborted" not in screen
    assert db.read_bytes() == before


def test_a_saved_replay_asks_for_a_typed_key_once(tmp_path: Path) -> None:
    """replay --save-as saved its sessions, then opened the history again to start their
    vectors and asked for the key a second time: the replay done, an empty line there
    was exit 3, 'nothing was opened or changed', and the sessions stayed saved."""
    db = tmp_path / "h.db"
    config = tmp_path / "hash.toml"
    config.write_text('[embeddings]\nprovider = "hash"\n', encoding="utf-8")
    chatted = keyed("chat", "trip", "--provider", "scripted", "--db", str(db), input=TALK,
                    key=KEY)
    assert chatted.exit_code == 0, chatted.stderr
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CHATMEM_", "OPENAI_"))}
    env = {**base, "HOME": str(tmp_path), "TERM": "dumb", "NO_COLOR": "1"}
    args = ["replay", "trip", "-s", "retrieval", "--save-as", "again", "--provider",
            "scripted", "--db", str(db), "--config", str(config)]
    # A second prompt waits for a key until HANG runs out, and the run is killed.
    code, screen = _in_terminal(args, [(f"key for {db}: ", f"{KEY}\r")], env)
    assert code == 0, screen
    assert screen.count("key for") == 1, screen
    assert "saved as session again" in " ".join(screen.split())


def test_a_new_key_typed_in_a_terminal_must_be_typed_twice_alike(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    Store(db).close()
    before = db.read_bytes()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CHATMEM_", "OPENAI_"))}
    env = {**base, "HOME": str(tmp_path), "TERM": "dumb", "NO_COLOR": "1"}
    args = ["encrypt", "--db", str(db)]
    code, screen = _in_terminal(args, [(f"new key for {db}: ", "one\r"),
                                       ("again, to confirm: ", "two\r")], env)
    assert code == 2 and "error: the two keys differ; nothing was changed" in screen
    assert db.read_bytes() == before
    code, screen = _in_terminal(args, [(f"new key for {db}: ", f"{KEY}\r"),
                                       ("again, to confirm: ", f"{KEY}\r")], env)
    assert code == 0, screen
    assert cipher.file_kind(db) == "encrypted" and KEY not in screen
    with Store(db, key=KEY) as store:
        assert store.sessions.list_sessions() == []


def test_config_show_looks_at_the_file_before_saying_whether_it_is_encrypted(
        tmp_path: Path) -> None:
    """No key set is no proof of a plain file: one encrypted with a key kept elsewhere (another
    shell's CHATMEM_KEY) is said to be encrypted."""
    db = tmp_path / "历史.db"

    def history_key() -> str:
        shown = keyed("config", "show", "--json", CHATMEM_DB=str(db))
        assert shown.exit_code == 0, shown.stderr
        table = keyed("config", "show", CHATMEM_DB=str(db))
        said = json.loads(shown.stdout)["history_key"]
        assert said in " ".join(table.stdout.split())  # the table wraps it
        return str(said)

    assert history_key() == "not set (no history file yet: it will be created unencrypted)"
    Store(db, key="k").close()
    assert history_key() == (
        "not set (the history file is encrypted: it cannot be opened without its key)")
    assert cipher.file_kind(db) == "encrypted"  # only looked at
    db.unlink()
    Store(db).close()
    assert history_key() == "not set (the history file is not encrypted)"
    assert json.loads(keyed("config", "show", "--json", key="k", CHATMEM_DB=str(db)).stdout
                      )["history_key"] == "from $CHATMEM_KEY"
