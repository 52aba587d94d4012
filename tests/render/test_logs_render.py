"""The question column of `chatmem logs`: a long question is cut where a reader's
character ends, never inside a flag, an emoji family or an accented letter."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import chat, run

from chatmem.render.logs import question_start
from chatmem.repl.completion import one_line

FAMILY = "👨\u200d👩\u200d👧\u200d👦"
CUT = [
    ("我" * 57 + FAMILY + " 全家", "我" * 57 + "…"),
    ("我" * 58 + "🇨🇳 国旗", "我" * 58 + "…"),
    ("b" * 58 + "e\u0301 accent", "b" * 58 + "…"),
]


@pytest.mark.parametrize(("question", "shown"), CUT)
def test_a_question_is_cut_between_the_characters_a_reader_sees(question: str,
                                                                shown: str) -> None:
    assert question_start(question) == shown
    assert one_line(question) == shown


def test_logs_shows_each_cut_question_without_half_a_character(tmp_path: Path) -> None:
    # Latin, one cell a letter: the column holds all 60 and only chatmem's cut applies.
    db = tmp_path / "h.db"
    chat(db, "cut", ["a" * 57 + FAMILY + " x", "a" * 58 + "🇨🇳 flag", "b" * 58 + "e\u0301 accent"],
         code=0)
    rows = run(db, "logs", width=200, code=0).stdout.splitlines()[2:]
    assert [row.split()[-1] for row in rows] == ["b" * 58 + "…", "a" * 58 + "…", "a" * 57 + "…"]


def test_a_flag_after_flags_and_a_skin_tone_stay_whole() -> None:
    flags = "🇨🇳🇯🇵🇰🇷"
    assert question_start("中" * 56 + flags, 60) == "中" * 56 + "🇨🇳…"
    assert question_start("中" * 58 + "👍🏽 好", 60) == "中" * 58 + "…"
