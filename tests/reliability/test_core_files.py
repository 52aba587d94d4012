"""A chatmem process that crashes writes no core file: its memory holds the API key, the
history's key and the history read in the clear, which a core file would keep on disk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import invoke

resource = pytest.importorskip("resource", reason="no core limits on this system")

KEY = "sk-test-CORE-9f8e7d6c5b4a"
SAID = "my locker code is 4417-XQ"


@pytest.fixture
def core_files_on() -> Iterator[tuple[int, int]]:
    """This process's core limit, raised to what the system allows (restored after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    if hard == 0:
        pytest.skip("core files are off for this process (hard limit 0)")
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))
    yield soft, hard
    resource.setrlimit(resource.RLIMIT_CORE, (soft, hard))


def test_a_command_turns_core_files_off_for_itself_and_what_it_runs(
        core_files_on: tuple[int, int], tmp_path: Path) -> None:
    invoke("strategies", code=0)
    assert resource.getrlimit(resource.RLIMIT_CORE) == (0, core_files_on[1])


@pytest.mark.skipif(not Path("/proc/sys/kernel/core_pattern").exists(), reason="Linux only")
def test_a_chat_killed_by_a_crash_leaves_no_core_file_holding_its_secrets(
        core_files_on: tuple[int, int], tmp_path: Path) -> None:
    pattern = Path("/proc/sys/kernel/core_pattern").read_text().strip()
    if pattern.startswith("|") or "/" in pattern:
        pytest.skip(f"core files go elsewhere here ({pattern!r}), not to the working directory")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHATMEM_"))}
    env.update(HOME=str(tmp_path), OPENAI_API_KEY=KEY, NO_COLOR="1")
    chat = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "chat", "s", "--provider", "scripted",
         "--db", str(tmp_path / "h.db")], cwd=tmp_path, env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert chat.stdin is not None and chat.stdout is not None
    chat.stdin.write(f"{SAID}\n")
    chat.stdin.flush()
    while SAID not in chat.stdout.readline():  # the reply: the chat waits for the next line
        assert chat.poll() is None
    chat.send_signal(signal.SIGSEGV)  # as a native library's crash ends it
    assert chat.wait(timeout=60) == -signal.SIGSEGV
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(pattern.split("%")[0])
            ] == []
