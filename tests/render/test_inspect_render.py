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


def recalling_context() -> Context:
    from chatmem.memory.reasons import NewestTurns, NewInput, Recalled, RecallMethod

    recalled = Recalled(RecallMethod("hybrid", 0.5, 0.5, 0.3, 0.7), 600, 4, 31, 3, 0.41,
                        0.88, left=2, by_words=3, by_meaning=1)
    return Context((
        Part("recalled", (Message("user", "我的订单", 40),) * 4, recalled),
        Part("history", (Message("user", "x", 60),) * 2,
             NewestTurns("window", "k", 2, (3, 4), (1, 2))),
        Part("input", (Message("user", "hi", 9),), NewInput())), budget=4000, priming=3)


@pytest.mark.parametrize("width", [40, 50])
def test_the_parts_on_a_narrow_terminal_are_a_card_per_part(width: int) -> None:
    """At 50 columns the reason column was 13 wide: one recall's reason ran to 20 lines,
    `max_tokens=6` over `00: 4 of 31`."""
    from chatmem.render.inspect import parts_table

    out = show(parts_table(recalling_context(), approximate=False, estimated=300), width)
    lines = [line.rstrip() for line in out.splitlines()]
    assert "┃" not in out and "│" not in out
    assert max(cell_len(line) for line in lines) <= width
    assert lines[0] == "parts"
    assert "recalled   4 messages   160 tokens" in lines
    assert "history   2 messages   120 tokens" in lines
    assert "input   1 message   9 tokens" in lines
    assert "reply priming   3 tokens" in lines
    assert "chat template   +8 tokens" in lines
    reason = " ".join(line.strip() for line in lines[lines.index(
        "recalled   4 messages   160 tokens") + 1:lines.index("history   2 messages   120 tokens")])
    assert reason == ("retrieval hybrid (dense 0.5, smooth 0.5, sitting 0.3, mmr 0.7)"
                      " max_tokens=600: 4 of 31 earlier messages, from 3 turns, fused"
                      " 0.41–0.88; 2 more ranked, left out (see inspect); 3 by words, 1 by"
                      " meaning")
    assert all(line.startswith("  ") for line in lines[lines.index(
        "recalled   4 messages   160 tokens") + 1:lines.index("history   2 messages   120 tokens")])


@pytest.mark.parametrize("width", [80, 100])
def test_the_parts_where_they_fit_are_the_table(width: int) -> None:
    from chatmem.render.inspect import parts_table

    out = show(parts_table(recalling_context(), approximate=False), width)
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines()
            if line.startswith("│")]
    assert max(cell_len(line.rstrip()) for line in out.splitlines()) <= width
    assert ["part", "messages", "tokens", "reason"] in [
        [cell.strip() for cell in line.split("┃")[1:-1]] for line in out.splitlines()]
    assert ["history", "2", "120", "window k=2: turns 3–4; dropped turns 1–2"] in rows
    assert ["reply priming", "", "3"] in [row[:3] for row in rows]
