"""The paging of MCP results: what a page costs to count, and what it holds."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

from chatmem.mcp.results import ITEM_TOKENS, paged_parts
from chatmem.tokens import TiktokenCounter, counter_for_model


def test_paging_a_context_tokenizes_each_message_once(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = [{"role": "user" if n % 2 == 0 else "assistant",
                 "content": f"第{n}条消息：我们五月去杭州，订单号 ORD-{n:04d}。" * 40,
                 "tokens": 0, "turn": n // 2 + 1} for n in range(30)]
    for message in messages:
        message["tokens"] = counter_for_model(None).count_text(message["content"])
    parts: list[dict[str, Any]] = [{"kind": "history", "reason": "最近的对话",
                                    "tokens": sum(m["tokens"] for m in messages),
                                    "messages": messages}]
    counted: list[str] = []
    count_text = TiktokenCounter.count_text

    def counting(self: TiktokenCounter, text: str) -> int:
        counted.append(text)
        return count_text(self, text)

    monkeypatch.setattr(TiktokenCounter, "count_text", counting)
    pages, page = [], 1
    while page is not None:
        shown, page = paged_parts(parts, page, lambda part, message: "the transcript")
        pages.append([m for part in shown for m in part.messages])
    monkeypatch.undo()

    # Every page counts the whole context again (to know where pages start), but each
    # message's text is tokenized once per page, not once to cut it and again to page it.
    for message in messages:
        assert sum(message["content"] in text for text in counted) == len(pages)
    sent = [m.content for page_messages in pages for m in page_messages]
    assert sent == [m["content"] for m in messages]  # whole, in order, each exactly once
    assert len(pages) > 2
    count = counter_for_model(None).count_text
    for page_messages in pages:
        assert sum(count(m.model_dump_json()) for m in page_messages) <= ITEM_TOKENS
        assert count(json.dumps([m.model_dump() for m in page_messages], ensure_ascii=False,
                                separators=(",", ":"))) <= ITEM_TOKENS
