"""An embedder whose vectors change size under the same key (a plugin's new version): the
vectors of the old size are embedded again, said once in one line, on every history kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run
from conftest import History
from plugin_site import Install

GRAMS = '''
import os
import zlib

import numpy as np


class Grams:
    key = "grams:bigram"  # the same key whatever the size: what README asks not to do

    def __init__(self):
        self.dimensions = int(os.environ["GRAMS_DIMENSIONS"])

    def embed(self, texts, *, query=False):
        rows = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for a, b in zip(text, text[1:]):
                rows[row, zlib.crc32((a + b).encode()) % self.dimensions] += 1
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms == 0, 1, norms)


def register(plugins):
    plugins.add_embedder("grams", lambda settings: Grams())
'''
SAID = ("embedder grams (chatmemtest-grams 2.0.0) now gives 96 dimensions; 4 stored vectors"
        " had 64: re-embedding")


@pytest.fixture
def grams(installed: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The config naming `grams`, installed; GRAMS_DIMENSIONS 64 for now."""
    installed("chatmemtest-grams", "chatmemtest_grams", GRAMS, name="grams", version="2.0.0")
    monkeypatch.setenv("GRAMS_DIMENSIONS", "64")
    config = tmp_path / "grams.toml"
    config.write_text('[embeddings]\nprovider = "grams"\n', encoding="utf-8")
    return config


def chatted(history: History, config: Path) -> None:
    """Two turns, every message embedded at 64 (`index` finishes what the chat left)."""
    run(history.location, "chat", "s", "-s", "retrieval:mode=dense", "--provider", "scripted",
        "--config", str(config), input="my cat is called Mimi\n我们五月去杭州旅行\n", code=0)
    run(history.location, "index", "s", "--config", str(config), code=0)
    assert sizes(history) == {64: 4}


def sizes(history: History) -> dict[int, int]:
    with history.open() as store:
        return dict(store.db.execute(
            "SELECT dimensions, count(*) FROM message_vectors GROUP BY dimensions").fetchall())


def recalled_by_meaning(history: History, config: Path, question: str) -> list[str]:
    shown = run(history.location, "inspect", "s", "--next", question, "--json",
                "--config", str(config), code=0)
    return [r["text"] for r in json.loads(shown.stdout)["context"]["recall"]
            if r["route"] == "meaning"]


def test_index_embeds_again_the_vectors_of_the_old_size_and_says_so_once(
    history: History, grams: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chatted(history, grams)
    monkeypatch.setenv("GRAMS_DIMENSIONS", "96")
    # Stored at 64, they cannot rank a 96-dimension query: recall by meaning finds nothing.
    assert recalled_by_meaning(history, grams, "cat") == []
    done = run(history.location, "index", "s", "--config", str(grams), code=0)
    assert done.stderr.strip() == SAID
    assert "embedded 4 messages with grams:bigram" in done.stdout
    assert sizes(history) == {96: 4}
    again = run(history.location, "index", "s", "--config", str(grams), code=0)
    assert again.stderr == ""
    assert "every message already has a vector for grams:bigram" in again.stdout
    assert any("my cat is called Mimi" in t for t in recalled_by_meaning(history, grams, "cat"))


def test_a_chat_after_the_change_embeds_again_says_so_once_and_index_finishes(
    history: History, grams: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chatted(history, grams)
    monkeypatch.setenv("GRAMS_DIMENSIONS", "96")
    # The new turns' vectors are 96 wide, beside the 64-wide ones of the turns before.
    chat = run(history.location, "chat", "s", "--provider", "scripted", "--config", str(grams),
               input="what about the cat?\nand 杭州?\n", code=0)
    assert chat.stderr.count("now gives 96 dimensions") == 1
    assert SAID in chat.stderr
    assert "after an error" not in chat.stderr and "ValueError" not in chat.stderr
    assert "Traceback" not in chat.output
    done = run(history.location, "index", "s", "--config", str(grams), "--json", code=0)
    assert "Traceback" not in done.output
    assert sizes(history) == {96: 8}
    assert any("my cat is called Mimi" in t for t in recalled_by_meaning(history, grams, "cat"))
    # Back at 64 (a downgrade), the same: every vector is embedded again.
    monkeypatch.setenv("GRAMS_DIMENSIONS", "64")
    back = run(history.location, "index", "s", "--config", str(grams), code=0)
    assert back.stderr.strip() == ("embedder grams (chatmemtest-grams 2.0.0) now gives 64"
                                   " dimensions; 8 stored vectors had 96: re-embedding")
    assert sizes(history) == {64: 8}

