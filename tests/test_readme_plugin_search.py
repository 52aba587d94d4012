"""The README's example of a strategy recalling through `request.search` (`echo`) is one a
plugin author can copy: it keeps the strategy contract alone and combined, and recalls an
earlier turn by its Chinese or English words with no other search of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run
from plugin_site import Install, readme_files
from test_contract import KEEPS_STATE, run_conversation

from chatmem.testing import OPENED_BY_THE_ASSISTANT

INPUTS = ["我们五月去杭州旅行，预算五千元。", "My dentist is Dr Okafor.", "Pasta tonight.",
          "Tea or coffee?", "杭州的预算是多少？", "who is my dentist?"]


@pytest.fixture
def echo(installed: Install) -> None:
    installed("chatmem-echo", "chatmem_echo", readme_files()["chatmem_echo.py"])


@pytest.mark.parametrize("name", ["echo:k=1", "echo+window"])
def test_the_readme_echo_strategy_keeps_the_contract(
        echo: None, tmp_path: Path, name: str) -> None:
    run_conversation(name, {**KEEPS_STATE, "inputs": INPUTS}, tmp_path, embedder="hash")
    run_conversation(name, OPENED_BY_THE_ASSISTANT, tmp_path / "greeting", embedder="hash")


@pytest.mark.parametrize("embedder", ["hash", "none"])
def test_the_readme_echo_strategy_recalls_by_words_and_meaning(
        echo: None, tmp_path: Path, embedder: str) -> None:
    db = tmp_path / "h.db"
    config = tmp_path / "config.toml"
    config.write_text(f'[embeddings]\nprovider = "{embedder}"\n', encoding="utf-8")
    env = {"CHATMEM_CONFIG": str(config)}
    run(db, "chat", "s", "-s", "echo:k=1,top=1", "--provider", "scripted",
        input="\n".join(INPUTS[:5]) + "\n", env=env, code=0)
    shown = json.loads(run(db, "inspect", "s", "--json", env=env, code=0).stdout)
    parts = {p["kind"]: p for p in shown["context"]["parts"]}
    assert parts["recalled"]["reason"] == "echo: turns 1"
    assert parts["recalled"]["messages"][0]["content"] == INPUTS[0]
