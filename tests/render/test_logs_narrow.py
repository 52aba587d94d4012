"""`chatmem logs` on a narrow terminal and with names alike: a number is never shown in
pieces (at 40 columns each turn takes lines instead of a table cut to `1…`), and sessions
whose names start alike (replay --save-as NAME makes NAME-window-k-1 and
NAME-summary-buffer-max_tokens-200) are told apart where their names differ."""

from __future__ import annotations

import io
import re

import pytest
from rich.cells import cell_len
from rich.console import Console

from chatmem.config.options import Cost
from chatmem.render.logs import logs_table, session_cell, shared_starts
from chatmem.store import LogEntry, TurnStatus

REPLAYED = ["中文回放-summary-buffer-max_tokens-200", "中文回放-window-k-1"]


def entry(session: str, number: int, tokens: int, *, failed: bool = False) -> LogEntry:
    return LogEntry(session=session, number=number, created_at="2026-05-01T10:00:00+00:00",
                    status=TurnStatus.FAILED if failed else TurnStatus.OK,
                    input="我们下周去杭州旅行，预算五千元，请帮我安排每天的行程", strategy=(
                        "summary-buffer" if "summary" in session else "window"),
                    params="{}", provider="scripted", model="scripted",
                    prompt_tokens=tokens, reply_tokens=12, superseded_by=None)


def shown(entries: list[LogEntry], width: int, costs: list[Cost | None] | None = None) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(logs_table(entries, costs or [None] * len(entries)))
    return console.export_text()


def test_at_40_columns_each_turn_takes_lines_with_every_number_whole() -> None:
    log = [entry(REPLAYED[0], 11, 166), entry(REPLAYED[1], 9, 1234, failed=True)]
    text = shown(log, 40, [Cost(0.0123), None])
    lines = text.splitlines()
    assert all(cell_len(line.rstrip()) <= 40 for line in lines), text
    # The session and turn number, then the details, each whole, then the question's start.
    assert "中文回放-summary-buffer-max_tokens-200" in text and "#11" in text
    assert "166+12 tokens" in text and "1,234+12 tokens" in text and "$0.01" in text
    assert "failed" in text and "05-01 10:00" in text
    assert "我们下周去杭州旅行" in text
    assert not re.search(r"\d…", text), text  # no number in pieces (the table showed `1…`)


@pytest.mark.parametrize("width", [60, 80, 120])
def test_a_table_still_where_its_narrowest_columns_fit(width: int) -> None:
    text = shown([entry("trip", 3, 166)], width)
    assert text.split()[:3] == ["time", "session", "model"]
    assert "trip #3" in text and " 166+12 " in text


def test_sessions_alike_are_told_apart_at_80_columns() -> None:
    """They read `中文回放-… #11` and `中文回放-s… #9`: not which was which."""
    log = [entry(REPLAYED[0], 11, 192), entry(REPLAYED[1], 9, 93),
           entry(REPLAYED[0], 10, 190), entry(REPLAYED[1], 10, 95)]
    rows = shown(log, 80).splitlines()[2:]
    cells = [row.split("  ")[1].strip() for row in rows]
    assert [("summ" in cell, "window" in cell) for cell in cells] == [
        (True, False), (False, True)] * 2, cells
    assert [cell.rsplit(" ", 1)[1] for cell in cells] == ["#11", "#9", "#10", "#10"]
    assert all(cell_len(row.rstrip()) <= 80 for row in rows)


@pytest.mark.parametrize(("session", "columns", "want"), [
    # The word that differs shown whole where it fits, else its start.
    ("中文回放-window-k-1", 16, "中…window-k-1 #9"),
    ("中文回放-window-k-1", 14, "中…window-… #9"),
    ("中文回放-summary-buffer-max_tokens-200", 14, "中…summary… #9"),
    # Names alike to their last character keep it, after as much of their start as fits.
    ("北京上海旅行计划二零二五", 14, "北京上海…五 #9"),
    # Where the plain cut shows enough of what differs, it stays; too narrow, the start.
    ("中文回放-window-k-1", 20, "中文回放-window-… #9"),
    ("中文回放-window-k-1", 8, "中文… #9"),
])
def test_a_cut_name_shows_where_it_differs_from_another_in_the_log(
        session: str, columns: int, want: str) -> None:
    shared = shared_starts([*REPLAYED, "北京上海旅行计划二零二五", "北京上海旅行计划二零二六"])
    cell = session_cell(session, 9, columns, shared[session])
    assert cell == want and cell_len(cell) <= columns


def test_shared_starts_counts_the_most_a_name_shares_with_any_other() -> None:
    assert shared_starts(["trip", "trips-2", "tea", "工作"]) == {
        "trip": 4, "trips-2": 4, "tea": 1, "工作": 0}
