"""A group chat transcript of three speakers whose last message asks about bob's, for the
tests that the asker's own label is left out of what recall searches."""

from __future__ import annotations

import json
from pathlib import Path

SAID = [("alice", "I walked the dog this morning"), ("bob", "The ferry leaves at nine"),
        ("alice", "My garden needs water"), ("alice", "The cat sleeps all afternoon"),
        ("alice", "what did bob say about the ferry?")]


def write_group_chat(path: Path) -> Path:
    """SAID as a transcript at `path`, each message named and answered "Noted."."""
    path.write_text(json.dumps({"messages": [
        m for name, text in SAID for m in (
            {"role": "user", "name": name, "content": text},
            {"role": "assistant", "content": "Noted."})]}), encoding="utf-8")
    return path
