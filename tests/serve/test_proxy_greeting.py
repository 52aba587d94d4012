"""A character app (SillyTavern and the like) opens its chat with the assistant's greeting,
[system, assistant, user]: the greeting is the start of the conversation, and the model gets
it in its place on every turn, whatever the strategy."""

from __future__ import annotations

from pathlib import Path

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy

from chatmem.config.settings import Settings

GREETING = "欢迎来到蓝色客栈。The password is OWL-7. What is your name?"


@pytest.mark.parametrize("strategy", ["buffer", "tokens", "window", "summary-buffer",
                                      "window+entity"])
def test_the_greeting_a_chat_opens_with_reaches_the_model_on_every_turn(
        chat_server: ChatServer, db_path: Path, strategy: str) -> None:
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    messages = [{"role": "system", "content": "You are Aria."},
                {"role": "assistant", "content": GREETING},
                {"role": "user", "content": "Bo. what is the password?"}]
    with RunningProxy(settings) as running:
        for follow_up in ("and again?", "再说一遍？"):
            answer = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                                headers={"X-Chatmem-Conversation": f"greet-{strategy}"},
                                json={"model": f"test-small@{strategy}", "messages": messages})
            assert answer.status_code == 200, answer.text
            # The chat call, not a fact extraction after it.
            sent = next(r["messages"] for r in reversed(chat_server.requests)
                        if r["messages"][-1]["content"] == messages[-1]["content"])
            assert [m["role"] for m in sent[:3]] == ["system", "assistant", "user"]
            assert sent[1]["content"] == GREETING
            messages += [answer.json()["choices"][0]["message"],
                         {"role": "user", "content": follow_up}]
