"""Escape sequences in messages and replies are shown, never obeyed (finding 11).

`\\x1b]0;PWNED\\x07` would retitle the terminal and `\\x1b[2J` clear it; chatmem
prints such control characters as visible symbols (␛, ␇) and stores the text as
it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cli_runner import invoke

from chatmem.render import printable
from chatmem.store import Store

ATTACK = "look \x1b]0;PWNED\x07\x1b[2J\x9b31m 看 \u202egnp.exe here"
SHOWN = "look ␛]0;PWNED␇␛[2J\\u009b31m 看 \\u202egnp.exe here"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")
"""What must never reach a terminal or a file people read: ESC, BEL, C1 CSI, RLO."""


def test_printable_makes_control_characters_visible_and_keeps_text() -> None:
    assert printable(ATTACK) == SHOWN
    assert printable("第一行\n\tsecond line 杭州") == "第一行\n\tsecond line 杭州"


def test_a_reply_with_escape_sequences_reaches_the_terminal_inert(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "chatmem", "chat", "s", "--db", str(db),
                           "--provider", "scripted"], input=ATTACK + "\n", capture_output=True,
                          text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    for stream in (done.stdout, done.stderr):
        assert not any(raw in stream for raw in RAW)
    assert done.stdout == f"echo #1: {SHOWN}\n"
    with Store(db) as store:  # stored as it was said
        assert store.history.messages(store.sessions.session("s").id)[0].content == ATTACK


def test_imported_messages_with_escapes_are_inert_in_show_and_inspect(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(m) for m in [
        {"role": "user", "content": ATTACK}, {"role": "assistant", "content": ATTACK}]) + "\n",
        encoding="utf-8")
    db = tmp_path / "h.db"
    assert invoke("sessions", "import", str(transcript), "--name", "t",
                  "--db", str(db)).exit_code == 0
    assert invoke("chat", "t", "-s", "buffer", "--db", str(db), "--provider",
                  "scripted", input="next\n").exit_code == 0
    for args in (["sessions", "show", "t"], ["inspect", "t"], ["sessions", "list"],
                 ["sessions", "show", "t", "--json"], ["inspect", "t", "--json"],
                 ["sessions", "export", "t"]):
        result = invoke(*args, "--db", str(db))
        assert result.exit_code == 0, result.stderr
        assert not any(raw in result.output for raw in RAW), args
    # JSON escapes them as JSON does: the same text once parsed.
    shown_json = invoke("sessions", "show", "t", "--json", "--db", str(db)).stdout
    assert "\\u009b31m 看 \\u202egnp" in shown_json
    assert json.loads(shown_json)["messages"][0]["content"] == ATTACK
    shown = invoke("sessions", "show", "t", "--db", str(db)).output
    assert "␛]0;PWNED␇" in shown


def test_bell_backspace_and_line_controls_show_as_symbols_not_vanish(tmp_path: Path) -> None:
    """Rich drops BEL, BS, VT, FF and CR when it makes a Text: the message shown was not the
    one stored, and a CR or a backspace could hide what came before it."""
    db = str(tmp_path / "h.db")
    said = "响\x07铃 b\x08s v\x0bt f\x0cf c\rr end"
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(m) for m in [
        {"role": "user", "content": said}, {"role": "assistant", "content": "ok"}]) + "\n",
        encoding="utf-8")
    assert invoke("sessions", "import", str(transcript), "--name", "控制",
                  "--db", db).exit_code == 0
    seen = "响␇铃 b␈s v␋t f␌f c␍r end"
    for args in (["sessions", "show", "控制"], ["inspect", "控制", "--next", "继续"]):
        result = invoke(*args, "--db", db, env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.stderr
        assert seen in result.stdout, args
        assert not any(c in result.stdout for c in "\x07\x08\x0b\x0c\r"), args


def test_logs_r_shows_a_replys_escapes_on_a_terminal_and_passes_them_to_a_pipe(
        tmp_path: Path) -> None:
    """`logs -r` prints the reply alone: on a terminal inert, as every human output; into a
    pipe as stored (`chatmem logs -r | pbcopy` copies what the model wrote)."""
    import pty

    db = tmp_path / "h.db"
    invoke("chat", "s", "--db", str(db), "--provider", "scripted", input=ATTACK + "\n", code=0)
    command = [sys.executable, "-m", "chatmem", "logs", "-r", "--db", str(db)]
    env = {**os.environ, "HOME": str(tmp_path)}
    piped = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert piped.returncode == 0 and piped.stdout == f"echo #1: {ATTACK}\n"
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(command, stdout=follower, stderr=subprocess.PIPE, env=env,
                              timeout=60)
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end is closed: all is read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0, done.stderr
    text = shown.decode()
    assert not any(raw in text for raw in RAW)
    assert text.replace("\r\n", "\n") == f"echo #1: {SHOWN}\n"


def test_square_brackets_in_data_are_text_not_rich_markup(tmp_path: Path) -> None:
    """A system prompt or a message with `[/]` (a closing tag with nothing to
    close, which Rich raises on) or `[bold red]` (which Rich would apply and hide) is shown as
    written, in every table and panel that shows it."""
    db = tmp_path / "h.db"
    system = "Be [/] brief [bold red]now 简短[/red]"
    invoke("chat", "s1", "--system", system, "-s", "window:k=2", "--db", str(db),
           "--provider", "scripted", input="hi [/] 你好 [link=x]y\n", code=0)
    for args in (["sessions", "show", "s1"], ["inspect", "s1"], ["sessions", "list"]):
        result = invoke(*args, "--db", str(db))
        assert result.exit_code == 0, (args, result.stderr)
        assert "s1" in result.output, args
    for args in (["inspect", "s1"], ["sessions", "show", "s1"]):
        shown = invoke(*args, "--db", str(db), width=200).output
        assert "[bold red]now 简短[/red]" in shown and "hi [/] 你好 [link=x]y" in shown, shown


def test_emoji_codes_in_data_are_text_not_emoji(tmp_path: Path) -> None:
    """Rich turns `:100:` into 💯 in any string it prints: a fact's value was listed as
    '💯 🐱', a system prompt's `:smile:` shown as 😄, the input `:thumbs_up:` as 👍 in
    inspect and logs, though each was stored and sent as typed."""
    db = tmp_path / "h.db"
    invoke("chat", "s1", "--system", "Be :smile: brief", "--db", str(db), "--provider",
           "scripted", input="/remember code: :100: :cat:\nhi :thumbs_up: 你好\n", code=0)
    for args, typed in ((["sessions", "show", "s1"], "Be :smile: brief"),
                        (["inspect", "s1"], "hi :thumbs_up: 你好"),
                        (["logs"], "hi :thumbs_up: 你好"),
                        (["facts", "list"], ":100: :cat:")):
        shown = invoke(*args, "--db", str(db), width=200, code=0).output
        assert typed in shown and not {"😄", "👍", "💯", "🐱"} & set(shown), (args, shown)


def test_exports_write_control_characters_escaped(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"role": "user", "content": ATTACK}) + "\n"
                          + json.dumps({"role": "assistant", "content": "好的"}) + "\n",
                          encoding="utf-8")
    db = tmp_path / "h.db"
    assert invoke("sessions", "import", str(transcript), "--name", "t",
                  "--db", str(db)).exit_code == 0
    for name in ("x.md", "x.jsonl", "x.json"):
        result = invoke("sessions", "export", "t", "-o", str(tmp_path / name),
                        "--db", str(db))
        assert result.exit_code == 0, result.stderr
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert not any(raw in text for raw in RAW), name
    markdown = (tmp_path / "x.md").read_text(encoding="utf-8")
    assert "look \\u001b]0;PWNED\\u0007\\u001b[2J\\u009b31m 看 \\u202egnp.exe here" in markdown
    # JSON Lines still imports back to the very same text.
    assert invoke("sessions", "import", str(tmp_path / "x.jsonl"), "--name",
                  "back", "--db", str(db)).exit_code == 0
    with Store(db) as store:
        assert store.history.messages(store.sessions.session("back").id)[0].content == ATTACK


HEBREW = "line1\r\nline2 שלום\u200f end\r\n٣\u061c٤ \u200eok"
"""A reply as models write one: Windows line ends, and the direction marks (RLM, ALM, LRM)
that Hebrew and Arabic text holds."""
ALTERED = "a\rb \u202ec\u202c \x1b[2J"
SHOWN_ALTERED = "a␍b \\u202ec\\u202c ␛[2J"


def test_line_ends_and_direction_marks_pass_what_drives_or_reorders_does_not() -> None:
    """A CR before its LF moves the cursor over nothing, and a mark reorders nothing a
    Hebrew letter could not: both were shown as ␍ and \\u200f. A lone CR (it overwrites the
    line with what follows), the overrides and ESC are still shown, never obeyed."""
    assert printable(HEBREW) == HEBREW
    assert printable(ALTERED) == SHOWN_ALTERED
    assert printable("end\r") == "end␍"


def test_a_reply_to_a_file_and_a_markdown_export_keep_line_ends_and_marks(
        tmp_path: Path) -> None:
    script, config, db = tmp_path / "s.jsonl", tmp_path / "c.toml", tmp_path / "h.db"
    script.write_text(json.dumps({"reply": HEBREW + " " + ALTERED}) + "\n", encoding="utf-8")
    config.write_text(f'provider = "scripted"\n[scripted]\nscript = "{script}"\n',
                      encoding="utf-8")
    asked = invoke("ask", "heb", "שלום", "--config", str(config), "--db", str(db), code=0)
    # stdout_bytes: Result.stdout reads \r\n as \n.
    assert asked.stdout_bytes.decode() == f"{HEBREW} {SHOWN_ALTERED}\n"
    invoke("sessions", "export", "heb", "-o", str(tmp_path / "heb.md"), "--config", str(config),
           "--db", str(db), code=0)
    markdown = (tmp_path / "heb.md").read_bytes().decode("utf-8")
    assert f"{HEBREW} a\\u000db \\u202ec\\u202c \\u001b[2J" in markdown
