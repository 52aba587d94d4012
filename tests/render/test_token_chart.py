"""The terminal chart of prompt tokens per turn that replay and eval print."""

from __future__ import annotations

import pytest

from chatmem.render.token_chart import MARKERS, OVERLAP, marker, token_chart


def rows(chart: str) -> list[str]:
    return [line.split("┤", 1)[1] for line in chart.splitlines() if "┤" in line]


def turn_rows(chart: str) -> list[str]:
    """`rows` with a column per turn: a short chart spreads its turns (blank columns between)."""
    grid = rows(chart)
    kept = [at for at in range(len(grid[0])) if any(row[at] != " " for row in grid)]
    return ["".join(row[at] for at in kept) for row in grid]


def test_chart_places_each_turn_by_its_value() -> None:
    chart = token_chart({"a": [0, 50, 100], "b": [100, 100, 100]}, height=3).plain
    grid = turn_rows(chart)
    assert grid[0] == f"{MARKERS[1]}{MARKERS[1]}{OVERLAP[0]}"  # b at the top; a joins it
    assert grid[1] == f" {MARKERS[0]} "
    assert grid[2] == f"{MARKERS[0]}  "
    assert chart.splitlines()[1].startswith("100 ┤") and "0 ┤" in chart
    assert f"{MARKERS[0]} a" in chart and f"{MARKERS[1]} b" in chart and "turn 3" in chart


def test_the_legend_keys_the_overlap_marker_only_when_the_chart_shows_it() -> None:
    """`replay trip -s window:k=1`: one strategy, and the legend read `● window k=1  ✱ several`
    under a chart with no ✱ in it."""
    alone = token_chart({"window k=1": [81, 116, 53]}, height=5).plain
    assert OVERLAP[0] not in alone and "several" not in alone
    apart = token_chart({"a": [10, 20], "b": [90, 100]}, height=5).plain
    assert OVERLAP[0] not in apart and "several" not in apart
    together = token_chart({"a": [10, 100], "b": [10, 50]}, height=5).plain
    assert turn_rows(together)[-1].startswith(OVERLAP[0]) and f"{OVERLAP[0]} several" in together


def test_long_series_are_bucketed_to_the_width() -> None:
    values = list(range(1, 201))
    grid = rows(token_chart({"x": values}, width=50, height=5).plain)
    assert all(len(r) == 50 for r in grid)
    # The last column shows the last turn: the maximum, on the top row.
    assert grid[0].endswith(MARKERS[0]) and grid[-1][0] == MARKERS[0]


def test_empty_chart_says_so() -> None:
    assert "(no turns)" in token_chart({"x": []}).plain



def test_every_series_gets_its_own_marker_without_colour() -> None:
    labels = [f"s{i}" for i in range(20)]
    markers = [marker(i) for i in range(20)]
    assert len(set(markers)) == 20 and OVERLAP[0] not in markers
    chart = token_chart({label: [i + 1] for i, label in enumerate(labels)}, width=60).plain
    legend = chart.split("turn 1", 1)[1]
    for label, shape in zip(labels, markers, strict=True):
        assert f"{shape} {label}" in legend  # a marker is never split from its name


def test_a_short_charts_turn_labels_are_apart() -> None:
    for turns, axis in ((1, "turn 1"), (2, "turn 1 turn 2"), (3, "turn 1 turn 3")):
        chart = token_chart({"buffer": list(range(10, 10 * turns + 1, 10))}).plain
        assert " ".join(chart.splitlines()[-2].split()) == axis, chart


@pytest.mark.parametrize("turns", [2, 4, 6])
def test_a_short_charts_turn_labels_end_under_their_turns(turns: int) -> None:
    """One column a turn, a 4-turn chart drew "turn 1" under the markers of turns 1 to 4
    and "turn 4" past the chart's end, under none: a few turns now take several columns
    each, and each label ends under its turn's markers."""
    chart = token_chart({"window": [10 * (t + 1) for t in range(turns)],
                         "buffer": [20 * (t + 1) for t in range(turns)]}, width=60).plain
    lines = chart.splitlines()
    axis = lines[-2]
    plotted = [line for line in lines[1:-3] if "┤" in line]
    marked = sorted({at for line in plotted for at, c in enumerate(line)
                     if at > line.index("┤") and c != " "})
    assert len(marked) == turns, chart
    assert axis.index("turn 1") + len("turn 1") - 1 == marked[0], chart
    assert axis.rstrip().endswith(f"turn {turns}") and len(axis.rstrip()) - 1 == marked[-1]


@pytest.mark.parametrize(("turns", "width"), [(3, 18), (3, 10), (4, 24), (13, 60), (30, 12)])
def test_a_chart_too_narrow_for_a_label_at_each_end_names_the_span(turns: int,
                                                                   width: int) -> None:
    """A 3-turn chart under 21 columns drew one column a turn and "turn 1 turn 3" past its
    end, "turn 3" under no marker: one label names the turns instead, within the chart."""
    chart = token_chart({"window": [10 * (t + 1) for t in range(turns)]}, width=width).plain
    axis, rule = chart.splitlines()[-2], chart.splitlines()[-3]
    assert axis.strip() == f"turns 1–{turns}"
    assert len(rule) == len(rule.split("└")[0]) + 1 + min(width, turns)
