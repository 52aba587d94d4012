"""What-ifs on stored sessions: read only what the strategy needs, rebuild state in batches."""

from __future__ import annotations

import pytest
from activity_log import Recording
from meter import metered
from registered import create_strategy

from chatmem.activity import ActivityStep, Work
from chatmem.engine import Engine
from chatmem.evaluation.whatif import what_if
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store


def conversation(turns: int) -> list[dict[str, str]]:
    out = []
    for n in range(1, turns + 1):
        out.append({"role": "user", "content": f"My order number is ORD-{n}, item {n}."})
        out.append({"role": "assistant", "content": f"Noted: ORD-{n}, for item {n}."})
    return out


@pytest.fixture
def long_store(store: Store) -> Store:
    session = store.sessions.create_session("long", "window", system="Be brief.")
    store.history.import_messages(session.id, conversation(1500))
    short = store.sessions.create_session("short", "window", system="Be brief.")
    store.history.import_messages(short.id, conversation(20))
    return store


def test_a_window_what_if_reads_the_window_not_the_history(long_store: Store) -> None:
    provider = ScriptedProvider()
    rows = {}
    for name, turns in (("short", 20), ("long", 1500)):
        session = long_store.sessions.session(name)
        what_if(long_store, session, create_strategy("window", {"k": 2}), "warm up",
                history_turns=turns, system="Be brief.", chat_provider=provider)
        with metered(long_store) as meter:
            result = what_if(long_store, session, create_strategy("window", {"k": 2}), "hi",
                             history_turns=turns, system="Be brief.", chat_provider=provider)
        rows[name] = meter.rows
        history = result.context.part("history")
        assert history is not None
        assert [m.turn for m in history.messages] == [turns - 1, turns - 1, turns, turns]
        assert (result.replayed, result.model_calls) == (0, 0)
    assert rows["long"] == rows["short"], rows


def test_a_what_if_sees_the_history_as_it_was_at_its_turn(long_store: Store) -> None:
    session = long_store.sessions.session("long")
    result = what_if(long_store, session, create_strategy("buffer"), "and then?",
                     history_turns=3, system="You are a pirate.",
                     chat_provider=ScriptedProvider())
    assert result.context.messages()[0] == {"role": "system", "content": "You are a pirate."}
    assert [m["content"] for m in result.context.messages()[1:]] == [
        *(m["content"] for m in conversation(3)), "and then?"]
    # The same context a turn of the session itself would build, when nothing is capped.
    short = long_store.sessions.session("short")
    engine = Engine(long_store, short, ScriptedProvider(), create_strategy("window", {"k": 3}))
    assert what_if(long_store, short, create_strategy("window", {"k": 3}), "hi",
                   history_turns=20, system="Be brief.",
                   chat_provider=ScriptedProvider()).context == engine.build_context("hi")


def test_a_summary_what_if_copies_and_catches_up_in_batches_with_progress(
        long_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("chatmem.evaluation.whatif.COPY_TURNS", 500)
    session = long_store.sessions.session("long")
    activity = Recording()
    result = what_if(long_store, session, create_strategy("summary-buffer"), "What was my order?",
                     history_turns=1200, system="Be brief.", chat_provider=ScriptedProvider(),
                     activity=activity)
    copies = [s for s in activity.steps if s.work is Work.COPYING_TURNS]
    assert copies == [ActivityStep(Work.COPYING_TURNS, first, last, of=1200)
                      for first, last in ((1, 500), (501, 1000), (1001, 1200))]
    folds = [s for s in activity.steps if s.work is Work.SUMMARIZING]
    assert len(folds) == result.model_calls > 3
    assert all(s.of == 1200 for s in folds)
    assert result.replayed == 1200
    summary = result.context.part("summary")
    history = result.context.part("history")
    assert summary is not None and history is not None
    assert max(m.turn or 0 for m in history.messages) == 1200
    # The session's own state is untouched: the what-if ran in a scratch store.
    assert long_store.memory.summaries(session.id) == []
