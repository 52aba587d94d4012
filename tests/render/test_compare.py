"""Replay and eval tables, probe grids and notices in the terminal."""

from __future__ import annotations

import io
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console

from chatmem.evaluation.scoring import ProbeResult, StrategyRun
from chatmem.notices import FactsFailed, MemoryUpdateFailed, SummaryFailed, SummaryUpdated
from chatmem.render.compare import eval_table, probe_table, replay_notices, replay_table
from chatmem.render.layout import Label

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


@pytest.mark.parametrize("width", [40, 60])
def test_a_narrow_replay_table_stacks_instead_of_cutting_columns_or_names(width: int) -> None:
    out = show(replay_table(make_runs(), title="replay of t.jsonl"), width)
    lines = out.splitlines()
    assert all(cell_len(line) <= width for line in lines)
    for label in LABELS:  # every row keeps its name, whole, on a line of its own
        assert label in lines
    # and every value is shown with its name, none cut off
    assert "tokens total 20,400" in out and "summary versions 8" in out and "facts +pins 1" in out


def test_at_80_columns_nine_strategies_replay_as_a_table_without_vertical_rules() -> None:
    out = show(replay_table(make_runs(), title="replay of t.jsonl"), 80)
    lines = out.splitlines()
    assert all(cell_len(line) <= 80 for line in lines) and "…" not in out
    assert "│" not in out and "┃" not in out
    header = next(i for i, line in enumerate(lines) if line.startswith("strategy"))
    assert lines[header].split() == ["strategy", "turns", "total", "mean", "max", "calls",
                                     "versions", "+pins"]
    rows = lines[header + 2:]
    assert rows[0].split() == ["buffer", "2", "20,400", "10,200.0", "20,000", "0", "0", "0"]
    # The one label longer than the room breaks after its `+`, never inside a name.
    at = next(i for i, line in enumerate(rows) if line.startswith("summary-buffer+ "))
    assert rows[at + 1].rstrip() == "retrieval"
    for label in LABELS[:-1]:
        assert any(line.startswith(f"{label} ") for line in rows), label


def test_a_wide_replay_table_stays_a_table() -> None:
    out = show(replay_table(make_runs()), 100)
    assert "┃ strategy                 ┃ turns ┃" in out
    assert "│ summary-buffer+retrieval │     2 │" in out


def test_a_label_with_parameters_wraps_between_words_instead_of_being_cut() -> None:
    labels = ["buffer", "window", "tokens max_tokens=600", "summary-buffer max_tokens=600"]
    out = show(replay_table(make_runs(labels)), 90)
    assert "┃ strategy" in out and "…" not in out
    assert "│ summary-buffer " in out and "│ max_tokens=600 " in out


def test_the_label_column_is_no_wider_than_its_wrapped_labels() -> None:
    """The README's eval at 80 columns: a ruled table, one label on two lines, no slack."""
    labels = ["buffer", "window k=2", "tokens", "summary-buffer", "entity", "retrieval",
              "summary-buffer+retrieval"]
    out = show(eval_table(make_runs(labels)), 80)
    assert "│ summary-buffer+ │" in out and "│ retrieval       │" in out
    assert "│ window k=2      │" in out
    assert all(cell_len(line) <= 80 for line in out.splitlines())


@pytest.mark.parametrize(("label", "width", "lines"), [
    ("summary-buffer+retrieval", 15, ["summary-buffer+", "retrieval"]),
    ("summary-buffer+retrieval", 24, ["summary-buffer+retrieval"]),
    ("summary-buffer+retrieval max_tokens=600,top_k=2", 26,
     ["summary-buffer+retrieval", "max_tokens=600,top_k=2"]),
    ("summary-buffer+retrieval max_tokens=600,top_k=2", 17,
     ["summary-buffer+", "retrieval", "max_tokens=600,", "top_k=2"]),
    ("window+entity k=2", 5, ["window+", "entity", "k=2"]),  # a wider piece stays whole
    ("摘要+检索 预算=六百", 12, ["摘要+检索", "预算=六百"]),  # widths in terminal cells
])
def test_labels_break_between_words_and_after_plus_or_comma(
    label: str, width: int, lines: list[str]
) -> None:
    assert Label(label, width=width).lines == lines
    assert Label(label).lines == [label]
    if width >= Label.narrowest(label):
        assert all(cell_len(line) <= width for line in lines)


@pytest.mark.parametrize("width", [50, 60])
def test_a_narrow_eval_table_keeps_every_column(width: int) -> None:
    out = show(eval_table(make_runs(LABELS[6:])), width)
    assert all(cell_len(line) <= width for line in out.splitlines())
    assert "summary-buffer+retrieval" in out.splitlines()
    assert "context mean 50.0" in out and "model calls 0" in out


def test_an_eval_table_a_few_columns_too_wide_drops_its_vertical_rules() -> None:
    out = show(eval_table(make_runs(LABELS[6:])), 70)
    assert "│" not in out and all(cell_len(line) <= 70 for line in out.splitlines())
    rows = out.splitlines()
    assert rows[next(i for i, r in enumerate(rows) if r.startswith("strategy"))].split() == [
        "strategy", "probes", "recall", "recall", "mean", "max", "calls"]
    assert any(r.split()[:2] == ["summary-buffer+", "2"] for r in rows)
    assert any(r.strip() == "retrieval" for r in rows)


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


