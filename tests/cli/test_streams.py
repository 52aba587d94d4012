"""cli.streams: `chatmem` run as a process, with the standard streams a shell can hand it: a
locale or PYTHONIOENCODING that is not UTF-8, stdout a full disk or a pipe nobody reads,
stdin or stdout closed. Never a traceback; a turn whose reply was not shown is stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ASCII_LOCALE = {"LC_ALL": "C", "PYTHONUTF8": "0"}
"""Python's UTF-8 mode would otherwise take the C locale as UTF-8 (PEP 540)."""


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None, shell: str = "",
        **options: Any) -> subprocess.CompletedProcess[bytes]:
    """`chatmem ARGS` with the history in `tmp_path`; `shell`: redirections (`>&-`)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG"))}
    environment.update({"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
                        "XDG_DATA_HOME": str(tmp_path / "data"), "LANG": "C.UTF-8",
                        "PYTHONPATH": ":".join(sys.path)})
    environment.pop("PYTHONIOENCODING", None)
    environment.update(env or {})
    command = [sys.executable, "-m", "chatmem", *args, "--db", str(tmp_path / "h.db")]
    if shell:
        command = ["sh", "-c", f'exec "$@" {shell}', "sh", *command]
    options.setdefault("stdout", subprocess.PIPE)
    return subprocess.run(command, env=environment, stderr=subprocess.PIPE, timeout=120,
                          check=False, **options)


def stored(tmp_path: Path, session: str) -> list[dict[str, Any]]:
    shown = run(tmp_path, "sessions", "show", session, "--json")
    assert shown.returncode == 0, shown.stderr
    return list(json.loads(shown.stdout)["messages"])


def test_a_reply_to_a_full_disk_is_one_line_and_its_turn_is_stored(tmp_path: Path) -> None:
    """A traceback (ENOSPC), and the session had 0 messages, 0 turns."""
    with open("/dev/full", "wb") as full:
        asked = run(tmp_path, "ask", "--provider", "scripted", "s2", "note 重要", stdout=full)
    assert asked.returncode == 1
    said = asked.stderr.decode().splitlines()
    assert "Traceback" not in asked.stderr.decode()
    assert said[-1].startswith("error: the reply could not be written to standard output "
                               "(No space left on device); it is stored as turn 1 of session")
    assert [m["content"] for m in stored(tmp_path, "s2")] == ["note 重要", "echo #1: note 重要"]


def test_a_reply_whose_reader_has_gone_is_stored_and_exits_141(tmp_path: Path) -> None:
    """`ask … | head -c 10` exited 141 with nothing said, and stored nothing."""
    read, write = os.pipe()
    os.close(read)
    try:
        asked = run(tmp_path, "ask", "--provider", "scripted", "s1", "一二三 " * 300,
                    stdout=write)
    finally:
        os.close(write)
    assert asked.returncode == 141
    assert asked.stderr.decode().splitlines()[-1].startswith(
        "error: the reply could not be written to standard output (whatever read it has gone)")
    assert len(stored(tmp_path, "s1")) == 2


def test_an_ascii_locale_escapes_what_it_cannot_show_and_reads_utf8(tmp_path: Path) -> None:
    """UnicodeEncodeError tracebacks (ask, chat, sessions show, …), the chat's turn lost, a
    piped line stored as U+FFFD, and 北京 refused as "not UTF-8" by the argument parser."""
    asked = run(tmp_path, "ask", "--provider", "scripted", "会话", "你好世界 😀", env=ASCII_LOCALE)
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout == b"echo #1: \\u4f60\\u597d\\u4e16\\u754c \\ud83d\\ude00\n"
    chatted = run(tmp_path, "chat", "t1", "--provider", "scripted", env=ASCII_LOCALE,
                  input="我叫小明\n".encode())
    assert chatted.returncode == 0, chatted.stderr
    assert stored(tmp_path, "t1")[0]["content"] == "我叫小明"
    for args in (("sessions", "show", "会话"), ("logs", "-q", "世界"), ("inspect", "会话")):
        shown = run(tmp_path, *args, env=ASCII_LOCALE)
        assert shown.returncode == 0, shown.stderr
        assert b"\\u4f60\\u597d" in shown.stdout
    # JSON stays JSON of the same text: an emoji is a JSON escape pair, not Python's \U0001f600.
    shown = run(tmp_path, "sessions", "show", "会话", "--json", env=ASCII_LOCALE)
    assert json.loads(shown.stdout)["messages"][0]["content"] == "你好世界 😀"


def test_an_encoding_without_a_character_asked_for_escapes_it(tmp_path: Path) -> None:
    asked = run(tmp_path, "ask", "--provider", "scripted", "表情 😀",
                env={"PYTHONIOENCODING": "gbk"})
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.decode("gbk") == "echo #1: 表情 \\ud83d\\ude00\n"


@pytest.mark.parametrize("json_out", [(), ("--json",)], ids=["table", "json"])
def test_a_closed_stdout_is_said_in_one_line(tmp_path: Path, json_out: tuple[str, ...]) -> None:
    """AttributeError: 'NoneType' object has no attribute 'flush'."""
    assert run(tmp_path, "ask", "--provider", "scripted", "s", "hi").returncode == 0
    listed = run(tmp_path, "sessions", "list", *json_out, shell=">&-", stdout=None)
    assert listed.returncode == 1
    assert listed.stderr.decode() == "error: cannot write to standard output (it is closed)\n"


def test_a_reply_to_a_closed_stdout_is_stored_and_a_closed_stdin_reads_as_empty(
        tmp_path: Path) -> None:
    asked = run(tmp_path, "ask", "--provider", "scripted", "s", "hi", shell=">&-", stdout=None)
    assert asked.returncode == 1
    assert "(it is closed); it is stored as turn 1 of session 's'" in asked.stderr.decode()
    assert len(stored(tmp_path, "s")) == 2
    chatted = run(tmp_path, "chat", "x", "--provider", "scripted", shell="<&-")
    assert chatted.returncode == 0
    assert "Traceback" not in chatted.stderr.decode()


def test_under_an_ascii_locale_a_file_name_opens_the_bytes_typed_and_text_reads_as_utf8(
        tmp_path: Path) -> None:
    """Attack on new surfaces: arguments were all read again as UTF-8, so a file name under
    a locale that is not UTF-8 became another name (Latin-1) or a traceback (ASCII)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG"))}
    environment.update({"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
                        "XDG_DATA_HOME": str(tmp_path / "data"),
                        "PYTHONPATH": ":".join(sys.path), "PYTHONCOERCECLOCALE": "0",
                        **ASCII_LOCALE})
    environment.pop("PYTHONIOENCODING", None)
    (tmp_path / "notes-é.txt").write_text("the code is 4471\n", encoding="utf-8")

    def chatmem(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-m", "chatmem", *args], env=environment,
                              cwd=tmp_path, capture_output=True, timeout=120, check=False)

    asked = chatmem("ask", "--provider", "scripted", "会议", "what is the code 暗号?",
                    "-f", "./notes-é.txt", "--db", "./café.db")
    assert asked.returncode == 0, asked.stderr.decode()  # the file was attached, not "no such"
    assert (tmp_path / "café.db").exists()
    found = chatmem("logs", "-q", "暗号", "--db", "./café.db", "--json")
    assert found.returncode == 0, found.stderr.decode()
    assert [hit["session"] for hit in json.loads(found.stdout)] == ["会议"]


