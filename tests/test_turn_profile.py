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
