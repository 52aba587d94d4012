"""The question and session columns of `chatmem logs`: a long question is cut where a
reader's character ends, never inside a flag, an emoji family or an accented letter; a
long session name is cut before its turn number, which stays."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import chat, run
from rich.cells import cell_len

from chatmem.render.logs import question_start, session_cell
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


def test_a_chinese_question_cut_to_the_column_ends_on_a_character_not_a_space(
        tmp_path: Path) -> None:
    """At 80 columns `logs` showed "我叫小明，我住在杭州，下周去 …": Rich's cut left a space
    where half of 北 would have gone, read as a break between words."""
    db = tmp_path / "h.db"
    said = ["我叫小明，我住在杭州，下周去北京出差。",
            "请帮我订一个酒店，靠近天安门，预算每晚八百元以内。"]
    chat(db, "trip", said, code=0)
    for width in (80, 81, 100):
        rows = run(db, "logs", width=width, code=0).stdout.splitlines()[2:]
        shown = [row.split()[-1] for row in rows]
        assert all(cell_len(row) <= width for row in rows)
        for question, cell in zip(reversed(said), shown, strict=True):
            # A space before … splits the row there: its last word is … alone.
            assert cell == question or (
                len(cell) > 1 and cell.endswith("…") and question.startswith(cell[:-1])), (
                    width, cell)
        if width == 80:
            assert all(cell.endswith("…") for cell in shown)


def test_a_flag_after_flags_and_a_skin_tone_stay_whole() -> None:
    flags = "🇨🇳🇯🇵🇰🇷"
    assert question_start("中" * 56 + flags, 60) == "中" * 56 + "🇨🇳…"
    assert question_start("中" * 58 + "👍🏽 好", 60) == "中" * 58 + "…"


@pytest.mark.parametrize(("session", "columns", "shown"), [
    ("trip", 14, "trip #3"),
    ("北京上海旅行计划二零二六", 14, "北京上海旅… #3"),  # two cells a character
    ("北京上海旅行计划二零二六", 13, "北京上海… #3"),  # never half of one
    ("Renée-Zoë-Ångström", 14, "Renée-Zoë-… #3"),
    ("नमस्ते-हिन्दी-यात्रा", 10, "नमस्ते-हि… #3"),  # the vowel sign stays on its letter
    ("नमस्ते-हिन्दी-यात्रा", 12, "नमस्ते-हिन्दी… #3"),  # the conjunct न्द stays whole
])
def test_a_long_session_name_is_cut_before_its_turn_number(session: str, columns: int,
                                                           shown: str) -> None:
    cell = session_cell(session, 3, columns)
    assert cell == shown and cell_len(cell) <= columns


def test_logs_shows_the_turn_number_of_long_names_and_grows_the_column(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    chat(db, "北京上海旅行计划二零二六", ["你好，我们下周去杭州旅行", "预算五千元"], code=0)
    chat(db, "北京上海旅行计划二零二五", ["hello"], code=0)
    chat(db, "Renée-Zoë-Ångström-Müller", ["안녕하세요"], code=0)
    sessions = ["Renée-Zoë-Ångström-Müller #1", "北京上海旅行计划二零二五 #1",
                "北京上海旅行计划二零二六 #2", "北京上海旅行计划二零二六 #1"]
    roomy = run(db, "logs", width=120, code=0).stdout.splitlines()[2:]
    assert [row[13:13 + len(name)] for row, name in zip(roomy, sessions, strict=True)] == \
        sessions
    for width in (80, 60):
        rows = run(db, "logs", width=width, code=0).stdout.splitlines()[2:]
        assert [row.split()[3] for row in rows] == ["#1", "#1", "#2", "#1"], rows
        assert all(cell_len(row) <= width for row in rows)


@pytest.mark.parametrize(("names", "question"), [
    (["trip", "trip-b", "trip-c"], "plan a trip to Hangzhou " * 200),
    (["杭州", "杭州-乙", "杭州-丙"], "我们下周去杭州旅行，预算五千元。" * 120),
])
def test_sessions_alike_stay_told_apart_when_other_columns_take_the_room(
        tmp_path: Path, names: list[str], question: str) -> None:
    """At 80 columns (and piped) a log with wide tokens, a long model and strategy and a
    cancelled turn's status column showed trip-b and trip-c both as `tri… #3`: the model and
    strategy columns give up room before the names go shorter than tells them apart."""
    from registered import open_session

    from chatmem.config.settings import Settings
    from chatmem.providers.scripted import ScriptedProvider
    from chatmem.store import Store

    db = tmp_path / "h.db"
    for name in names:
        for _ in range(3):
            run(db, "ask", name, question, "--provider", "scripted",
                "-m", "gpt-4o-mini-2024-07-18", "-s", "summary-buffer:max_tokens=20000", code=0)

    def interrupted() -> None:
        raise KeyboardInterrupt

    with Store(db) as store:
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), names[1],
                              strategy="window")
        engine.run_turn("hi", on_reply_end=interrupted)
    for width in (80, 86, 100):
        rows = run(db, "logs", width=width, code=0).stdout.splitlines()
        assert rows[0].split()[:2] == ["time", "session"], rows  # a table, not lines
        cells = [row[13:].split("  ")[0].rsplit(" ", 1) for row in rows[2:]]
        said = [(names[1], 4), *((name, number) for name in reversed(names)
                                 for number in (3, 2, 1))]
        assert [number for _, number in cells] == [f"#{number}" for _, number in said], rows
        shown: dict[str, set[str]] = {name: set() for name in names}
        for (name, _), (cell, _) in zip(said, cells, strict=True):
            # Whole, or cut once (`trip…`, `杭…乙`) keeping its start and its end.
            start, _, end = cell.partition("…")
            assert cell == name or (name.startswith(start) and name.endswith(end)), (cell, rows)
            shown[name].add(cell)
        assert len(set.union(*shown.values())) == sum(map(len, shown.values())), (width, rows)
        assert all(cell_len(row.rstrip()) <= width for row in rows)
