"""The terminal chart and the HTML report of replay/eval."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console

from chatmem.render.compare import (
    MARKERS,
    OVERLAP,
    eval_table,
    marker,
    probe_table,
    replay_notices,
    replay_table,
    token_chart,
)
from chatmem.replay import without_repl_hints
from chatmem.scoring import ProbeResult, StrategyRun


def rows(chart: str) -> list[str]:
    return [line.split("┤", 1)[1] for line in chart.splitlines() if "┤" in line]


def test_chart_places_each_turn_by_its_value() -> None:
    chart = token_chart({"a": [0, 50, 100], "b": [100, 100, 100]}, height=3).plain
    grid = rows(chart)
    assert grid[0] == f"{MARKERS[1]}{MARKERS[1]}{OVERLAP[0]}"  # b at the top; a joins it
    assert grid[1] == f" {MARKERS[0]} "
    assert grid[2] == f"{MARKERS[0]}  "
    assert chart.splitlines()[1].startswith("100 ┤") and "0 ┤" in chart
    assert f"{MARKERS[0]} a" in chart and f"{MARKERS[1]} b" in chart and "turn 3" in chart


def test_long_series_are_bucketed_to_the_width() -> None:
    values = list(range(1, 201))
    grid = rows(token_chart({"x": values}, width=50, height=5).plain)
    assert all(len(r) == 50 for r in grid)
    # The last column shows the last turn: the maximum, on the top row.
    assert grid[0].endswith(MARKERS[0]) and grid[-1][0] == MARKERS[0]


def test_empty_chart_says_so() -> None:
    assert "(no turns)" in token_chart({"x": []}).plain


# -- narrow terminals, many strategies ----------------------------------------------------

LABELS = ["buffer", "window", "tokens", "summary", "summary-buffer", "entity", "retrieval",
          "window+entity", "summary-buffer+retrieval"]


def make_runs(labels: list[str] = LABELS, probes: int = 2) -> list[StrategyRun]:
    runs = []
    for i, label in enumerate(labels):
        run = StrategyRun(label, label, {}, prompt_tokens=[100 * i + 20_000, 400 + i],
                          summary_versions=i, facts=i % 2)
        for p in range(probes):
            found = ["ORD-7731"] if (i + p) % 3 else []
            run.probes.append(ProbeResult(f"问题 {p}：我们的预算是多少？", 200, ["ORD-7731"],
                                          found, ["五千元"], ["五千元"] if i % 2 else [], 50))
        runs.append(run)
    return runs


def show(renderable: object, width: int) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize("width", [40, 60, 80])
def test_a_narrow_replay_table_stacks_instead_of_cutting_columns_or_names(width: int) -> None:
    out = show(replay_table(make_runs(), title="replay of t.jsonl"), width)
    lines = out.splitlines()
    assert all(cell_len(line) <= width for line in lines)
    for label in LABELS:  # every row keeps its name, whole, on a line of its own
        assert label in lines
    # and every value is shown with its name, none cut off
    assert "tokens total 20,400" in out and "summary versions 8" in out and "facts +pins 1" in out


def test_a_wide_replay_table_stays_a_table() -> None:
    out = show(replay_table(make_runs()), 100)
    assert "┃ strategy                 ┃ turns ┃" in out
    assert "│ summary-buffer+retrieval │     2 │" in out


def test_a_label_with_parameters_wraps_between_words_instead_of_being_cut() -> None:
    labels = ["buffer", "window", "tokens max_tokens=600", "summary-buffer max_tokens=600"]
    out = show(replay_table(make_runs(labels)), 90)
    assert "┃ strategy" in out and "…" not in out
    assert "│ summary-buffer " in out and "│ max_tokens=600 " in out


@pytest.mark.parametrize("width", [50, 70])
def test_a_narrow_eval_table_keeps_every_column(width: int) -> None:
    out = show(eval_table(make_runs(LABELS[6:])), width)
    assert all(cell_len(line) <= width for line in out.splitlines())
    assert "summary-buffer+retrieval" in out.splitlines()
    assert "context mean 50.0" in out and "model calls 0" in out


def test_the_probe_question_shows_with_nine_strategies() -> None:
    out = show(probe_table(make_runs()), 120)
    assert "问题 0：我们的预算是多少？" in out and "问题 1：我们的预算是多少？" in out
    # The columns are lettered, with a key naming each strategy.
    assert "A buffer" in out and "I summary-buffer+retrieval" in out
    assert "1/2" in out  # a partial find is found/expected


def test_a_few_strategies_keep_named_probe_columns() -> None:
    out = show(probe_table(make_runs(LABELS[:2])), 80)
    header = next(line for line in out.splitlines() if "probe" in line and "┃" in line)
    assert "buffer" in header and "window" in header
    assert "A buffer" not in out


def test_a_probe_table_too_wide_for_the_terminal_lists_probe_by_probe() -> None:
    out = show(probe_table(make_runs()), 50)
    assert all(cell_len(line) <= 50 for line in out.splitlines())
    assert "after turn 200: 问题 0：我们的预算是多少？" in out
    assert "✓ window" in out or "✗ window" in out or "1/2 window" in out


def test_every_series_gets_its_own_marker_without_colour() -> None:
    labels = [f"s{i}" for i in range(20)]
    markers = [marker(i) for i in range(20)]
    assert len(set(markers)) == 20 and OVERLAP[0] not in markers
    chart = token_chart({label: [i + 1] for i, label in enumerate(labels)}, width=60).plain
    legend = chart.split("turn 1", 1)[1]
    for label, shape in zip(labels, markers, strict=True):
        assert f"{shape} {label}" in legend  # a marker is never split from its name


def test_replay_notices_become_one_line_per_strategy() -> None:
    run = StrategyRun("summary", "summary", {}, summary_versions=3, dropped_anchors=2)
    # As a replay records them: the REPL's advice to run /summary is taken out.
    run.notices = without_repl_hints([
        "summary v1 now covers turn 1: +4 −0 words; /summary shows the diff",
        "summary v2 now covers turns 1–2: +3 −1 words; /summary shows the diff;"
        " dropped by the summarizer, pinned: 五千元",
        "summary is behind (timeout); turn 3 stays in the context unsummarized,"
        " the next turn catches up",
        "summary v3 now covers turns 1–4: +3 −0 words; /summary shows the diff",
    ])
    quiet = replay_notices([run])
    assert quiet == [
        "summary: summary is behind (timeout); turn 3 stays in the context unsummarized,"
        " the next turn catches up",
        "summary: 3 summary versions, the last covering turns 1–4; 2 details dropped by the"
        " summarizer, pinned (--verbose lists each version)",
    ]
    loud = replay_notices([run], verbose=True)
    assert len(loud) == 4 and not any("/summary" in line for line in loud)
    assert loud[0] == "summary: summary v1 now covers turn 1: +4 −0 words"


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=30, max_value=160), st.integers(min_value=1, max_value=9))
def test_tables_fit_any_width_and_keep_every_strategy_name(width: int, count: int) -> None:
    runs = make_runs(LABELS[:count])
    for table in (replay_table(runs), eval_table(runs), probe_table(runs)):
        out = show(table, width)
        assert all(cell_len(line) <= width for line in out.splitlines())
        for label in LABELS[:count]:
            assert label in out
