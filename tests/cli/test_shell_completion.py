"""Shell completion (issue 21, Build 8): `--show-completion` and `--install-completion` for
bash, and the completion protocol Typer defines for zsh and fish, run for real."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH has a `chatmem` that runs this checkout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    command = bin_dir / "chatmem"
    command.write_text(f'#!/bin/sh\nexec {sys.executable} -m chatmem "$@"\n', encoding="utf-8")
    command.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path),
            "PYTHONPATH": os.environ.get("PYTHONPATH", "")}


def bash(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "--norc", "--noprofile", "-c", script], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(("words", "expected"), [
    ("chatmem ses", ["sessions"]),
    ("chatmem sessions l", ["list"]),
    ("chatmem chat --str", ["--strategy"]),
])
def test_bash_completes_subcommands_and_options_from_show_completion(
    on_path: dict[str, str], words: str, expected: list[str]
) -> None:
    done = bash(f'eval "$(chatmem --show-completion)"\n'
                f"COMP_WORDS=({words}); COMP_CWORD={len(words.split()) - 1}\n"
                '_chatmem_completion chatmem\nprintf "%s\\n" "${COMPREPLY[@]}"', on_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == expected


def test_install_completion_writes_a_script_bashrc_sources(on_path: dict[str, str],
                                                           tmp_path: Path) -> None:
    # Two commands, so bash runs chatmem as its child (one it would exec in its place) and
    # Typer finds bash as the shell it runs in, wherever the test itself is started from.
    done = bash("chatmem --install-completion\nexit $?", on_path)
    assert done.returncode == 0, done.stderr
    bashrc = (tmp_path / ".bashrc").read_text(encoding="utf-8")
    script = tmp_path / ".bash_completions" / "chatmem.sh"
    assert f"source '{script}'" in bashrc or f"source {script}" in bashrc
    assert "complete -o default -F _chatmem_completion chatmem" in script.read_text(
        encoding="utf-8")


@pytest.mark.parametrize(("shell", "extra", "expected"), [
    ("zsh", {}, '"sessions":"List, show, rename, fork, delete, export..."'),
    ("fish", {"_TYPER_COMPLETE_FISH_ACTION": "get-args"},
     "sessions\tList, show, rename, fork, delete, export..."),
])
def test_zsh_and_fish_get_subcommands_with_their_help(
    on_path: dict[str, str], shell: str, extra: dict[str, str], expected: str
) -> None:
    done = subprocess.run(["chatmem"], env={**on_path, **extra,
                                            "_CHATMEM_COMPLETE": f"complete_{shell}",
                                            "_TYPER_COMPLETE_ARGS": "chatmem ses"},
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
