"""A memory update that fails behind `chatmem serve` (the helper model's 500 as it extracts
facts or summarizes) is in the server's log, once while it keeps failing and again if it
fails after it ran: its client is answered all the same, and the turn's notices were dropped,
so the server's owner, who alone can mend the helper, never learnt that memory stopped
growing. Real HTTP both ways, a real history file."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from openai import OpenAI
from test_proxy import RunningProxy

from chatmem.config.settings import Settings

NO_FACTS = '{"set": [], "retract": []}'
"""What the helper answers when it extracts fine (every reply, the chat's too)."""


@pytest.mark.parametrize("strategy, opens, ends", [
    ("entity", "facts not updated (", "; turn {} will be retried"),
    ("summary", "summary is behind (",
     "; turn {} stays in the context unsummarized, the next turn catches up")],
    ids=["entity", "summary"])
@pytest.mark.parametrize("conversation, said", [
    ("memory-helper", "I live in Rome."), ("记忆助手", "我住在罗马。")], ids=["en", "zh"])
def test_a_failing_helper_is_logged_once_while_it_fails(
        chat_server: ChatServer, db_path: Path, conversation: str, said: str,
        strategy: str, opens: str, ends: str) -> None:
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    chat_server.reply_words = [NO_FACTS]
    # Each turn: its reply, then the helper extracting facts or summarizing (the next turn
    # waits for it).
    chat_server.plan = ["ok", "500-internal",  # fails: logged
                        "ok", "500-internal",  # fails again: not logged again
                        "ok", "ok",  # extracts: the conversation's memory runs again
                        "ok", "500-internal",  # fails after it ran: logged again
                        "ok", "ok"]  # waits for the one before, its log line written
    with RunningProxy(settings) as running:
        client = OpenAI(base_url=running.base_url, api_key="unused", max_retries=0,
                        timeout=HANG)
        for turn in range(5):
            answer = client.chat.completions.create(
                model=f"test-small@{strategy}",
                messages=[{"role": "user", "content": f"{said} {turn}"}],
                extra_headers={"X-Chatmem-Conversation": quote(conversation)})
            assert answer.choices[0].message.content == NO_FACTS, turn
        logged = list(running.logged)
    assert len(chat_server.requests) == 10 and not chat_server.plan
    assert len(logged) == 2, logged
    for line, turn in zip(logged, (1, 4), strict=True):
        assert line.startswith(f"{conversation}: {opens}")
        assert line.endswith(ends.format(turn))
        assert "answered 500" in line and chat_server.base_url in line  # the owner's: in full
