"""Searching memory (chatmem.app.search) for words said so often recall cannot score them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chatmem.app import Workspace
from chatmem.app.search import SEARCH_HITS, search_memory
from chatmem.config.settings import Settings
from chatmem.store.recall import POSTINGS

SAID = POSTINGS  # more messages than recall scores a word in (POSTINGS // 2)


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    with Workspace(Settings(provider="scripted", db=str(tmp_path / "h.db"))) as workspace:
        yield workspace


def said_every_turn(ws: Workspace, name: str, turns: int) -> None:
    session = ws.store.sessions.create_session(name, "window", {})
    ws.store.history.import_messages(session.id, [
        message for n in range(turns) for message in (
            {"role": "user", "content": f"第{n}条消息 关于北京天气 and Paris weather"},
            {"role": "assistant", "content": f"reply {n}"})])


@pytest.mark.parametrize("query", ["北京", "北京天气", "Paris"])
def test_a_word_said_in_every_turn_is_found_where_it_was_said_last(ws: Workspace,
                                                                   query: str) -> None:
    said_every_turn(ws, "长对话", SAID)
    for found in (search_memory(ws, query, "长对话", limit=SEARCH_HITS),
                  search_memory(ws, query, limit=SEARCH_HITS)):
        assert [f.turn for f in found] == list(range(SAID, SAID - SEARCH_HITS, -1)), query
        assert all(f.session == "长对话" and f.role == "user" and query in f.content
                   for f in found)
        # Nothing was scored: found as the newest messages saying the words.
        assert all(f.fused is None and f.bm25 is None for f in found)

