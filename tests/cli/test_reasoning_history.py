"""A reasoning model's `<think>…</think>` in its reply (real HTTP to a local server): stored
and shown as the model said it, sent back to it later without the reasoning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_runner import invoke

from chatmem.store import Store
from chatmem.tokens import counter_for_model


def served(server: Any, *args: str) -> Any:
    return invoke(*args, env={"OPENAI_BASE_URL": server.base_url,
                              "OPENAI_API_KEY": "sk-test-key-1234"})


def test_a_replys_reasoning_is_kept_and_shown_but_not_sent_back(chat_server,
                                                                 tmp_path: Path) -> None:
    """Leftover: the chat model's own reasoning went back to it in the history part of every
    later turn, tokens paid for each time and against how reasoning models take history."""
    db = str(tmp_path / "h.db")
    said = "<think>\nThe user asks about Rome. 想一想。\n</think>\n\n罗马很好。"
    chat_server.reply_words = ["<think>\nThe user asks about Rome. 想一想。\n</think>",
                               "\n\n罗马", "很好。"]
    for question in ("罗马怎么样？", "And Paris?"):
        result = served(chat_server, "ask", "s", "-m", "test-small", "-s", "buffer",
                        question, "--db", db)
        assert result.exit_code == 0, result.stderr
    sent = [(m["role"], m["content"]) for m in chat_server.requests[-1]["messages"]
            if m["role"] != "system"]
    assert sent == [("user", "罗马怎么样？"), ("assistant", "罗马很好。"),
                    ("user", "And Paris?")]
    with Store(db) as store:
        stored = store.history.messages(store.sessions.session("s").id)
        assert [m.content for m in stored if m.role == "assistant"] == [said, said]
    shown = json.loads(served(chat_server, "inspect", "s", "2", "--db", db, "--json").stdout)
    history = next(p for p in shown["context"]["parts"] if p["kind"] == "history")
    assert [m["content"] for m in history["messages"]] == ["罗马怎么样？", "罗马很好。"]
    # Counted as sent: the reasoning's tokens are not in the budget's count either.
    counter = counter_for_model("test-small")
    assert history["messages"][1]["tokens"] == counter.count_message("assistant", "罗马很好。")
    assert shown["turn"]["reply"] == said
