"""`chatmem sessions list|show|delete`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_runner import invoke
from file_hash import file_bytes

SECRET = "ZEBRA-XYZZY-42 杭州秘密"
# Each test runs on a plain and on an encrypted history file (CHATMEM_KEY set).
pytestmark = pytest.mark.usefixtures("history_key")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "x.db"
    for name, lines, extra in (
        ("alpha", "first\nsecond\n", ["--strategy", "window", "--param", "k=2"]),
        ("秘密", f"remember {SECRET}\n", ["--strategy", "tokens"]),
    ):
        result = invoke("chat", name, "--db", str(path), "--provider", "scripted",
                        *extra, input=lines)
        assert result.exit_code == 0, result.stderr
    return path


def test_list_json(db: Path) -> None:
    result = invoke("sessions", "list", "--db", str(db), "--json")
    assert result.exit_code == 0
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert set(rows) == {"alpha", "秘密"}
    assert rows["alpha"]["strategy"] == {"name": "window", "params": {"k": 2},
                                         "label": "window k=2"}
    assert (rows["alpha"]["messages"], rows["alpha"]["turns"]) == (4, 2)
    assert rows["秘密"]["strategy"]["params"] == {"max_tokens": 2000}
    assert rows["秘密"]["provider"] == "scripted"


def test_list_table(db: Path) -> None:
    result = invoke("sessions", "list", "--db", str(db))
    assert result.exit_code == 0
    assert "alpha" in result.stdout and "秘密" in result.stdout and "k=2" in result.stdout


def test_list_table_shows_only_the_parameters_chosen(db: Path) -> None:
    """Defaults are what `chatmem strategies` lists: a combination's dozen of them would
    fill the row (and at 80 columns fold inside a name)."""
    result = invoke("chat", "trip", "--db", str(db), "--provider", "scripted",
                    "-s", "summary-buffer+retrieval:summary-buffer.max_tokens=600",
                    input="hi\n")
    assert result.exit_code == 0, result.stderr
    listed = invoke("sessions", "list", "--db", str(db), width=80)
    assert listed.exit_code == 0
    lines = listed.stdout.splitlines()
    trip = next(i for i, line in enumerate(lines) if line.startswith("trip "))
    assert lines[trip + 1].split() == ["summary-buffer.max_tokens=600"]
    assert "retrieval.mode" not in listed.stdout and "max_tokens=2000" not in listed.stdout
    assert "k=2" in listed.stdout  # window's k=2 is not its default


@pytest.mark.parametrize("command", [["sessions", "list"], ["sessions", "show", "alpha"],
                                     ["sessions", "show", "秘密"], ["logs"]])
@pytest.mark.parametrize("width", [50, 120])
def test_a_table_in_a_pipe_ends_each_line_at_its_last_mark(db: Path, command: list[str],
                                                           width: int) -> None:
    """A table padded its last column (and centred its title) in spaces: `sessions list |
    cat -A` showed `updated         $` and `k=2    $`, and `grep 'k=2$'` found nothing."""
    result = invoke(*command, "--db", str(db), width=width, code=0)
    lines = result.stdout.splitlines()
    assert len(lines) >= 3
    assert [line for line in lines if line != line.rstrip()] == []
    if command == ["sessions", "list"]:
        assert [line.split() for line in lines if line.endswith("k=2")] == [["k=2"]]
        assert lines[0].split()[-1] in ("turns", "updated")


@pytest.mark.parametrize("command", [
    ["sessions", "list"], ["sessions", "list", "--json"], ["sessions", "show", "a"],
    ["sessions", "export", "a"], ["sessions", "delete", "a", "--yes"], ["facts", "list"],
    ["facts", "forget", "1"], ["inspect", "a"], ["inspect", "a", "--summaries"],
    ["replay", "a", "-s", "buffer", "--provider", "scripted"],
])
def test_read_only_commands_do_not_create_the_history_file(tmp_path: Path,
                                                           command: list[str]) -> None:
    missing = tmp_path / "typo" / "new.db"
    result = invoke(*command, "--db", str(missing))
    assert not missing.parent.exists()
    if command[0] == "replay":
        # A name that is neither a file nor a stored session.
        assert result.exit_code == 2
        assert result.stderr == "error: a: no such transcript file or session\n"
        return
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: no history file at {missing} (chat, ask SESSION and sessions import create it)\n")
    assert result.stdout == ""


def test_list_on_an_empty_history_file(db: Path) -> None:
    for name in ("alpha", "秘密"):
        assert invoke("sessions", "delete", name, "--yes", "--db", str(db)
                      ).exit_code == 0
    result = invoke("sessions", "list", "--db", str(db), "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == []


def test_a_directory_as_db_is_one_clear_line(tmp_path: Path) -> None:
    result = invoke("sessions", "list", "--db", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr == f"error: {tmp_path} is a directory, not a history file\n"
    chat = invoke("ask", "s", "hi", "--db", str(tmp_path), "--provider",
                  "scripted")
    assert chat.exit_code == 2
    assert chat.stderr == f"error: {tmp_path} is a directory, not a history file\n"


def test_show(db: Path) -> None:
    result = invoke("sessions", "show", "alpha", "--db", str(db), "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["name"] == "alpha" and data["system"] == "You are a helpful assistant."
    assert [(m["turn"], m["role"], m["content"]) for m in data["messages"]] == [
        (1, "user", "first"), (1, "assistant", "echo #1: first"),
        (2, "user", "second"), (2, "assistant", "echo #2: second")]
    text = invoke("sessions", "show", "秘密", "--db", str(db))
    assert text.exit_code == 0 and f"remember {SECRET}" in text.stdout


def test_show_in_a_pipe_adds_no_newline_inside_a_message(db: Path) -> None:
    """A 150-character URL came out over three lines: the transcript was laid out at 80
    columns, as on a terminal."""
    url = "https://example.com/" + "a" * 100 + "/杭州/" + "b" * 30
    assert invoke("ask", "alpha", url, "--db", str(db), "--provider", "scripted").exit_code == 0
    text = invoke("sessions", "show", "alpha", "--db", str(db), env={"COLUMNS": "60"})
    assert text.exit_code == 0, text.stderr
    lines = text.stdout.splitlines()
    assert f"[3] user: {url}" in lines and f"[3] assistant: echo #1: {url}" in lines


def test_show_unknown_session(db: Path) -> None:
    result = invoke("sessions", "show", "nope", "--db", str(db))
    assert result.exit_code == 1
    assert result.stderr == (f"error: no session named 'nope' in {db}"
        " (`chatmem sessions list` lists them)\n")


def test_delete_is_physical(db: Path) -> None:
    result = invoke("sessions", "delete", "秘密", "--yes", "--db", str(db))
    assert result.exit_code == 0, result.stderr
    assert result.stderr == "deleted session 秘密\n"
    listed = json.loads(invoke("sessions", "list", "--db", str(db),
                               "--json").stdout)
    assert [r["name"] for r in listed] == ["alpha"]
    data = file_bytes(db)
    for needle in ("ZEBRA", "zebra", "xyzzy", "杭州", "秘密", "州秘"):
        assert needle.encode() not in data, needle
    shown = invoke("sessions", "show", "alpha", "--db", str(db), "--json")
    assert "echo #2: second" in shown.stdout  # the other session is intact
    if "CHATMEM_KEY" not in os.environ:
        # In a plain file the grep does see what is kept: its misses above are erasures.
        assert b"echo #2: second" in data


@pytest.mark.parametrize("answer", ["n\n", ""], ids=["no", "stdin-closed"])
def test_delete_asks_first(db: Path, answer: str) -> None:
    """A no ended it in silence, and a script's closed stdin with "aborted" alone: neither
    said that nothing was erased, nor how a script goes without the question."""
    result = invoke("sessions", "delete", "alpha", "--db", str(db), input=answer)
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "nothing was erased (-y/--yes erases without asking)")
    listed = json.loads(invoke("sessions", "list", "--db", str(db),
                               "--json").stdout)
    assert {r["name"] for r in listed} == {"alpha", "秘密"}


def test_list_counts_conversation_turns_for_forked_sessions_too(db: Path) -> None:
    assert invoke("sessions", "fork", "alpha", "beta", "--db", str(db)).exit_code == 0
    listed = json.loads(invoke("sessions", "list", "--db", str(db),
                               "--json").stdout)
    rows = {r["name"]: r for r in listed}
    # The fork has the conversation's two turns, but no requests of its own yet.
    assert (rows["beta"]["turns"], rows["beta"]["requests"]) == (2, 0)
    assert (rows["alpha"]["turns"], rows["alpha"]["requests"]) == (2, 2)


def test_show_prints_parameters_as_typed(db: Path) -> None:
    result = invoke("sessions", "show", "alpha", "--db", str(db))
    assert result.exit_code == 0
    assert any(line.split() == ["params", "k=2"] for line in result.stdout.splitlines())


def test_show_pages_a_long_session(tmp_path: Path) -> None:
    from chatmem.cli.sessions import SHOW_LAST

    db, transcript = tmp_path / "long.db", tmp_path / "long.jsonl"
    total = SHOW_LAST + 30
    transcript.write_text("".join(
        json.dumps({"role": role, "content": f"{role} {n}"}) + "\n"
        for n in range(1, total + 1) for role in ("user", "assistant")), encoding="utf-8")
    imported = invoke("sessions", "import", str(transcript), "--name", "long",
                      "--db", str(db))
    assert imported.exit_code == 0, imported.stderr
    shown = invoke("sessions", "show", "long", "--db", str(db), "--json")
    data = json.loads(shown.stdout)
    assert data["turns"] == {"first": 31, "last": total, "total": total}
    assert [m["turn"] for m in data["messages"]][::2] == list(range(31, total + 1))
    picked = invoke("sessions", "show", "long", "--turns", "2-3", "--db", str(db))
    assert picked.exit_code == 0
    assert "user 2" in picked.stdout and "assistant 3" in picked.stdout
    assert "user 4" not in picked.stdout
    assert f"turns 2–3 of {total} shown" in picked.stderr
    # The range as chatmem prints it (an en dash) is taken back; one turn is "turn 5".
    pasted = invoke("sessions", "show", "long", "--turns", "2–3", "--db", str(db))
    assert pasted.exit_code == 0 and pasted.stdout == picked.stdout
    one = invoke("sessions", "show", "long", "--turns", "5", "--db", str(db))
    assert one.exit_code == 0 and f"turn 5 of {total} shown;" in one.stderr
    every = invoke("sessions", "show", "long", "--all", "--json", "--db", str(db))
    assert len(json.loads(every.stdout)["messages"]) == 2 * total
    bad = invoke("sessions", "show", "long", "--turns", "9-2", "--db", str(db))
    assert bad.exit_code == 2
    assert bad.stderr.strip().endswith(
        "--turns 9-2: turns are numbered from 1, FIRST no more than LAST")


@pytest.mark.parametrize("spec", ["5", "5-", "9223372036854775808", "4-9223372036854775808"])
def test_show_turns_past_the_last_is_one_line_naming_the_turn(tmp_path: Path, spec: str) -> None:
    """`--turns 5` of 3 turns printed "turns 5–3 of 3 shown" and exited 0; 2**63 reached
    SQLite as an OverflowError traceback."""
    db, transcript = tmp_path / "three.db", tmp_path / "three.jsonl"
    transcript.write_text("".join(
        json.dumps({"role": role, "content": f"{role} {n}"}) + "\n"
        for n in range(1, 4) for role in ("user", "assistant")), encoding="utf-8")
    assert invoke("sessions", "import", str(transcript), "--name", "three",
                  "--db", str(db)).exit_code == 0
    shown = invoke("sessions", "show", "three", "--turns", spec, "--db", str(db))
    first = spec.partition("-")[0]
    assert shown.exit_code != 0
    assert shown.stderr.strip().splitlines() == [
        f"error: session 'three' has no turn {first}: it has 3"]
    tail = invoke("sessions", "show", "three", "--turns", "2-9223372036854775808", "--json",
                  "--db", str(db))
    assert tail.exit_code == 0, tail.stderr
    assert json.loads(tail.stdout)["turns"] == {"first": 2, "last": 3, "total": 3}


def test_show_prints_its_times_in_the_timezone_setting_s_zone_without_seconds(db: Path) -> None:
    """The table printed created_at and updated_at as stored (UTC, with seconds), while
    every other table shows a time in the user's zone; --json keeps UTC."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    env = {"CHATMEM_TIMEZONE": "Asia/Kathmandu", "TZ": "UTC"}  # +05:45, never $TZ's
    stored = json.loads(invoke("sessions", "show", "秘密", "--db", str(db), "--json",
                               env=env).stdout)
    assert stored["created_at"].endswith("+00:00")
    table = invoke("sessions", "show", "秘密", "--db", str(db), env=env, width=120).stdout
    rows = {line.split()[0]: line.split()[1:] for line in table.splitlines() if line.strip()}
    for key in ("created_at", "updated_at"):
        local = datetime.fromisoformat(stored[key]).astimezone(ZoneInfo("Asia/Kathmandu"))
        assert rows[key] == local.strftime("%Y-%m-%d %H:%M").split(), table


def test_list_prints_updated_in_the_timezone_setting_s_zone(db: Path) -> None:
    """`sessions list` showed `updated` in the process's zone ($TZ) whatever the timezone
    setting said, in the wide table and in the narrow stacked lines alike; --json keeps UTC."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    env = {"CHATMEM_TIMEZONE": "Asia/Kathmandu", "TZ": "UTC"}  # +05:45, never $TZ's
    stored = {row["name"]: row["updated_at"] for row in json.loads(
        invoke("sessions", "list", "--db", str(db), "--json", env=env, code=0).stdout)}
    assert stored["秘密"].endswith("+00:00")
    local = (datetime.fromisoformat(stored["秘密"]).astimezone(ZoneInfo("Asia/Kathmandu"))
             .strftime("%Y-%m-%d %H:%M"))
    wide = invoke("sessions", "list", "--db", str(db), env=env, width=120, code=0).stdout
    row = next(line for line in wide.splitlines() if line.startswith("秘密 "))
    assert row.split()[-2:] == local.split(), wide
    narrow = invoke("sessions", "list", "--db", str(db), env=env, width=30, code=0).stdout
    assert local in narrow.splitlines(), narrow
