"""One conversation id however a client composed its letters: `Zoë` sent composed (NFC) and
decomposed (NFD, as macOS types it) names one session (stored names are NFC, as the CLI's),
so its calls take one line and one kept engine, never two at once (attack71). The server
in-process (the SDK's Client); the model a real HTTP server on 127.0.0.1 that holds its
answer until the test releases it (tests/chat_server.py)."""

from __future__ import annotations

import asyncio
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

from mcp import Client

from chatmem.config.settings import Settings
from chatmem.mcp.server import build_server
from chatmem.store import Store

COMPOSED = "Zoë-日记"
DECOMPOSED = unicodedata.normalize("NFD", COMPOSED)


def test_a_call_naming_the_conversation_decomposed_waits_for_one_naming_it_composed(
        chat_server: ChatServer, tmp_path: Path) -> None:
    """The line a conversation's calls wait in, and the engine kept for it, were keyed by the
    id as sent: a call naming it decomposed ran beside one naming it composed, on a second
    engine of the same session (its turn stored while the first's model call still hung,
    and each form had its own four places, so a flooder doubled them with every form)."""
    assert DECOMPOSED != COMPOSED
    db = tmp_path / "h.db"
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db))
    server = build_server(settings)

    async def record(client: Client, name: str, said: str) -> Any:
        return await client.call_tool("record_turn", {
            "conversation_id": name, "user": said, "assistant": "好的"})

    async def run() -> tuple[bool, Any, Any]:
        async with Client(server) as first_client, Client(server) as second_client:
            await first_client.call_tool("start_conversation",
                                         {"name": COMPOSED, "strategy": "entity"})
            chat_server.plan = ["hang"]  # the first turn's extractor waits for the release
            first = asyncio.create_task(record(first_client, COMPOSED, "我住在杭州"))
            while not chat_server.requests:
                await asyncio.sleep(0.01)
            second = asyncio.create_task(record(second_client, DECOMPOSED, "I moved to Oslo"))
            done, _ = await asyncio.wait({second}, timeout=3)
            answered_while_held = bool(done)
            chat_server.release.set()
            return answered_while_held, await first, await second

    answered_while_held, first, second = asyncio.run(asyncio.wait_for(run(), HANG))
    assert not first.is_error and not second.is_error, (first, second)
    assert not answered_while_held
    assert [first.structured_content["turn"], second.structured_content["turn"]] == [1, 2]
    assert second.structured_content["conversation_id"] == COMPOSED
    with Store(str(db)) as store:
        assert [row.name for row in store.sessions.list_sessions()] == [COMPOSED]
