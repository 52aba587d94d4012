"""benchmarks/turn_profile.py, the tool that says where a retrieval·hash turn's CPU goes: the
parts it times are named by module and attribute, so a rename must fail here, not there."""

from __future__ import annotations

import importlib
import re

import pytest
from bench_modules import load

turn_profile = load("turn_profile")


@pytest.mark.parametrize("part", turn_profile.PARTS)
def test_each_part_it_times_is_still_there(part: str) -> None:
    module, _, attribute = part.partition(":")
    found: object = importlib.import_module(module)
    for name in attribute.split("."):
        found = getattr(found, name)
    assert callable(found)


@pytest.mark.parametrize(("statements", "expected"), [
    (False, r"ms +\d+\.\d%  RetrievalStrategy\.build"),
    (True, r"x +\d+\.\d rows  SELECT"),
])
def test_a_profile_times_the_parts_or_the_statements_of_real_turns(
        capsys: pytest.CaptureFixture[str], statements: bool, expected: str) -> None:
    build = importlib.import_module("chatmem.memory.retrieval").RetrievalStrategy.build
    turn_profile.profile(100, 2, statements)
    # Put back as it was: a timed wrapper left in place would add calls other tests count.
    assert importlib.import_module("chatmem.memory.retrieval").RetrievalStrategy.build is build
    out = capsys.readouterr().out
    assert out.startswith("100 stored turns, 2 turns: CPU a turn median ")
    assert re.search(expected, out), out


def test_the_words_only_cell_is_profiled_beside_the_hash_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    turn_profile.profile(100, 2, False, "none")
    out = capsys.readouterr().out
    assert out.startswith("100 stored turns (words only), 2 turns: CPU a turn median ")
    # Words alone: the meaning route's parts never run, the words' do.
    assert re.search(r"ms +\d+\.\d%  RecallTables\.word_matches", out), out
    for part in ("StoredRecall.dense", "HashEmbedder.embed", "dense_scores"):
        assert re.search(rf" 0\.000 ms +0\.0%  {re.escape(part)}$", out, re.M), out


turn_tails = load("turn_tails")


def test_tails_tags_each_turn_with_what_it_ran(capsys: pytest.CaptureFixture[str]) -> None:
    build = importlib.import_module("chatmem.memory.retrieval").RetrievalStrategy.build
    scores = importlib.import_module("chatmem.store.sqlite_words").SqliteWords.word_scores
    turn_tails.tails(100, 20)
    # The wrappers are put back (other tests count calls).
    assert importlib.import_module("chatmem.store.sqlite_words").SqliteWords.word_scores \
        is scores
    assert importlib.import_module("chatmem.memory.retrieval").RetrievalStrategy.build is build
    out = capsys.readouterr().out
    assert out.startswith("100 stored turns, 20 turns: CPU ms median ")
    rows = dict(re.findall(r"^  (\w+) +(\d+\.\d\d) +\d+\.\d\d$", out, re.M))
    # Every turn runs statements and one word search at least, and embeds its two new
    # messages (or finds them embedded already) and the question.
    assert float(rows["statements"]) > 10
    assert float(rows["searches"]) >= 1
    assert float(rows["search_rows"]) > 0