def test_too_many_strategies_for_one_probe_grid_split_into_grids_that_fit() -> None:
    labels = [f"{name} k={k}" for k in (2, 3) for name in ("window", "tokens", "entity",
                                                          "summary-buffer", "retrieval",
                                                          "summary")]
    out = show(probe_table(make_runs(labels)), 80)
    lines = out.splitlines()
    assert all(cell_len(line) <= 80 for line in lines)
    assert "A window k=2" in out and "L summary k=3" in out  # one key for all grids
    first, second = (lines.index(line) for line in lines if "per probe, " in line)
    assert lines[first].strip() == "per probe, A–F" and lines[second].strip() == "per probe, G–L"
    for start, end, letters in ((first, second, "ABCDEF"), (second, len(lines), "GHIJKL")):
        grid = lines[start:end]
        header = next(line for line in grid if "probe" in line and "┃" in line)
        assert [h.strip() for h in header.split("┃")[3:-1]] == list(letters)
        assert sum("问题 0：我们的预算是多少？" in line for line in grid) == 1
    assert out.count("✓ every expected id") == 1


def test_cjk_probe_questions_keep_the_grid_aligned() -> None:
    out = show(probe_table(make_runs(LABELS[:4], probes=3)), 60)
    grid = [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]
    assert len({cell_len(line) for line in grid}) == 1
    rules = {tuple(i for i, ch in enumerate(_cells(line)) if ch in {"┃", "│"})
             for line in grid if line[0] in "┃│"}
    assert len(rules) == 1  # every body and header row has its rules in the same cells


def _cells(line: str) -> list[str]:
    """The line as terminal cells: a wide character takes two."""
    return [c for ch in line for c in ([ch, ""] if cell_len(ch) == 2 else [ch])]


MIXED = ["buffer", "window k=2", "摘要+检索 预算=六百",
         "summary-buffer+retrieval max_tokens=600,top_k=2", "实体"]


def grid_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]


def assert_aligned(grid: list[str]) -> None:
    """Every line of a ruled grid is as wide, its rules in the same cells (CJK takes two)."""
    assert len({cell_len(line) for line in grid}) == 1, grid
    rules = {tuple(i for i, ch in enumerate(_cells(line)) if ch in {"┃", "│"})
             for line in grid if line[0] in "┃│"}
    assert len(rules) == 1, grid


@pytest.mark.parametrize("table", [eval_table, replay_table])
def test_at_120_columns_every_label_is_whole_on_one_row_of_a_ruled_table(table) -> None:
    out = show(table(make_runs(MIXED), title="eval of 会话.jsonl"), 120)
    assert all(cell_len(line) <= 120 for line in out.splitlines()) and "…" not in out
    grid = grid_lines(out)
    assert_aligned(grid)
    body = [line for line in grid if line.startswith("│")]
    assert [line.split("│")[1].strip() for line in body] == MIXED  # one line each, in order


def test_at_80_columns_chinese_labels_keep_the_eval_table_aligned() -> None:
    out = show(eval_table(make_runs(MIXED)), 80)
    assert all(cell_len(line) <= 80 for line in out.splitlines()) and "…" not in out
    grid = grid_lines(out)
    assert_aligned(grid)
    labels = [line.split("│")[1].strip() for line in grid if line.startswith("│")]
    assert "摘要+检索 预算=六百" in labels and "实体" in labels
    # The long label wraps where Label breaks it, each piece on its own row of the column.
    at = labels.index("summary-buffer+")
    assert labels[at:at + 4] == ["summary-buffer+", "retrieval", "max_tokens=600,", "top_k=2"]


def test_at_80_columns_the_compact_replay_table_lines_its_columns_up_under_cjk() -> None:
    out = show(replay_table(make_runs(MIXED)), 80)
    lines = out.splitlines()
    assert all(cell_len(line) <= 80 for line in lines) and "│" not in out
    header = next(i for i, line in enumerate(lines) if line.startswith("strategy"))
    rows = [line for line in lines[header + 2:] if re.search(r" \d[\d,.]*$", line.rstrip())]
    assert [r.split()[0] for r in rows] == ["buffer", "window", "摘要+检索", "summary-buffer+",
                                            "实体"]
    ends = {cell_len(r.rstrip()) for r in rows}
    assert len(ends) == 1  # the last column ends in the same cell on every row


@pytest.mark.parametrize("width", [80, 120])
def test_a_probe_grid_with_long_spaced_labels_never_overflows(width: int) -> None:
    out = show(probe_table(make_runs(MIXED)), width)
    assert all(cell_len(line) <= width for line in out.splitlines()), out
    assert_aligned(grid_lines(out))
    assert "D summary-buffer+retrieval max_tokens=600,top_k=2" in out  # lettered, with a key


