"""The findings of issue 12, measured as a user meets them: one row per finding.

Each check runs the installed `chatmem` in a fresh HOME (interactive checks in a
pseudo-terminal, as a person would type) and prints what it saw, and whether
that is what a user expects. Run it before and after a change and compare:

    python benchmarks/repl_audit.py

Not part of the test suite (the tests check each behaviour on its own); this
is the before/after table for the report. `chatmem --help` is timed against
`python -c "import typer, rich"` in the same run (a ratio, not seconds).
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

CHATMEM = shutil.which("chatmem") or "chatmem"


class Home:
    """A fresh HOME with a scripted-provider default and a request log."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="chatmem-audit-"))
        self.log = self.dir / "requests.jsonl"
        self.env = {
            **{k: v for k, v in os.environ.items()
               if not k.startswith(("CHATMEM_", "OPENAI_", "XDG_"))},
            "HOME": str(self.dir), "CHATMEM_PROVIDER": "scripted",
            "CHATMEM_SCRIPTED_LOG": str(self.log), "COLUMNS": "80", "NO_COLOR": "1",
        }

    def run(self, *args: str, stdin: str = "", env: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CHATMEM, *args], input=stdin, capture_output=True, text=True,
                              env={**self.env, **(env or {})}, cwd=cwd or self.dir,
                              timeout=120)

    def calls(self) -> int:
        if not self.log.exists():
            return 0
        return sum(1 for line in self.log.read_text().splitlines() if line.strip())

    def db(self) -> Path:
        found = [p for p in self.dir.rglob("chatmem.db")]
        return found[0]

    def terminal(self, *args: str, keys: list[str], expect: str, timeout: float = 20.0,
                 stdout_to: Path | None = None) -> str:
        """Type `keys` into `chatmem ARGS` on a pseudo-terminal; the screen text until `expect`."""
        pid, fd = pty.fork()
        if pid == 0:  # child
            env = {**self.env, "TERM": "xterm", "COLUMNS": "80", "LINES": "24"}
            os.chdir(self.dir)
            if stdout_to is not None:
                out = os.open(stdout_to, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(out, 1)
            os.execvpe(CHATMEM, [CHATMEM, *args], env)
        screen = ""

        def read_until(text: str, limit: float) -> bool:
            nonlocal screen
            end = time.monotonic() + limit
            while time.monotonic() < end:
                ready, _, _ = select.select([fd], [], [], 0.1)
                if ready:
                    try:
                        screen += os.read(fd, 65536).decode("utf-8", "replace")
                    except OSError:
                        return text in screen
                if text in screen:
                    return True
            return False

        try:
            read_until("> ", timeout)
            for key in keys:
                os.write(fd, key.encode())
                read_until("\0never", 0.6)  # let the screen settle between keys
            read_until(expect, timeout)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
            os.waitpid(pid, 0)
            os.close(fd)
        return screen


Check = Callable[[], tuple[str, bool]]


def piped_stdout() -> tuple[str, bool]:
    home = Home()
    done = home.run("chat", "p", stdin="Hi I am Zed\n/strategy buffer\nwhat is my name?\n"
                                        "/tokens\n")
    extra = [line for line in done.stdout.splitlines() if not line.startswith("echo #")]
    return f"{len(extra)} non-reply lines on stdout", not extra


def read_only_db() -> tuple[str, bool]:
    home = Home()
    home.run("ask", "first", "--session", "ro")
    before = home.calls()
    db = home.db()
    # root ignores permission bits: the immutable flag makes the file read-only for root too.
    as_root = os.geteuid() == 0
    subprocess.run(["chattr", "+i", str(db)], check=True) if as_root else db.chmod(0o444)
    try:
        done = home.run("ask", "second question", "--session", "ro")
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=True) if as_root else db.chmod(0o644)
    calls = home.calls() - before
    return f"{calls} model call(s) before the error (exit {done.returncode})", calls == 0


