"""The terminal chart and the HTML report of replay/eval."""

from __future__ import annotations

from chatmem.render.compare import MARKERS, OVERLAP, html_report, token_chart


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


def test_html_report_is_self_contained() -> None:
    html = html_report("report", token_chart({"窗口": [1, 2]}))
    assert "<!DOCTYPE html>" in html and "窗口" in html and "<script" not in html