def test_forced_colour_leaves_a_reply_to_a_file_as_sent(tmp_path: Path) -> None:
    """FORCE_COLOR=1 (a CI log in colour) wrote the reply into the file as Markdown: bold
    drawn with ANSI styles, the text reflowed to 80 columns."""
    question = ("**alpha** beta gamma delta 北京 " * 8).strip()
    with open(tmp_path / "fc.txt", "wb") as file:
        asked = run(tmp_path, "ask", "--provider", "scripted", question,
                    env={"FORCE_COLOR": "1"}, stdout=file)
    assert asked.returncode == 0, asked.stderr
    assert (tmp_path / "fc.txt").read_text(encoding="utf-8") == f"echo #1: {question}\n"


@pytest.mark.parametrize("option", ["--help", "--version"])
def test_help_and_version_to_a_stdout_that_fails_are_one_line(tmp_path: Path,
                                                              option: str) -> None:
    """They print while the options are read, before any command's handling: a full disk or
    a closed stdout was a traceback (exit 120), a reader gone 'Exception ignored … BrokenPipe'."""
    def chatmem(stdout: Any, shell: str = "") -> subprocess.CompletedProcess[bytes]:
        command = [sys.executable, "-m", "chatmem", option]
        if shell:
            command = ["sh", "-c", f'exec "$@" {shell}', "sh", *command]
        return subprocess.run(command, env={**os.environ, "HOME": str(tmp_path),
                                            "PYTHONPATH": ":".join(sys.path)},
                              stdout=stdout, stderr=subprocess.PIPE, timeout=120, check=False)

    with open("/dev/full", "wb") as full:
        filled = chatmem(full)
    assert (filled.returncode, filled.stderr.decode()) == (
        1, "error: cannot write to standard output (No space left on device)\n")
    closed = chatmem(None, ">&-")
    assert (closed.returncode, closed.stderr.decode()) == (
        1, "error: cannot write to standard output (it is closed)\n")
    read, write = os.pipe()
    os.close(read)
    try:
        gone = chatmem(write)
    finally:
        os.close(write)
    assert (gone.returncode, gone.stderr.decode()) == (141, "")