def over_budget() -> tuple[str, bool]:
    home = Home()
    text = "word " * 400_000
    done = home.run("ask", "-", "--session", "big", stdin=text)
    calls = home.calls()
    return (f"{calls} model call(s) for a 400k-token input (exit {done.returncode})",
            calls == 0 and done.returncode != 0)


def system_quotes() -> tuple[str, bool]:
    home = Home()
    home.run("chat", "s", stdin='/system ""\n')
    row = sqlite3.connect(home.db()).execute("select system from sessions").fetchone()
    return f"system prompt stored as {row[0]!r}", row[0] != '""'


def quit_extra() -> tuple[str, bool]:
    home = Home()
    done = home.run("chat", "q", stdin="/quit now\nhello\n")
    rejected = "usage" in done.stderr.lower()
    return ("'/quit now' rejected with usage" if rejected else "'/quit now' accepted silently",
            rejected)


def export_md() -> tuple[str, bool]:
    home = Home()
    home.run("chat", "e", stdin="hello\n/export sup2.md\n")
    path = home.dir / "sup2.md"
    head = path.read_text().splitlines()[0] if path.exists() else "(no file)"
    return f"/export sup2.md starts {head[:30]!r}", not head.startswith("{")


def export_overwrite() -> tuple[str, bool]:
    home = Home()
    home.run("ask", "hello", "--session", "e")
    target = home.dir / "keep.jsonl"
    target.write_text("precious\n")
    done = home.run("sessions", "export", "e", "-o", str(target))
    kept = target.read_text() == "precious\n"
    return (f"sessions export -o EXISTING: exit {done.returncode}, "
            f"{'kept' if kept else 'overwritten'}", kept and done.returncode != 0)


def bad_name() -> tuple[str, bool]:
    home = Home()
    home.run("ask", "hello", "--session", "x")
    done = home.run("sessions", "rename", "x", "bad name/with slash")
    return (f"rename to 'bad name/with slash': exit {done.returncode}",
            done.returncode != 0)


def ask_positional() -> tuple[str, bool]:
    home = Home()
    done = home.run("ask", "trip", "where do we go?")
    ok = done.returncode == 0
    names = [] if not ok else json.loads(home.run("sessions", "list", "--json").stdout)
    positional = ok and [s["name"] for s in names] == ["trip"]
    return (f"ask SESSION TEXT: exit {done.returncode}"
            + (", session 'trip'" if positional else ""), positional)


def usage_braces() -> tuple[str, bool]:
    home = Home()
    done = home.run("ask", "--help")
    braced = "{" in done.stdout.splitlines()[0] if done.stdout else True
    first = next((line for line in done.stdout.splitlines() if "Usage" in line), "")
    return f"{first.strip()[:60]}", not braced


def no_color_diff() -> tuple[str, bool]:
    home = Home()
    lines = "".join(f"my order ORD-{n} costs {n * 10} EUR and ships to Oslo\n"
                    for n in range(1, 12))
    done = home.run("chat", "d", "--strategy", "summary-buffer", "--param", "max_tokens=200",
                    stdin=lines + "/summary\n")
    shown = done.stdout + done.stderr  # /summary prints to stderr since this issue
    marked = "[+" in shown or "{+" in shown
    return ("/summary under NO_COLOR: " + ("markers" if marked else "no markers"), marked)


def fresh_home_lists() -> tuple[str, bool]:
    home = Home()
    codes = [home.run(*cmd).returncode for cmd in (("sessions", "list"), ("facts", "list"))]
    return f"sessions list, facts list on a fresh HOME: exit {codes}", codes == [0, 0]


def db_location() -> tuple[str, bool]:
    home = Home()
    home.run("ask", "hello", "--session", "loc")
    where = home.db().relative_to(home.dir)
    return f"history file at ~/{where}", ".local/share" in str(where)


