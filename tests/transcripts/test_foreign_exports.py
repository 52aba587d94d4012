"""Another app's export of whole conversations is said to be one, with what chatmem reads,
not blamed for its first message's missing role."""

from __future__ import annotations

import json

import pytest

from chatmem.errors import TranscriptError
from chatmem.transcripts.reader import parse_transcript

CHATGPT = [{"title": "去杭州", "create_time": 1700000000.0, "current_node": "b", "mapping": {
    "a": {"id": "a", "message": None, "parent": None, "children": ["b"]},
    "b": {"id": "b", "parent": "a", "children": [], "message": {
        "author": {"role": "user"}, "content": {"content_type": "text", "parts": ["你好"]}}}}}]
CLAUDE = [{"uuid": "x", "name": "chat", "chat_messages": [{"sender": "human", "text": "hi"}]}]


@pytest.mark.parametrize(("data", "app"), [
    (CHATGPT, "a ChatGPT data export"), (CHATGPT[0], "a ChatGPT data export"),
    (CLAUDE, "a Claude data export"), (CLAUDE[0], "a Claude data export"),
])
@pytest.mark.parametrize("indent", [None, 2])
def test_a_chatgpt_or_claude_export_is_named_with_what_chatmem_reads(
        data: object, app: str, indent: int | None) -> None:
    with pytest.raises(TranscriptError) as caught:
        parse_transcript(json.dumps(data, ensure_ascii=False, indent=indent),
                         "conversations.json")
    said = str(caught.value)
    assert said.startswith(f"conversations.json: {app} ")
    assert "which chatmem does not read; it reads its own exports and OpenAI-style" in said
    assert "role" not in said.split(";")[0]


def test_a_message_with_a_mapping_field_is_still_a_message() -> None:
    t = parse_transcript(json.dumps([{"role": "user", "content": "hi", "mapping": {}}]), "m.json")
    assert [m.content for m in t.messages] == ["hi"]
