"""Status lines fitted to the terminal: whole fields left out, the least important first,
never a number or a word cut (the token line here; the toolbar in tests/repl)."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from chatmem.config.options import Cost
from chatmem.memory.context import Context, Message, Part
from chatmem.memory.reasons import NewestTurns, NewInput, SystemPrompt
from chatmem.render import token_line
from chatmem.render.fields import Field, FittedLine, fitted, joined


def printed(renderable: object, width: int, *, soft_wrap: bool = False) -> list[str]:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(renderable, soft_wrap=soft_wrap)
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined]


def long_line() -> FittedLine:
    """A token line with every field: parts, priming, a template's extra, the provider's
    count, a cost below a cent, the latency and a combined strategy."""
    context = Context((
        Part("system", (Message("system", "Be brief.", 12),), SystemPrompt()),
        Part("history", (Message("user", "我们五月去杭州", 1_200, 1, 1),
                         Message("assistant", "好的", 840, 2, 1)),
             NewestTurns("window", "k", 5, (1, 1))),
        Part("input", (Message("user", "what about May?", 9),), NewInput()),
    ), budget=128_000, priming=3)
    return token_line(context, approximate=True, estimated=2_100, reported=2_087,
                      latency_ms=11_800, cost=Cost(0.0034),
                      strategy="summary-buffer+retrieval max_tokens=2000")


def words(line: str) -> list[str]:
    return line.split()


def test_the_token_line_fits_every_width_from_40_to_200_by_leaving_out_whole_fields() -> None:
    line = long_line()
    whole = line.plain
    assert whole == ("system ≈12 · history ≈2,040 · input ≈9 · priming ≈3 · chat template +36"
                     " = ≈2,100 tokens of 128,000 (provider reported 2,087) · $0.0034 · 11.8 s"
                     " · summary-buffer+retrieval max_tokens=2000")
    for width in range(40, 201):
        lines = printed(line, width)
        assert len(lines) == 1, (width, lines)  # never wrapped onto a second line
        shown = lines[0].rstrip()
        assert cell_len(shown) <= width
        # Every word shown is a whole word of the full line: no `$0.000`, no `tot`.
        assert set(words(shown)) <= set(words(whole)), (width, shown)
        assert "≈2,100 tokens of 128,000" in shown  # the total and budget, always
    assert printed(line, 200) == [whole]
    # The order things go in: the strategy (it is on the toolbar), then the latency,
    # the provider's count, the cost, and last the parts that add up to the total.
    assert printed(line, 160) == [whole.rpartition(" · summary-buffer")[0]]
    assert printed(line, 120) == [whole.partition(" (provider")[0] + " · $0.0034 · 11.8 s"]
    assert printed(line, 100) == [whole.partition(" (provider")[0]]
    # Where the parts cannot fit, the shorter fields they would have pushed out can.
    assert printed(line, 80) == [
        "≈2,100 tokens of 128,000 (provider reported 2,087) · $0.0034 · 11.8 s"]
    assert printed(line, 40) == ["≈2,100 tokens of 128,000 · $0.0034"]


def test_the_token_line_stays_whole_in_a_pipe_and_its_warnings_wrap_below() -> None:
    line = long_line()
    # Printed with soft wrap (stderr is a pipe or a file): one line, every field.
    assert printed(line, 40, soft_wrap=True) == [line.plain]
    warned = FittedLine(line.fields, [Text("⚠ the system prompt alone is over the budget")])
    shown = printed(warned, 40)
    assert shown[0] == "≈2,100 tokens of 128,000 · $0.0034"
    assert " ".join(s.strip() for s in shown[1:]) == (
        "⚠ the system prompt alone is over the budget")


def test_a_flowing_token_line_shows_every_field_and_wraps_only_between_fields() -> None:
    fields = long_line().fields
    line = FittedLine(fields, flow=True)
    whole = line.plain
    for width in range(40, 201):
        lines = [shown.rstrip() for shown in printed(line, width)]
        assert all(cell_len(shown) <= width for shown in lines), width
        # Joined again at the line ends, the lines are the whole line: no field split.
        assert " ".join(lines) == whole, width
    assert printed(line, 60) == [
        "system ≈12 · history ≈2,040 · input ≈9 · priming ≈3 ·",
        "chat template +36 = ≈2,100 tokens of 128,000",
        "(provider reported 2,087) · $0.0034 · 11.8 s ·",
        "summary-buffer+retrieval max_tokens=2000"]


@given(st.lists(st.tuples(st.text("ab中 ", min_size=1, max_size=12),
                          st.integers(0, 5)), max_size=8),
       st.integers(0, 60))
def test_fitting_keeps_order_width_and_the_most_important_field(
    specs: list[tuple[str, int]], width: int
) -> None:
    # Fields of equal rank next to each other form a group, kept or left out together.
    fields = [Field(Text(text), rank, group=str(rank)) for text, rank in specs]
    kept = fitted(fields, width)
    where = [next(i for i, f in enumerate(fields) if f is k) for k in kept]
    assert cell_len(joined(kept).plain) <= width
    assert where == sorted(set(where))  # in their order, each once
    if cell_len(joined(fields).plain) <= width:
        assert len(kept) == len(fields)
    groups = [[j for j in range(len(fields)) if run(fields, j) == run(fields, i)]
              for i in range(len(fields))]
    if fields:
        top = max(f.rank for f in fields)
        if any(cell_len(joined([fields[j] for j in groups[i]]).plain) <= width
               for i, f in enumerate(fields) if f.rank == top):
            assert any(f.rank == top for f in kept)
    for i in where:
        assert set(groups[i]) <= set(where)  # a group is never shown in part
    # No group left out would still have fitted beside the more important ones kept.
    for out, left_out in enumerate(fields):
        if out in where:
            continue
        trial = [f for i, f in enumerate(fields)
                 if i in groups[out] or (i in where and f.rank >= left_out.rank)]
        assert cell_len(joined(trial).plain) > width


def run(fields: list[Field], index: int) -> int:
    """The first index of the run of neighbouring fields of one group that holds `index`."""
    while index and fields[index - 1].group == fields[index].group:
        index -= 1
    return index
