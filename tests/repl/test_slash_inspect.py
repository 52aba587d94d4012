"""/inspect N shows a recorded turn as `chatmem inspect` does: counted with the tokenizer the
turn recorded (exact or not), whatever model the chat runs on now."""

from __future__ import annotations

import json
from pathlib import Path

from chat_server import ChatServer
from cli_runner import chat, run


def test_inspect_counts_a_turn_as_recorded_not_as_the_chats_model_would(
        tmp_path: Path, chat_server: ChatServer) -> None:
    db = tmp_path / "h.db"
    assert chat(db, "行程", ["我想去杭州旅行", "预算五千元"]).exit_code == 0
    recorded = json.loads(run(db, "inspect", "行程", "2", "--json", code=0).stdout)
    assert recorded["tokenizer"]["exact"] is True
    # Now on a model whose counts are approximate: the recorded turn's stay exact.
    shown = chat(db, "行程", ["/inspect 2"], "--provider", "openai", "--model", "test-small",
                 env={"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-test"},
                 code=0).stderr
    total = f"{recorded['context']['tokens']:,} tokens of 4,000"
    assert any(total in line and "≈" not in line for line in shown.splitlines()), shown
    rows = {key: value.strip() for line in shown.splitlines()
            for key, _, value in [line.partition("  ")] if key in ("turn", "model", "tokenizer")}
    assert rows == {"turn": "2", "model": "scripted / scripted",
                    "tokenizer": f"{recorded['tokenizer']['name']} (exact)"}
    assert "预算五千元" in shown and chat_server.requests == []
