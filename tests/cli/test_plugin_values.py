"""Values a plugin hands chatmem that look right but are not (a numpy integer for a size, a
count that is text, recall rows of its own): each is taken when it can be (a numpy integer
is an int) and otherwise refused or ignored in one line naming the plugin, never a
traceback, a hang, or a stored turn lost.

Companion of test_plugin_returns.py (values of the wrong kind altogether)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import invoke
from plugin_site import Install

from chatmem.store import Store

VALUES = '''
import os

import numpy as np

from chatmem.memory.assembly import assemble
from chatmem.memory.base import BaseStrategy
from chatmem.memory.context import Part
from chatmem.memory.reasons import TextReason
from chatmem.providers.base import Usage
from chatmem.providers.scripted import ScriptedProvider


class Letters:
    """The README's letters embedder, its key and size as $ODD says."""

    def __init__(self):
        odd = os.environ.get("ODD", "")
        self.key = {"key-int": 26, "key-bare": "letters"}.get(odd, "letters:26")
        self.dimensions = {"numpy": np.int64(26), "text": "26", "float": 26.0,
                           "bool": True}.get(odd, 26)

    def embed(self, texts, *, query=False):
        rows = np.zeros((len(texts), 26), dtype=np.float32)
        for row, text in enumerate(texts):
            for letter in text.lower():
                if "a" <= letter <= "z":
                    rows[row, ord(letter) - ord("a")] += 1
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)


class Worded:
    """A reply whose usage is text, not a Usage."""

    def __init__(self):
        self.usage, self.rendered_prompt = "9 tokens", None

    def __iter__(self):
        yield "好的 fine"

    def close(self):
        pass


class Counted(ScriptedProvider):
    """Reports usage as $USAGE says."""

    def stream(self, messages):
        if os.environ["USAGE"] == "words":
            return Worded()
        reply = super().stream(messages)
        prompt, completion = {"numpy": (np.int64(9), np.int64(3)), "text": ("9", "3"),
                              "float": (9.0, 3.0), "negative": (-1, -1),
                              "bool": (True, 3)}[os.environ["USAGE"]]
        reply.usage = Usage(prompt_tokens=prompt, completion_tokens=completion)
        return reply


class Picker(BaseStrategy):
    """Sends every earlier turn as recalled, with recall rows as $ROWS says."""

    name = "picker"
    description = "every earlier turn, recalled"

    def build(self, request):
        turns = request.history.turns(1, request.history.turn_count())
        messages = tuple(m for t in turns for m in t.messages)
        notes = [{"id": m.id, "turn": m.turn, "why": "shares a word"} for m in messages]
        rows = {"own": notes, "set": [{**n, "why": {"shares"}} for n in notes]}.get(
            os.environ.get("ROWS", ""), [])
        parts = [Part("recalled", messages, TextReason("every turn"))] if messages else []
        return assemble(request, parts, budget=self.budget(request), recall=rows)


def register(plugins):
    plugins.add_embedder("letters", lambda settings: Letters())
    plugins.add_provider("counted", lambda settings: Counted())
    plugins.add_strategy(Picker)
