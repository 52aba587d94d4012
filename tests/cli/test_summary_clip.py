"""A summary clipped to fit `summary_max_tokens`, as `chatmem chat` stores it and `inspect`
shows it: the kept part starts where a character a reader sees starts (review of text in
every script, finding 4: it started on an accent cut off its letter)."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from cli_runner import chat, invoke


@pytest.mark.parametrize("limit", [16, 19])
def test_a_clipped_summary_keeps_accents_on_their_letters(tmp_path: Path, limit: int) -> None:
    # Typed decomposed (macOS, some input methods): é is e and U+0301; a clip that starts
    # between them puts the accent on the "…" and stores a different word.
    db = tmp_path / "h.db"
    text = "我们去韩国旅行，" + unicodedata.normalize("NFD", "Renée Zoë àéîõü ") * 6
    chat(db, "trip", [text], "--strategy", f"summary:summary_max_tokens={limit}", code=0)
    shown = json.loads(invoke("inspect", "trip", "--summaries", "--json", "--db", str(db),
                              code=0).stdout)
    summaries = shown if isinstance(shown, list) else shown["summaries"]
    clipped = summaries[-1]["text"].split("\n")[-1]
    assert clipped.startswith("…") and clipped[1:] in text
    assert unicodedata.category(clipped[1])[0] != "M", ascii(clipped)
