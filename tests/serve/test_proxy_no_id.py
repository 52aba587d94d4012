"""Chats no id names, which `chatmem serve` knows by how they began and by the whole history
each request sends: two alike stay two, and neither's turn is replaced by the other's."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy

from chatmem.config.settings import Settings
from chatmem.store import Store


def test_a_chat_that_goes_on_is_not_taken_for_a_regenerate_in_another_alike(
        chat_server: ChatServer, db_path: Path) -> None:
    """Two clients that sent the same whole histories, A then B: B's third request matched
    A's session as a regenerate of A's third turn (looked at first), and replaced it."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))

    def chat() -> list[str]:
        history: list[dict[str, str]] = []
        ids = []
        for said in ("你好", "第零步", "第一步"):
            history.append({"role": "user", "content": said})
            answer = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                                json={"model": "test-small", "messages": history})
            assert answer.status_code == 200, answer.text
            history.append({"role": "assistant",
                            "content": answer.json()["choices"][0]["message"]["content"]})
            ids.append(unquote(answer.headers["X-Chatmem-Turn"]))
        return ids

    with RunningProxy(settings, strategy="window") as running:
        a, b = chat(), chat()
    assert [i.rpartition("@")[2] for i in a + b] == ["1", "2", "3"] * 2
    sessions = {i.rpartition("@")[0] for i in a} | {i.rpartition("@")[0] for i in b}
    assert len(sessions) == 2  # each chat a session of its own, all along
    with Store(db_path) as store:
        for name in sessions:
            session = store.sessions.session(name)
            turns = store.turns.turns(session.id)
            assert [(str(t.status), t.superseded_by) for t in turns] == [("ok", None)] * 3
            assert store.history.turn_count(session.id) == 3
