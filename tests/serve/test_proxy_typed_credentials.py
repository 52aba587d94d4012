"""The server's own API key in a served client's messages is masked before it is stored, and
the client's copies of those messages are still known for its own: a regenerate replaces the
turn, the next message goes on the session, a chat without an id is found by its opening."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_server import ChatServer

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from test_proxy import RunningProxy
from test_proxy_conversations import asker, turns

from chatmem.config.settings import Settings

KEY = "sk-test-TYPED-9f8e7d6c5b4a3210"


@pytest.fixture
def proxy(chat_server: ChatServer, db_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningProxy]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="window") as running:
        yield running


@pytest.mark.parametrize("who", [{"user": "alice"}, {}], ids=["named", "by-opening"])
def test_a_key_in_a_served_chat_is_masked_and_its_copies_still_match(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path, who: dict) -> None:
    ask = asker(proxy, **who)
    one = [{"role": "user", "content": f"我的密钥是{KEY}，my key"}]
    reply, _, stored = ask(one)
    assert stored == "new-session"
    said = [("我的密钥是[api key]，my key", "ok", False)]
    if who:  # a regenerate (a chat known by its opening alone begins anew: two began alike)
        assert ask(one)[2] == "replaced-last-turn"
        said = [("我的密钥是[api key]，my key", "ok", True), *said]
    one += [{"role": "assistant", "content": reply},
            {"role": "user", "content": f"again {KEY}"}]
    assert ask(one)[2] == "next-turn"
    assert chat_server.requests[-1]["messages"][-1]["content"] == "again [api key]"
    assert list(turns(db_path).values()) == [[*said, ("again [api key]", "ok", False)]]
    for path in db_path.parent.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("who", [{"user": "alice"}, {}], ids=["named", "by-opening"])
def test_a_key_in_a_served_chat_s_system_message_is_neither_sent_nor_stored(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path, who: dict) -> None:
    """Its system messages are the request's own instructions: sent, and stored with the
    turn's context, as its user messages are."""
    ask = asker(proxy, **who)
    chat = [{"role": "system", "content": f"用这个密钥 {KEY} when asked"},
            {"role": "user", "content": "你好"}]
    reply, _, _ = ask(chat)
    assert chat_server.requests[-1]["messages"][0] == {
        "role": "system", "content": "用这个密钥 [api key] when asked"}
    # The chat goes on: its copies, masked alike, are known for the session's.
    assert ask([*chat, {"role": "assistant", "content": reply},
                {"role": "user", "content": "again"}])[2] == "next-turn"
    for path in db_path.parent.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_server_s_key_sent_as_the_model_is_a_400_neither_sent_nor_stored(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path, stream: bool) -> None:
    """A front end whose key and model fields were swapped sent the key as `model`: it went
    to the endpoint as the model's name and was stored as the session's and the turn's model."""
    import httpx2 as httpx

    answer = httpx.post(f"{proxy.base_url}/chat/completions", timeout=30,
                        headers={"X-Chatmem-Conversation": "swapped"},
                        json={"model": KEY, "stream": stream,
                              "messages": [{"role": "user", "content": "你好"}]})
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "model" and KEY not in answer.text
    assert chat_server.requests == []
    for path in db_path.parent.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
