"""`chatmem logs` fits its table to the terminal by trying narrower question and session
columns: each width tried measures a few rows, not the whole log again, and picks what
measuring every row picked."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from rich.console import Console
from rich.measure import Measurement

from chatmem.config.options import Cost
from chatmem.render.logs import NAMED, _Log, _QuestionFit, _Stacked, _table, logs_table
from chatmem.store import LogEntry, TurnStatus

NAMES = ["trip", "北京上海旅行计划二零二六", "Renée-Zoë-Ångström-Müller-a-long-session-name",
         "工作"]
QUESTIONS = ["hello", "我们下周去杭州旅行，预算五千元，请帮我安排每天的行程和餐厅" * 2,
             "a very long question about an order " * 4, ":smile: [bold]markup[/bold] too", "短"]


def entries(count: int, first: int = 1) -> list[LogEntry]:
    """Turns numbered from `first` up (1: numbers of 1 to 4 digits, 1000: of 4)."""
    return [LogEntry(session=NAMES[i % len(NAMES)], number=first + (i * 37) % 1200,
                     created_at=f"2026-05-0{1 + i % 9}T1{i % 10}:00:00+00:00",
                     status=TurnStatus.FAILED if i % 17 == 3 else TurnStatus.OK,
                     input=QUESTIONS[i % len(QUESTIONS)],
                     strategy=("window", "summary-buffer+entity")[i % 2], params="{}",
                     provider="scripted", model=("gpt-4o-mini", "qwen2.5:0.5b-instruct")[i % 2],
                     prompt_tokens=i * 1234, reply_tokens=i * 7,
                     superseded_by=i + 1 if i % 23 == 5 else None)
                for i in range(count)]


def shown(table: Any, width: int) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(table)
    # The fitted table's lines end at their last mark; EveryRowMeasured's are padded.
    return "\n".join(line.rstrip() for line in console.export_text().split("\n"))


class EveryRowMeasured:
    """The table as fitted before: each width tried measured with every row in it."""

    def __init__(self, log: list[LogEntry], costs: list[Cost | None]) -> None:
        fit = logs_table(log, costs)
        assert isinstance(fit, _QuestionFit)
        self.widths = fit._widths()
        self.whole = _Log(log, costs)
        self.chosen: tuple[int, int, int] | None = None
        # Each width's table measured with every row in it, as far as one was tried. A table
        # is measured in room of its own (10,000 columns), not the console's width: one
        # measurement serves every console width the same log is shown in.
        self.measured: list[int] = []

    def table(self, question: int, session: int, named: int = NAMED) -> Any:
        return _table(self.whole, question, session, self.whole.priced, self.whole.marked,
                      named)

    def __rich_console__(self, console: Console, options: Any) -> Iterator[Any]:
        roomy = options.update_width(10_000)
        for tried, widths in enumerate(self.widths):
            if tried == len(self.measured):
                self.measured.append(Measurement.get(console, roomy, self.table(*widths)).maximum)
            if self.measured[tried] <= options.max_width:
                self.chosen = widths
                yield self.table(*widths)
                return
        yield _Stacked(self.whole)


@pytest.fixture(scope="module")
def every_row_measured() -> dict[bool, tuple[list[LogEntry], list[Cost | None],
                                              EveryRowMeasured]]:
    """Per `priced`: the log, its costs and the reference, shared by the console widths."""
    shared = {}
    for priced in (True, False):
        log = entries(60)
        costs = [Cost(0.0123 * i) if priced and i % 3 else None for i in range(len(log))]
        shared[priced] = (log, costs, EveryRowMeasured(log, costs))
    return shared


@pytest.mark.parametrize("width", [40, 60, 80, 120])
@pytest.mark.parametrize("priced", [True, False])
def test_the_fitted_table_is_the_one_measuring_every_row_picks(
        width: int, priced: bool, every_row_measured: dict[bool, Any]) -> None:
    log, costs, reference = every_row_measured[priced]
    assert shown(logs_table(log, costs), width) == shown(reference, width)


@pytest.fixture
def measurements(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How often Rich measures something (a cell, a column, a table): counted, not timed."""
    calls = [0]
    real = Measurement.get.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Measurement], *args: Any, **kwargs: Any) -> Measurement:
        calls[0] += 1
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(Measurement, "get", classmethod(counting))
    return calls


# The default run's larger log has 150 rows: the reference measures every row per width
# tried (6 s of CPU at 250 rows); the bug it guards measured 500 times a row, 50,000 more.
@pytest.mark.parametrize("larger", [150, pytest.param(250, marks=pytest.mark.slow)])
def test_fitting_measures_each_row_a_bounded_number_of_times(measurements: list[int],
                                                              larger: int) -> None:
    """`logs -n 10000` in 80 columns took 47 s of CPU: every width tried measured every row."""
    work = {}
    for rows in (50, larger):
        log, costs = entries(rows, first=1000), [None] * rows
        reference = EveryRowMeasured(log, costs)
        shown(reference, 80)
        # Long questions in 80 columns: dozens of widths are tried before one fits.
        assert reference.widths.index(reference.chosen) > 20
        measurements[0] = 0
        assert reference.chosen is not None
        shown(reference.table(*reference.chosen), 80)
        drawing = measurements[0]
        measurements[0] = 0
        shown(logs_table(log, costs), 80)
        work[rows] = measurements[0] - drawing
    # Each cell but the session's measured once, and a few rows per width tried (before: every
    # row per width, over 500 measurements a row).
    cells = 6
    assert work[larger] - work[50] <= 2 * cells * (larger - 50)
