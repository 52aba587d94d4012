"""The `chatmem` command and `python -m chatmem`: a Ctrl-C while the command line is still
being imported is one line and exit 130, not a traceback through typer's imports."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

# Ctrl-C at the moment typer is imported (the first ~0.3 s of every command), made exact:
# the import itself raises KeyboardInterrupt, as the signal does when it lands there.
INTERRUPTED_IMPORT = """
import sys, importlib.abc
class Interrupting(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "typer":
            raise KeyboardInterrupt
        return None
sys.meta_path.insert(0, Interrupting())
sys.argv = ["chatmem", "sessions", "list"]
"""

STARTS = {
    "python -m chatmem": "import runpy; runpy.run_module('chatmem', run_name='__main__')",
    "the chatmem command": "from chatmem.__main__ import main; main()",
}


@pytest.mark.parametrize("start", sorted(STARTS))
def test_ctrl_c_while_the_command_line_imports_is_one_line(start: str) -> None:
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_IMPORT + STARTS[start]],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == "interrupted"
    assert done.stdout == ""


def test_the_chatmem_command_starts_where_an_interrupt_is_caught() -> None:
    pyproject = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["chatmem"] == "chatmem.__main__:main"


def test_the_command_runs_as_before() -> None:
    done = subprocess.run([sys.executable, "-c", STARTS["the chatmem command"], "--version"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "chatmem 0.1.0"
