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


def test_the_readme_echo_strategy_keeps_the_contract_on_postgres(
        echo: None, tmp_path: Path, pg_url: str) -> None:
    run_conversation("echo:k=1", {**KEEPS_STATE, "inputs": INPUTS}, tmp_path, embedder="hash",
                     location=pg_url)


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


LONE_REPLY = '''
from chatmem.memory.assembly import assemble
from chatmem.memory.base import BaseStrategy
from chatmem.memory.context import Part
from chatmem.memory.reasons import TextReason


class LoneReply(BaseStrategy):
    name = "lone-reply"
    description = "recalls the best matching message alone, a reply too"

    def build(self, request):
        found = request.search.words(request.query, limit=1)
        parts = [Part("recalled", (found[0].message,), TextReason("best"))] if found else []
        return assemble(request, parts)


def register(plugins):
    plugins.add_strategy(LoneReply)
'''


def test_a_recalled_reply_without_its_question_is_told_to_recall_whole_turns(
        installed: Install, tmp_path: Path) -> None:
    """check_strategy's advice was drop_leading_assistant(), which takes turns, for a
    recalled message found alone (plugin71's first `echo`)."""
    installed("chatmem-lone", "chatmem_lone", LONE_REPLY)
    # Only the scripted reply ("echo #1: Pasta tonight.") holds the word asked.
    convo = {**KEEPS_STATE, "inputs": ["Pasta tonight.", "echo?"]}
    with pytest.raises(AssertionError, match=r"in the 'recalled' part\), not on a user message"
                       r".*recall whole turns \(request.history.turns\(n, n\)\)"):
        run_conversation("lone-reply", convo, tmp_path, embedder="hash")
