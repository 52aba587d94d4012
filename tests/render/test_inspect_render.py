"""`chatmem inspect` pieces at narrow widths: the budget bar keeps its label whole."""

from __future__ import annotations

import io

import pytest
from rich.cells import cell_len
from rich.console import Console

from chatmem.memory.context import Context, Message, Part
from chatmem.render.inspect import budget_bar, estimate_line


def show(renderable: object, width: int) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_at_60_columns_the_bar_is_cut_short_not_its_label() -> None:
    context = Context((Part("input", (Message("user", "hi", 429),), "input"),), budget=4000)
    out = show(budget_bar(context, approximate=False), 60)
    assert len(out.splitlines()) == 1
    assert out.rstrip().endswith("432 of 4,000 tokens (11%)")


def test_the_bar_counts_the_exact_total_when_the_template_adds_tokens() -> None:
    context = Context((Part("input", (Message("user", "hi", 6),), "input"),), budget=4000,
                      priming=4)
    out = show(budget_bar(context, approximate=False, estimated=31), 100)
    assert "31 of 4,000 tokens (1%)" in out


def test_the_estimate_line_can_say_whose_estimate_it_is() -> None:
    assert estimate_line(124, None, False, label="what-if estimated").plain == (
        "what-if estimated 124 · provider reported –")


def test_summaries_keep_the_strategy_whole_at_80_columns() -> None:
    """`inspect sb --summaries` at 80 columns printed `summary-buffe` over `r`; combinations
    wrap after their `+`, never inside a name, as the other strategy tables do."""
    from chatmem.render.inspect import summaries_view

    rows = [{"version": n, "strategy": strategy, "created_at": "2026-05-01T08:13:00",
             "covered_turn": n + 2, "tokens": 20 + n, "dropped_anchors": [],
             "text": f"第{n}版摘要"}
            for n, strategy in enumerate(["summary-buffer", "summary-buffer+entity"], 1)]
    out = show(summaries_view(rows), 80)
    table = [line for line in out.splitlines() if line.startswith("│ ") and "┃" not in line]
    assert [line.split("│")[2].strip() for line in table][:4] == [
        "summary-buffer", "", "summary-buffer+", "entity"]


SUMMARY_ROWS = [{"version": n, "strategy": "summary-buffer", "created_at": "2026-05-01T08:13:00",
                 "covered_turn": n + 2, "tokens": 1200 + n, "dropped_anchors": ["ORD-881"] * n,
                 "text": f"第{n}版摘要"} for n in (1, 2)]


@pytest.mark.parametrize("width", [40, 50])
def test_summaries_on_a_narrow_terminal_are_cards_with_every_field(width: int) -> None:
    """At 40-50 columns "created", "covers" and "dropped anchors" shrank to nothing or one
    character a line."""
    from chatmem.render.inspect import summaries_view

    out = show(summaries_view(SUMMARY_ROWS), width)
    assert "┃" not in out
    assert max(cell_len(line.rstrip()) for line in out.splitlines()) <= width
    assert "v2 summary-buffer" in out
    details = out.split("v2 summary-buffer\n")[1].split("dropped anchors")[0]
    assert details.split() == ["2026-05-01", "08:13", "turns", "1–4", "1,202", "tokens"]
    assert "dropped anchors: ORD-881, ORD-881" in out
    assert "┃" in show(summaries_view(SUMMARY_ROWS), 100)  # the table where it fits


@pytest.mark.parametrize("width", [40, 60])
def test_the_recall_table_on_a_narrow_terminal_is_a_card_per_candidate(width: int) -> None:
    """At 40 "kept / why" and the message vanished; at 60 the message was two letters."""
    from chatmem.render.inspect import recall_table

    context = Context((), budget=4000, recall=(
        {"id": 7, "turn": 3, "role": "user", "bm25": 1.5, "words": 0.5, "dense": None,
         "fused": 0.8, "tokens": 23, "kept": True, "why": "kept", "route": "words"},))
    out = show(recall_table(context, {7: "my order ORD-7731 arrived broken"}), width)
    lines = [line.rstrip() for line in out.splitlines()]
    assert "turn 3  kept, words" in lines
    assert "  user: my order ORD-7731 arrived broken" in lines
    assert "fused 0.80" in out and "23 tokens" in out
    assert max(cell_len(line) for line in lines) <= width