def config_show() -> tuple[str, bool]:
    home = Home()
    done = home.run("config", "show")
    lines = done.stdout.splitlines()
    with_path = [line for line in lines if str(home.dir) in line]
    table = [line.rstrip() for line in lines if line.strip() and str(home.dir) not in line]
    cap = next((line.split()[1:] for line in table if line.split()[:1] == ["max_reply_tokens"]),
               [])
    blank_cap = not cap or cap == ["—"]
    widest = max((len(line) for line in table), default=0)
    return (f"{len(lines)} lines, table {widest} wide, HOME path on {len(with_path)} lines, "
            f"max_reply_tokens {'blank' if blank_cap else ' '.join(cap)}",
            not blank_cap and widest <= 80 and len(with_path) <= 2)


def tab_completion() -> tuple[str, bool]:
    home = Home()
    screen = home.terminal("chat", "t", keys=["/str", "\t"], expect="/strategy", timeout=8)
    found = "/strategy" in screen
    return f"Tab after /str: {'/strategy' if found else 'nothing'}", found


def history_after_restart() -> tuple[str, bool]:
    home = Home()
    home.run("chat", "h", stdin="remember the blue door\n")
    screen = home.terminal("chat", "h", keys=["\x1b[A"], expect="blue door", timeout=8)
    found = "remember the blue door" in screen
    return f"Up after a restart: {'last input' if found else 'nothing'}", found


def prompt_with_stdout_redirected() -> tuple[str, bool]:
    home = Home()
    out = home.dir / "replies.txt"
    screen = home.terminal("chat", "r", keys=["hello there\r"], expect="tokens", timeout=15,
                           stdout_to=out)
    on_file = out.read_text(errors="replace") if out.exists() else ""
    prompt_seen = "r> " in screen or "r>" in screen
    clean = "r> " not in on_file and "\x1b" not in on_file
    return (f"prompt on the terminal: {'yes' if prompt_seen else 'no'}; file holds only "
            f"replies: {'yes' if clean else 'no'}", prompt_seen and clean)


def help_speed() -> tuple[str, bool]:
    def best(cmd: list[str]) -> float:
        times = []
        for _ in range(5):
            start = time.perf_counter()
            subprocess.run(cmd, capture_output=True, check=False)
            times.append(time.perf_counter() - start)
        return min(times)

    base = best([sys.executable, "-c", "import typer, rich"])
    ours = best([CHATMEM, "--help"])
    return f"chatmem --help {ours * 1000:.0f} ms = {ours / base:.2f}× import typer, rich", \
        ours / base < 3


CHECKS: list[tuple[str, Check]] = [
    ("piped chat: stdout is replies only", piped_stdout),
    ("prompt visible with stdout redirected", prompt_with_stdout_redirected),
    ("Tab completes /str", tab_completion),
    ("Up recalls input after restart", history_after_restart),
    ("read-only db fails before the model", read_only_db),
    ("400k-token input refused before sending", over_budget),
    ('/system "" not stored as quotes', system_quotes),
    ("/quit rejects extra arguments", quit_extra),
    ("/export FILE.md writes Markdown", export_md),
    ("sessions export never overwrites", export_overwrite),
    ("one session-name rule (rename)", bad_name),
    ("ask SESSION TEXT", ask_positional),
    ("usage lines without {braces}", usage_braces),
    ("summary diff readable without colour", no_color_diff),
    ("fresh HOME: list commands exit 0", fresh_home_lists),
    ("history file in the user data dir", db_location),
    ("config show compact", config_show),
    ("chatmem --help stays fast", help_speed),
]


def main() -> None:
    width = max(len(name) for name, _ in CHECKS)
    passed = 0
    for name, check in CHECKS:
        try:
            seen, ok = check()
        except Exception as e:  # a check that crashes is a finding too
            seen, ok = f"check failed: {type(e).__name__}: {e}"[:90], False
        passed += ok
        print(f"{'ok ' if ok else 'NO '} {name:<{width}}  {seen}", flush=True)
    print(f"\n{passed}/{len(CHECKS)} as a user expects")


if __name__ == "__main__":
    main()
