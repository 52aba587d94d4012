"""A thread a plugin started that raises (a strategy's thread reading request.history) is
one line naming the plugin on stderr, not Python's traceback; the turn goes on (plugin64)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from plugin_site import install
from waiting import HANG

THREADED = """
import os
import threading

from chatmem.memory.window import WindowStrategy

class Threaded(WindowStrategy):
    name = "threaded"
    description = "reads the history from a thread of its own"

    def build(self, request):
        if os.environ.get("THREAD_FAILS") == "history":
            work = lambda: request.history.turn_count()
        elif os.environ.get("THREAD_FAILS") == "key":
            def work():
                raise PermissionError("401: 密钥 " + os.environ["LLM_CRED"] + " refused")
        else:
            def work():
                raise ValueError("线程坏了 thread broke")
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        return super().build(request)

def register(plugins):
    plugins.add_strategy(Threaded)
"""


def ask(tmp_path: Path, fails: str, *options: str,
        **env: str) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    if not site.exists():
        install(site, "chatmemtest-threaded", "chatmemtest_threaded", THREADED, name="threaded")
    path = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    return subprocess.run(
        [sys.executable, "-m", "chatmem", "ask", "线程", "你好 hi", "-s", "threaded",
         "--provider", "scripted", "--db", str(tmp_path / "h.db"), *options],
        capture_output=True, text=True, encoding="utf-8", timeout=HANG,
        env={**os.environ, "PYTHONPATH": path, "THREAD_FAILS": fails, **env})


def test_a_plugins_thread_using_the_history_is_one_line_naming_the_plugin(
        tmp_path: Path) -> None:
    done = ask(tmp_path, "history")
    assert done.returncode == 0 and done.stdout.strip()
    assert "Traceback" not in done.stderr
    [line] = [s for s in done.stderr.splitlines() if "request.history" in s]
    assert "plugin threaded (chatmemtest-threaded 0.1.0)" in line


def test_any_exception_of_a_plugins_thread_is_one_line(tmp_path: Path) -> None:
    done = ask(tmp_path, "raise")
    assert done.returncode == 0
    assert "Traceback" not in done.stderr
    [line] = [s for s in done.stderr.splitlines() if "线程坏了" in s]
    assert "ValueError" in line and "plugin threaded (chatmemtest-threaded 0.1.0)" in line


def test_a_plugins_thread_saying_the_configured_key_has_it_masked(tmp_path: Path) -> None:
    """The key a config names by its variable (api_key_env), not chatmem's default one: the
    hook masked the environment's default credentials alone, as no guarded call does."""
    config = tmp_path / "config.toml"
    config.write_text('api_key_env = "LLM_CRED"\n', encoding="utf-8")
    key = "sk-live-9f8e7d6c5b4a39281706"
    done = ask(tmp_path, "key", "--config", str(config), LLM_CRED=key)
    assert done.returncode == 0 and done.stdout.strip()
    [line] = [s for s in done.stderr.splitlines() if "密钥" in s]
    assert key not in done.stderr and "refused" in line
    assert "plugin threaded (chatmemtest-threaded 0.1.0)" in line
