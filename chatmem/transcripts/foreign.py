"""Other apps' chat exports that are not transcripts chatmem reads: told apart by their
shape, so that importing one says what the file is instead of blaming its first message's
missing role."""

from __future__ import annotations

from typing import Any

READ = ("it reads its own exports and OpenAI-style messages: one {\"role\": …,"
        " \"content\": …} a line (JSON Lines), one {\"messages\": [...]} document or a JSON"
        " list of messages")


def foreign_export(data: Any) -> str | None:
    """What `data` (a parsed document, or one JSON Lines record) is when it is another app's
    export of whole conversations; None for anything else."""
    first = data[0] if isinstance(data, list) and data else data
    if not isinstance(first, dict) or "role" in first:
        return None
    if isinstance(first.get("mapping"), dict) or "current_node" in first:
        # ChatGPT's: each conversation a tree of message nodes, the shown branch ending at
        # current_node.
        return "a ChatGPT data export (conversations.json: conversations as message trees)"
    if "chat_messages" in first:
        return "a Claude data export (conversations.json: conversations with chat_messages)"
    return None