def test_an_ask_json_answer_not_written_says_its_turn_is_stored(tmp_path: Path) -> None:
    """It said only 'cannot write to standard output', as if nothing had been kept."""
    with open("/dev/full", "wb") as full:
        asked = run(tmp_path, "ask", "--json", "--provider", "scripted", "s4", "你好",
                    stdout=full)
    assert asked.returncode == 1
    assert asked.stderr.decode().splitlines()[-1] == (
        "error: the reply could not be written to standard output (No space left on device);"
        " it is stored as turn 1 of session 's4' (`chatmem sessions show s4` shows it)")
    assert [m["content"] for m in stored(tmp_path, "s4")] == ["你好", "echo #1: 你好"]
    read, write = os.pipe()
    os.close(read)
    try:
        gone = run(tmp_path, "ask", "--json", "--provider", "scripted", "s4", "again",
                   stdout=write)
    finally:
        os.close(write)
    assert gone.returncode == 141
    assert "it is stored as turn 2 of session 's4'" in gone.stderr.decode()


def test_under_an_ascii_locale_replay_and_eval_find_a_session_by_its_chinese_name(
        tmp_path: Path) -> None:
    """Third reading: their source is a file's name or a session's, and read as a file's
    name only, 旅行 was 'not valid UTF-8'."""
    assert run(tmp_path, "ask", "--provider", "scripted", "旅行", "去北京").returncode == 0
    for command in ("replay", "eval"):
        done = run(tmp_path, command, "旅行", "-s", "window", "--provider", "scripted",
                   "--json", env={**ASCII_LOCALE, "PYTHONCOERCECLOCALE": "0"})
        if command == "eval":  # a session with no probes: eval says so, naming the session
            assert done.returncode == 2 and b"probe" in done.stderr, done.stderr
        else:
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout)["strategies"]


def test_a_reply_not_written_names_its_turn_as_sessions_show_does_after_a_retry(
        tmp_path: Path) -> None:
    """It named the request's number: after one /retry (two requests for turn 1) the second
    turn was 'stored as turn 3', which `inspect --turn 3` said did not exist."""
    retried = run(tmp_path, "chat", "--provider", "scripted", "s5", input=b"first\n/retry\n")
    assert retried.returncode == 0, retried.stderr
    for json_flag in ([], ["--json"]):
        with open("/dev/full", "wb") as full:
            asked = run(tmp_path, "ask", *json_flag, "--provider", "scripted", "s5", "第二个",
                        stdout=full)
        assert asked.returncode == 1
        turn = 2 if not json_flag else 3
        assert asked.stderr.decode().splitlines()[-1] == (
            "error: the reply could not be written to standard output (No space left on "
            f"device); it is stored as turn {turn} of session 's5' (`chatmem sessions show "
            "s5` shows it)")
        shown = run(tmp_path, "inspect", "s5", "--turn", str(turn), "--json")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["input"] == "第二个"
