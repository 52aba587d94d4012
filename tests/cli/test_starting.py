"""The line a command shows on a terminal while it loads, and that nothing else sees it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import needs_sqlcipher
from in_a_terminal import at_a_terminal

from chatmem.cli.starting import loading_line
from chatmem.store import Store

REPO = Path(__file__).resolve().parents[2]
TRAVEL = REPO / "sessions" / "travel-zh.jsonl"
ERASE = "\r\x1b[2K"
# The delay set to 0: the line shows while the imports run, however fast the machine.
AT_ONCE = "import chatmem.cli.starting as s; s.AFTER = 0; from chatmem.cli import main; main()"


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "CHATMEM_DB": str(tmp_path / "h.db"), "COLUMNS": "100",
            "XDG_CONFIG_HOME": str(tmp_path / "config"), "TERM": "xterm",
            "XDG_CACHE_HOME": str(tmp_path / "cache")}


def _at_a_terminal(args: list[str], env: dict[str, str],
                   answers: dict[str, str] | None = None) -> tuple[str, int]:
    """All the command wrote, stdout and stderr a pseudo-terminal, and its exit code;
    `answers`: what is typed once a question shows (stdin the terminal too, and its
    controlling terminal, where getpass asks)."""
    return at_a_terminal([sys.executable, "-c", AT_ONCE, *args], env,
                         answers=[(q, a + "\r") for q, a in (answers or {}).items()],
                         seconds=120, stdin=bool(answers), controlling=bool(answers))


def test_eval_says_it_is_loading_from_the_start_and_erases_it_first(tmp_path: Path) -> None:
    shown, code = _at_a_terminal(["eval", str(TRAVEL), "-s", "buffer", "--provider",
                                  "scripted"], _env(tmp_path))
    assert code == 0
    line = "chatmem eval: loading strategies and plugins…"
    # First thing on the screen, and erased before anything the command prints.
    assert shown.startswith(line + ERASE), shown[:200]
    assert shown.count(line) == 1
    assert "eval of" in shown and "buffer" in shown


def test_an_error_comes_on_a_line_of_its_own(tmp_path: Path) -> None:
    shown, code = _at_a_terminal(["sessions", "export", "nobody", str(tmp_path / "x.jsonl")],
                                 _env(tmp_path))
    assert code != 0
    assert shown.startswith("chatmem sessions export: loading strategies and plugins…" + ERASE)
    after = shown.split(ERASE, 1)[1]
    assert re.sub(r"\x1b\[[0-9;]*m", "", after).startswith("error: no history file")


@needs_sqlcipher
def test_a_key_asked_at_the_terminal_comes_on_a_line_of_its_own(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    Store(db, key="钥匙 key 7").close()
    env = {**_env(tmp_path), "CHATMEM_DB": str(db)}
    env.pop("CHATMEM_KEY", None)
    shown, code = _at_a_terminal(["sessions", "list"], env, {"key for": "钥匙 key 7"})
    assert code == 0, shown
    before = shown[:shown.index("key for")]
    assert before == "chatmem sessions list: loading strategies and plugins…" + ERASE, shown


def test_a_pipe_never_sees_it(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", AT_ONCE, "eval", str(TRAVEL), "-s", "buffer",
                           "--provider", "scripted"], capture_output=True, text=True,
                          env=_env(tmp_path), check=False, timeout=120)
    assert done.returncode == 0
    assert "loading" not in done.stderr and "loading" not in done.stdout
    assert "\x1b[2K" not in done.stderr


def test_help_shows_no_loading_line(tmp_path: Path) -> None:
    shown, code = _at_a_terminal(["eval", "--help"], _env(tmp_path))
    assert code == 0
    assert "loading" not in shown and shown.lstrip().startswith("Usage: chatmem eval")


def test_the_line_fits_a_narrow_terminal() -> None:
    assert loading_line("chatmem sessions import", 80) == (
        "chatmem sessions import: loading strategies and plugins…")
    assert loading_line("chatmem sessions import", 50) == "chatmem sessions import: loading…"
    assert loading_line("chatmem sessions import", 20) == "loading…"
    assert loading_line("chatmem sessions import", 5) == ""
