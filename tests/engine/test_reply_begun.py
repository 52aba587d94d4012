"""A served client's "Continue" (Engine.run_turn(reply_begun)): the reply so far is sent
after the input for the model to go on with, and stored as part of the reply. It is text
the client sends, as an input is, so it is held to the input's rules: memory leaves room
for it within the budget, and the credentials chatmem runs with are masked in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatmem.app import Workspace
from chatmem.app.conversations import open_conversation
from chatmem.config.settings import Settings
from chatmem.notices import CredentialInInput

KEY = "sk-test-BEGUN-0a1b2c3d4e5f6789"


@pytest.mark.parametrize(("strategy", "params"), [
    ("tokens", {"max_tokens": 400}),
    ("summary-buffer", {"max_tokens": 400}),
])
def test_a_continued_reply_is_counted_within_the_budget(
        make_engine, strategy: str, params: dict[str, int]) -> None:  # type: ignore[no-untyped-def]
    """Before: the strategy filled the budget as if the input were all, and the reply so far
    was added after it (565 tokens sent under a 400-token budget, nothing said)."""
    engine = make_engine(strategy, **params)
    for i in range(12):
        engine.run_turn(f"问题 {i}：" + "西湖的水很深，湖边有很多柳树。" * 6)
    begun = "西湖在杭州，" + "湖水很深，四周有山，" * 25
    result = engine.run_turn("再说说", reply_begun=begun)
    context = result.record.context
    assert context["parts"][-1]["messages"][-1]["content"] == begun
    assert context["tokens"] <= context["budget"] == 400
    assert result.record.reply is not None and result.record.reply.startswith(begun)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_api_key_in_a_continued_reply_is_neither_sent_nor_stored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, language: str) -> None:
    """The reply so far comes from the client (its history's last message, which Open WebUI
    lets the user edit), as an MCP record_turn's reply does, which is masked; it was sent
    and stored as given."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    begun = {"en": f"Your key is {KEY} and", "zh": f"你的密钥是{KEY}，而且"}[language]
    db = tmp_path / "c.db"
    with (Workspace(Settings(db=str(db), provider="scripted"), create=True) as ws,
          open_conversation(ws, "续写") as engine):
        engine.run_turn("hello")
        result = engine.run_turn("hello", reply_begun=begun)
    assert CredentialInInput(("[api key]",)) in result.notices
    sent = result.record.context["parts"][-1]["messages"][-1]["content"]
    assert sent == begun.replace(KEY, "[api key]")
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