def test_a_probe_table_too_wide_for_the_terminal_lists_probe_by_probe() -> None:
    out = show(probe_table(make_runs()), 50)
    assert all(cell_len(line) <= 50 for line in out.splitlines())
    assert "after turn 200: 问题 0：我们的预算是多少？" in out
    assert "✓ window" in out or "✗ window" in out or "1/2 window" in out


def test_replay_notices_become_one_line_per_strategy() -> None:
    run = StrategyRun("summary", "summary", {}, summary_versions=3, dropped_anchors=2)
    run.notices = [
        SummaryUpdated(version=1, upto=1, added=4, removed=0, unit="words"),
        SummaryUpdated(version=2, upto=2, added=3, removed=1, unit="words", pinned=("五千元",)),
        SummaryFailed("timeout", (3,)),
        SummaryUpdated(version=3, upto=4, added=3, removed=0, unit="words"),
    ]
    quiet = replay_notices([run])
    assert quiet == [
        "summary: summary is behind (timeout); turn 3 stays in the context unsummarized,"
        " the next turn catches up",
        "summary: 3 summary versions, the last covering turns 1–4; 2 details dropped by the"
        " summarizer, pinned (--verbose lists each version)",
    ]
    loud = replay_notices([run], verbose=True)
    # A replay words notices without the REPL's advice to run /summary.
    assert len(loud) == 4 and not any("/summary" in line for line in loud)
    assert loud[0] == "summary: summary v1 now covers turn 1: +4 −0 words"
    assert loud[1].endswith("; dropped by the summarizer, pinned: 五千元")


def test_a_notice_of_every_turn_is_one_line_saying_how_many_turns() -> None:
    # eval's stderr said "memory update failed" once where --json listed it at 3 turns.
    failing = StrategyRun("mine", "mine", {}, prompt_tokens=[10, 20, 30, 40])
    failing.notices = [MemoryUpdateFailed("存储不可用")] * 3
    once = StrategyRun("once", "once", {}, prompt_tokens=[10, 20])
    once.notices = [MemoryUpdateFailed("存储不可用")]
    assert replay_notices([failing, once]) == [
        "mine: memory update failed, will retry next turn: 存储不可用; 3 times in 4 turns",
        "once: memory update failed, will retry next turn: 存储不可用"]
    assert replay_notices([failing], verbose=True) == replay_notices([failing])


def test_a_summary_or_facts_behind_at_every_turn_is_one_line_naming_every_turn_behind() -> None:
    # Each turn's notice names one more turn behind, so none repeated another: a 30-turn
    # replay with the summarizer gone printed 30 lines.
    run = StrategyRun("s+e", "summary+entity", {}, prompt_tokens=[10, 20, 30, 40])
    run.notices = [notice for turn in range(1, 5) for notice in (
        SummaryFailed("连不上", tuple(range(1, turn + 1))), FactsFailed("连不上", 1, turn))]
    assert replay_notices([run]) == [
        "s+e: summary is behind (连不上); turns 1–4 stay in the context unsummarized, the next"
        " turn catches up; 4 times in 4 turns",
        "s+e: facts not updated (连不上); turns 1–4 will be retried; 4 times in 4 turns"]
    assert len(replay_notices([run], verbose=True)) == 8
    assert run.updates_failed() == 8


def test_replay_notices_say_when_dropped_details_stay_unpinned() -> None:
    run = StrategyRun("s", "summary", {}, summary_versions=1, dropped_anchors=1)
    run.notices = [SummaryUpdated(version=1, upto=2, added=1, removed=1, unit="characters",
                                  unguarded=("ORD-7731",))]
    assert replay_notices([run]) == [
        "s: 1 summary version, the last covering turns 1–2; 1 detail dropped by the"
        " summarizer, not pinned (--verbose lists each version)"]


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=30, max_value=160), st.integers(min_value=1, max_value=9))
def test_tables_fit_any_width_and_keep_every_strategy_name(width: int, count: int) -> None:
    runs = make_runs(LABELS[:count])
    for table in (replay_table(runs), eval_table(runs), probe_table(runs)):
        out = show(table, width)
        assert all(cell_len(line) <= width for line in out.splitlines())
        assert "…" not in out
        for label in LABELS[:count]:  # whole, or broken only where Label breaks it
            assert label in out or all(
                re.search(rf"(^|[ │┃]){re.escape(line.strip())}( |$)", out, re.M)
                for line in Label(label, width=Label.narrowest(label)).lines), label


@pytest.mark.parametrize("width", [46, 50, 62, 80, 120])
def test_the_probe_legend_breaks_between_its_entries_only(width: int) -> None:
    """Wrapped as the table's caption at the table's width, the legend broke mid-phrase:
    "n/m: n of the m expected ids" on one line, "and texts" on the next."""
    out = show(probe_table(make_runs(["window", "buffer"])), width)
    legend = out[out.index("✓ every"):].splitlines()
    keys = ["✓ every expected id and text in the context", "✗ none of them",
            "n/m: n of the m expected ids and texts"]
    for key in keys:
        assert any(key in line for line in legend), (key, legend)
    assert all(cell_len(line) <= width for line in legend)
