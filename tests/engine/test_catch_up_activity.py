"""What a catch-up (an imported history's first turn) tells its Activity: one series around
all of it, and steps that cover each fold or extraction whole, the work after the model
call included, so nothing long runs with no progress shown. On a pipe nothing is printed."""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from registered import open_session
from rich.console import Console

from chatmem.activity import ActivityStep, ActivityWarning, Work
from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render.progress import ConsoleActivity
from chatmem.store import Store

TURNS = 300
SETTINGS = Settings(embeddings=EmbeddingsSection(provider="none"))
SAID = [("My order number is ORD-{n} and I live in Porto.", "Noted ORD-{n}."),
        ("我们第{n}天去杭州看西湖，预算五千元。", "好的，第{n}天：西湖。")]


def imported(path: Path) -> Store:
    store = Store(path)
    session = store.sessions.create_session("big", "window")
    store.history.import_messages(session.id, [
        {"role": role, "content": text.format(n=n)}
        for n in range(1, TURNS + 1)
        for role, text in zip(("user", "assistant"), SAID[n % 2], strict=True)])
    return store


class Watching:
    """An Activity that notes, at each step's end, what the step has stored by then."""

    def __init__(self, stored: dict[Work, object]) -> None:
        self.stored = stored
        self.events: list[tuple[str, ActivityStep | None, object]] = []

    @contextmanager
    def doing(self, step: ActivityStep) -> Iterator[None]:
        self.events.append(("start", step, None))
        yield
        self.events.append(("end", step, self.stored[step.work]()))  # type: ignore[operator]

    @contextmanager
    def series(self) -> Iterator[None]:
        self.events.append(("series", None, None))
        yield
        self.events.append(("series end", None, None))

    def warn(self, warning: ActivityWarning, *, once: bool = False) -> None:
        pass


def steps_of(events: list[tuple[str, ActivityStep | None, object]]) -> list[ActivityStep]:
    return [step for kind, step, _ in events if kind == "start" and step is not None]


def test_a_summary_catch_up_is_one_series_of_steps_each_covering_its_whole_fold(
        tmp_path: Path) -> None:
    with imported(tmp_path / "h.db") as store:
        session = store.sessions.session("big")
        activity = Watching({Work.SUMMARIZING: lambda: len(store.memory.summaries(
            session.id))})
        engine = open_session(store, SETTINGS, ScriptedProvider(), "big",
                              strategy="summary", activity=activity)
        engine.catch_up()
    events = activity.events
    assert events[0][0] == "series" and events[-1][0] == "series end"
    assert [kind for kind, _, _ in events].count("series") == 1
    steps = steps_of(events)
    assert len(steps) > 3 and {(s.work, s.of) for s in steps} == {(Work.SUMMARIZING, TURNS)}
    # Turn after turn, none twice, none skipped.
    assert steps[0].first == 1
    assert all(b.first == a.last + 1 for a, b in itertools.pairwise(steps))
    # By a step's end its version is stored: the pins, anchors and writing were inside it.
    assert [seen for kind, _, seen in events if kind == "end"] == list(
        range(1, len(steps) + 1))


def test_a_facts_catch_up_is_one_series_of_steps_each_covering_its_whole_batch(
        tmp_path: Path) -> None:
    with imported(tmp_path / "h.db") as store:
        session = store.sessions.session("big")
        activity = Watching({Work.EXTRACTING_FACTS: lambda: len(store.facts.facts(
            session_id=session.id))})
        engine = open_session(store, SETTINGS, ScriptedProvider(), "big",
                              strategy="entity", activity=activity)
        engine.catch_up()
    events = activity.events
    assert events[0][0] == "series" and events[-1][0] == "series end"
    steps = steps_of(events)
    assert len(steps) > 1 and {(s.work, s.of) for s in steps} == {
        (Work.EXTRACTING_FACTS, TURNS)}
    assert steps[0].first == 1 and steps[-1].last == TURNS
    assert all(b.first == a.last + 1 for a, b in itertools.pairwise(steps))
    # The facts of the first batch are written before its step ends.
    first_end = next(seen for kind, _, seen in events if kind == "end")
    assert isinstance(first_end, int) and first_end > 0


class Screen(io.StringIO):
    """A terminal the test can read: what isatty() says of one."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("forced", [False, True], ids=["pipe", "FORCE_COLOR"])
@pytest.mark.parametrize("strategy", ["summary-buffer", "entity"])
def test_a_catch_up_prints_nothing_when_stderr_is_not_a_terminal(
        tmp_path: Path, strategy: str, forced: bool) -> None:
    """FORCE_COLOR (a forced terminal) drew the spinner's frames into a file too."""
    err = io.StringIO()
    console = ConsoleActivity(Console(file=err, force_terminal=forced))
    with imported(tmp_path / "h.db") as store:
        engine = open_session(store, SETTINGS, ScriptedProvider(), "big",
                              strategy=strategy, activity=console)
        engine.catch_up()
    assert err.getvalue() == ""


def test_on_a_terminal_a_catch_up_shows_one_bar_over_all_its_steps(tmp_path: Path) -> None:
    err = Screen()
    activity = ConsoleActivity(Console(file=err, force_terminal=True, width=120))
    tasks: list[tuple[int, float, float | None]] = []
    doing = activity.doing

    @contextmanager
    def watched(step: ActivityStep) -> Iterator[None]:
        with doing(step):
            yield
        bar = activity._bar  # the bar under test
        assert bar is not None
        tasks.extend((len(bar.tasks), t.completed, t.total) for t in bar.tasks)

    activity.doing = watched  # type: ignore[method-assign]
    with imported(tmp_path / "h.db") as store:
        engine = open_session(store, SETTINGS, ScriptedProvider(), "big",
                              strategy="summary-buffer", activity=activity)
        engine.catch_up()
    assert activity._bar is None  # gone with the series
    assert len(tasks) > 2
    assert {(count, total) for count, _, total in tasks} == {(1, TURNS)}
    done = [completed for _, completed, _ in tasks]
    assert done == sorted(done) and done[0] > 0
    assert err.getvalue()  # drawn, then cleared