'''
BY = "(plugin values (chatmem-values 0.1.0))"


@pytest.fixture
def values(installed: Install) -> None:
    installed("chatmem-values", "chatmem_values", VALUES, name="values")


@pytest.fixture
def letters(tmp_path: Path) -> str:
    config = tmp_path / "letters.toml"
    config.write_text('[embeddings]\nprovider = "letters"\n', encoding="utf-8")
    return str(config)


def turns_stored(db: str, session: str) -> int:
    with Store(db) as store:
        found = store.sessions.find_session(session)
        return 0 if found is None else store.history.turn_count(found.id)


@pytest.mark.usefixtures("values")
def test_an_embedder_whose_size_is_a_numpy_integer_is_indexed_once_and_recalls(
        tmp_path: Path, letters: str) -> None:
    """Its size was bound to SQL as a BLOB no stored size equals: `index` embedded the same
    messages again forever at full CPU, and every ask saw them as having no vector."""
    db = str(tmp_path / "h.db")
    odd = {"ODD": "numpy"}
    invoke("ask", "e", "-s", "retrieval", "cats are great pets", "--provider", "scripted",
           "--db", db, "--config", letters, env=odd, code=0)
    for _ in range(2):  # the ask's own indexing may have finished first: then nothing left
        indexed = invoke("index", "e", "--db", db, "--config", letters, env=odd, code=0)
        assert indexed.stderr == ""
    assert "every message already has a vector for letters:26" in indexed.stdout
    shown = json.loads(invoke("inspect", "e", "--next", "kittens and pets", "--json",
                              "--strategy", "retrieval:recent=0", "--db", db,
                              "--config", letters, env=odd, code=0).stdout)
    assert any(r["dense"] is not None for r in shown["context"]["recall"])


@pytest.mark.usefixtures("values")
@pytest.mark.parametrize(("odd", "wrong"), [
    ("text", "its dimensions is '26', not a whole number of 0 or more"),
    ("float", "its dimensions is 26.0, not a whole number of 0 or more"),
    ("bool", "its dimensions is True, not a whole number of 0 or more"),
    ("key-int", "its key is 26, not text of the form provider:model"),
    ("key-bare", "its key is 'letters', not text of the form provider:model"),
])
def test_an_embedder_whose_size_or_key_is_wrong_is_refused_in_one_line_before_a_turn(
        tmp_path: Path, letters: str, odd: str, wrong: str) -> None:
    db = str(tmp_path / "h.db")
    line = f"error: embedder 'letters' could not start: {wrong} {BY}\n"
    asked = invoke("ask", "e", "-s", "retrieval", "cats are great pets", "--provider",
                   "scripted", "--db", db, "--config", letters, env={"ODD": odd}, code=1)
    assert (asked.stdout, asked.stderr) == ("", line)
    # Nothing was asked: no turn stored, and no paid reply lost.
    assert turns_stored(db, "e") == 0
    indexed = invoke("index", "--db", db, "--config", letters, env={"ODD": odd}, code=1)
    assert indexed.stderr == line


@pytest.mark.usefixtures("values")
@pytest.mark.parametrize(("usage", "shown"), [
    ("text", "'9'"), ("float", "9.0"), ("negative", "-1"), ("bool", "True")])
def test_a_providers_usage_that_is_no_count_is_ignored_in_one_line_and_the_chat_goes_on(
        tmp_path: Path, usage: str, shown: str) -> None:
    """Text counts broke the running total after the turn was stored (a traceback, the REPL
    ended, its next line lost); float and negative ones were shown and stored."""
    db = str(tmp_path / "h.db")
    chatted = invoke("chat", "u", "--provider", "counted", "--db", db,
                     input="hi 你好\nhello again\n", env={"USAGE": usage}, code=0)
    assert "Traceback" not in chatted.output
    line = (f"token counts of provider 'counted' ignored: its usage's prompt_tokens is {shown},"
            f" not a count of 0 or more; the turn is stored without them {BY}")
    assert chatted.stderr.count(line) == 2
    assert "provider reported" not in chatted.stderr
    assert turns_stored(db, "u") == 2
    asked = invoke("ask", "u", "and again", "--provider", "counted", "--db", db, "--json",
                   env={"USAGE": usage}, code=0)
    assert line in asked.stderr
    turn = json.loads(invoke("inspect", "u", "--json", "--db", db, code=0).stdout)["turn"]
    assert (turn["prompt_tokens"], turn["completion_tokens"]) == (None, None)


@pytest.mark.usefixtures("values")
def test_a_providers_usage_that_is_no_usage_is_ignored_in_one_line(tmp_path: Path) -> None:
    """plugin64: a usage of text was ignored without a word, where README promises one."""
    db = str(tmp_path / "h.db")
    asked = invoke("ask", "u", "hi 你好", "--provider", "counted", "--db", db,
                   env={"USAGE": "words"}, code=0)
    assert asked.stdout == "好的 fine\n"
    assert (f"token counts of provider 'counted' ignored: its reply's usage is str, not a "
            f"Usage; the turn is stored without them {BY}") in asked.stderr
    assert turns_stored(db, "u") == 1
    turn = json.loads(invoke("inspect", "u", "--json", "--db", db, code=0).stdout)["turn"]
    assert (turn["prompt_tokens"], turn["completion_tokens"]) == (None, None)


@pytest.mark.usefixtures("values")
def test_a_providers_numpy_counts_are_counts(tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    asked = invoke("ask", "u", "hi 你好", "--provider", "counted", "--db", db,
                   env={"USAGE": "numpy"}, code=0)
    assert "ignored" not in asked.stderr and "(provider reported 9)" in asked.stderr
    turn = json.loads(invoke("inspect", "u", "--json", "--db", db, code=0).stdout)["turn"]
    # (the scripted provider it builds on counts its reply itself once it ends)
    assert turn["prompt_tokens"] == 9 and type(turn["completion_tokens"]) is int


@pytest.mark.usefixtures("values")
@pytest.mark.parametrize(("rows", "wrong"), [
    ("set", "a recall row without role, bm25, words, dense, fused, tokens, kept"),
    ("own", "a recall row without role, bm25, words, dense, fused, tokens, kept"),
])
def test_recall_rows_a_plugin_strategy_makes_up_are_refused_before_the_model_is_asked(
        tmp_path: Path, rows: str, wrong: str) -> None:
    """`set`: the reply was shown, then a TypeError (a set is not JSON) and the paid turn
    was not stored; `own`: stored, then `inspect` crashed on a missing key."""
    db = str(tmp_path / "h.db")
    invoke("ask", "pk", "-s", "picker", "Miso likes milk 米索", "--provider", "scripted",
           "--db", db, code=0)
    asked = invoke("ask", "pk", "-s", "picker", "Does Miso like milk?", "--provider",
                   "scripted", "--db", db, env={"ROWS": rows}, code=1)
    assert asked.stdout == ""
    assert asked.stderr.startswith(f"error: strategy 'picker' failed: its build returned {wrong}")
    assert asked.stderr.endswith(f" {BY}\n") and asked.stderr.count("\n") == 1
    assert turns_stored(db, "pk") == 1


def test_recall_rows_stored_without_the_usual_keys_are_shown_by_inspect(
        tmp_path: Path) -> None:
    """A plugin's rows an earlier chatmem stored unchecked (id, turn, why only; an id that
    is a list): inspect shows the table, with dashes where a score is missing."""
    import sqlite3

    db = str(tmp_path / "h.db")
    invoke("chat", "r", "-s", "retrieval", "--provider", "scripted", "--db", db,
           input="my cat Miso likes milk\n我们五月去杭州旅行\n", code=0)
    with sqlite3.connect(db) as connection:
        stored, = connection.execute("SELECT context FROM turns WHERE number = 2").fetchone()
        context = json.loads(stored)
        context["recall"] = [{"id": 1, "turn": 1, "why": "shares a word"},
                             {"id": [1], "why": "top_k"}]
        connection.execute("UPDATE turns SET context = ? WHERE number = 2",
                           [json.dumps(context)])
    connection.close()
    shown = invoke("inspect", "r", "--db", db, env={"COLUMNS": "100"}, code=0)
    assert "recall: candidates ranked" in shown.stdout and "shares a word" in shown.stdout
    assert "top_k=? reached" in shown.stdout
    as_json = json.loads(invoke("inspect", "r", "--json", "--db", db, code=0).stdout)
    assert [r.get("text") for r in as_json["context"]["recall"]] == [
        "my cat Miso likes milk", None]
