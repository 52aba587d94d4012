"""The proxy over a plugin strategy whose update returns what its contract does not allow:
the turn is stored, so the request succeeds (a client that retried a failure would store
it twice). See tests/cli/test_plugin_returns.py for the other front ends."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from plugin_site import Install

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from starlette.testclient import TestClient

from chatmem.config.settings import Settings
from chatmem.serve.proxy import build_app
from chatmem.store import Store

NO_NOTICES = '''
from chatmem.memory.window import WindowStrategy

class NoNotices(WindowStrategy):
    name = "no-notices"
    description = "update returns None"

    def update(self, env):
        return None

def register(plugins):
    plugins.add_strategy(NoNotices)
'''


@pytest.mark.parametrize("stream", [False, True])
def test_a_stored_turn_whose_update_returned_no_notices_is_a_success(
        installed: Install, tmp_path: Path, stream: bool) -> None:
    installed("chatmem-no-notices", "chatmem_no_notices", NO_NOTICES, name="no-notices")
    db = tmp_path / "h.db"
    app = build_app(Settings(provider="scripted", db=str(db)), strategy="no-notices")
    with TestClient(app) as http:
        for sent in ("我叫李雷", "我叫什么?"):
            answered = http.post("/v1/chat/completions",
                                 headers={"X-Chatmem-Conversation": "trip"},
                                 json={"model": "scripted", "stream": stream,
                                       "messages": [{"role": "user", "content": sent}]})
            assert answered.status_code == 200, answered.text
            assert '"error"' not in answered.text
    with Store(db) as store:
        said = [m.content for m in store.history.messages(store.sessions.session("trip").id)]
    assert said == ["我叫李雷", "echo #1: 我叫李雷", "我叫什么?", "echo #2: 我叫什么?"]


SHUT = '''
from chatmem.providers.scripted import ScriptedProvider

class Shut(ScriptedProvider):
    name = "shut"

    def close(self):
        raise OSError("关不上 socket already gone")

def register(plugins):
    plugins.add_provider("shut", lambda settings: Shut())
'''


def test_a_plugin_provider_whose_close_raises_is_one_log_line_at_shutdown(
        installed: Install, tmp_path: Path) -> None:
    """It was a traceback and "Application shutdown failed" on serve's stderr."""
    installed("chatmem-shut", "chatmem_shut", SHUT, name="shut")
    logged: list[str] = []
    db = tmp_path / "h.db"
    app = build_app(Settings(provider="shut", db=str(db)), strategy="window",
                    log=logged.append)
    with TestClient(app) as http:
        answered = http.post("/v1/chat/completions",
                             json={"model": "shut",
                                   "messages": [{"role": "user", "content": "你好"}]})
        assert answered.status_code == 200, answered.text
    assert len(logged) == 1
    assert "closing the models" in logged[0] and "'shut'" in logged[0]
    assert "OSError: 关不上 socket already gone" in logged[0]
    assert "plugin shut (chatmem-shut 0.1.0)" in logged[0]


@pytest.mark.parametrize("stream", [False, True])
def test_a_plugin_strategy_that_fails_to_build_is_logged_and_not_asked_again(
        installed: Install, tmp_path: Path, stream: bool) -> None:
    """A plugin strategy failing to build the context on every request was a 500 the openai
    SDKs asked twice again (3.5 s, three failed builds), and serve's log said nothing: the
    one who installed the plugin, who alone can mend it, never knew. The log names the
    plugin, the 500 says not to retry (x-should-retry: false), and nothing is stored."""
    from plugin_site import BUILD_FAILS

    installed("chatmem-boom", "chatmem_boom", BUILD_FAILS, name="boom")
    logged: list[str] = []
    db = tmp_path / "h.db"
    app = build_app(Settings(provider="scripted", db=str(db)), strategy="boom",
                    log=logged.append)
    with TestClient(app) as http:
        answered = http.post("/v1/chat/completions",
                             headers={"X-Chatmem-Conversation": "trip"},
                             json={"model": "scripted", "stream": stream,
                                   "messages": [{"role": "user", "content": "你好"}]})
    assert answered.status_code == 500, answered.text
    assert answered.headers["x-should-retry"] == "false"
    assert "上下文炸了" in answered.json()["error"]["message"]
    [line] = logged
    assert line.startswith("trip: strategy 'boom' failed in its build: RuntimeError: 上下文炸了")
    assert "(plugin boom (chatmem-boom 0.1.0))" in line
    with Store(db) as store:
        assert store.sessions.find_session("trip") is None



SLOW = '''
import time

from chatmem.memory.window import WindowStrategy


class Slow(WindowStrategy):
    name = "slow"
    description = "slow to build or to update / 慢"
    keeps_state = True

    def build(self, request):
        time.sleep(0.3 if HOOK == "build" else 0)
        return super().build(request)

    def update(self, env):
        time.sleep(0.3 if HOOK == "update" else 0)
        env.state.set(self.name, turns=env.history.turn_count())
        return []


def register(plugins):
    plugins.add_strategy(Slow)
'''


@pytest.mark.parametrize(("hook", "words"), [("build", "to build the context"),
                                             ("update", "to update its memory")])
def test_a_plugin_strategy_slow_in_a_hook_is_logged_once_per_conversation(
        installed: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hook: str,
        words: str) -> None:
    """Chat and `ask` said a plugin's slow build or update once; behind serve every request
    waited for it and the server's log, the one place its owner reads, said nothing."""
    import chatmem.engine.upkeep

    installed("chatmem-slow", "chatmem_slow", f"HOOK = {hook!r}\n{SLOW}")
    monkeypatch.setattr(chatmem.engine.upkeep, f"SLOW_{hook.upper()}", 0.25)
    logged: list[str] = []
    app = build_app(Settings(provider="scripted", db=str(tmp_path / "h.db")), strategy="slow",
                    log=logged.append)
    with TestClient(app) as http:
        for conversation, sent in (("旅行", "一"), ("旅行", "二"), ("trip", "three")):
            answered = http.post("/v1/chat/completions",
                                 headers={"X-Chatmem-Conversation": quote(conversation)},
                                 json={"model": "scripted",
                                       "messages": [{"role": "user", "content": sent}]})
            assert answered.status_code == 200, answered.text
    assert [line.partition(":")[0] for line in logged] == ["旅行", "trip"], logged
    assert all(words in line and "'slow'" in line and "chatmem-slow 0.1.0" in line
               for line in logged), logged
