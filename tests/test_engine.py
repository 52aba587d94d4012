"""One turn: context → provider → atomic commit → memory update; and what each costs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pytest
from cached_counts import cached_counts

from chatmem.errors import ProviderResponseError
from chatmem.memory.context import Context
from chatmem.memory.reasons import NewestTurns
from chatmem.notices import SummaryUpdated
from chatmem.providers.scripted import ScriptedProvider, ScriptedReply
from chatmem.session_notices import StrategyChanged, SystemPromptReplaced
from chatmem.tokens import counter_for_model


class CountingCounter:
    """The real cl100k counter, recording every message it is asked to count."""

    def __init__(self) -> None:
        self._inner = counter_for_model(None, exact=True)
        self.key = self._inner.key
        self.approximate = False
        self.priming = self._inner.priming
        self.additive = self._inner.additive
        self.calls: Counter[tuple[str, str]] = Counter()

    def count_text(self, text: str) -> int:
        return self._inner.count_text(text)

    def count_message(self, role: str, content: str) -> int:
        self.calls[(role, content)] += 1
        return self._inner.count_message(role, content)

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        return self._inner.count_messages(messages)


class CountingProvider(ScriptedProvider):
    def __init__(self) -> None:
        super().__init__()
        self.counter = CountingCounter()

    def token_counter(self) -> CountingCounter:  # type: ignore[override]
        return self.counter


class BreakingReply(ScriptedReply):
    """Streams two words, then fails the way a dropped connection does."""

    def __iter__(self) -> Iterator[str]:
        yield "partial "
        yield "reply"
        raise ProviderResponseError("the reply stream from test broke off")


class FlakyProvider(ScriptedProvider):
    def __init__(self, fail_on: set[int]) -> None:
        super().__init__()
        self.fail_on = fail_on
        self.requests = 0

    def stream(self, messages: Any) -> ScriptedReply:
        self.requests += 1
        reply = super().stream(messages)
        return BreakingReply("x", 0, 1) if self.requests in self.fail_on else reply


@pytest.mark.parametrize("strategy", ["buffer", "window", "tokens"])
def test_each_message_is_counted_once_across_turns(make_engine, strategy: str) -> None:
    provider = CountingProvider()
    engine = make_engine(strategy, provider=provider, system=None)
    for i in range(8):
        engine.run_turn(f"message number {i} 第{i}条")
    counted = {k: n for k, n in provider.counter.calls.items() if k[0] != "system"}
    assert set(counted.values()) == {1}, counted
    # Every stored message that a context used was counted (and only once).
    assert ("user", "message number 0 第0条") in counted


@pytest.mark.parametrize("strategy", ["tokens", "summary-buffer", "window+entity"])
def test_the_system_prompt_is_counted_once_per_context(make_engine, strategy: str) -> None:
    provider = CountingProvider()
    engine = make_engine(strategy, provider=provider, system="Be brief. 简短回答。")
    provider.counter.calls.clear()
    engine.build_context("hello")
    assert provider.counter.calls[("system", "Be brief. 简短回答。")] == 1


def test_a_turn_stores_its_messages_counts_with_it(make_engine) -> None:
    engine = make_engine("buffer")
    engine.run_turn("hello")
    engine.run_turn("预算五千元")
    messages = engine.store.history.messages(engine.session.id)
    cached = cached_counts(engine.store, engine.session.id, engine.counter.key)
    assert cached == {m.id: engine.counter.count_message(m.role, m.content) for m in messages}


def test_a_provider_error_leaves_memory_untouched(make_engine) -> None:
    provider = FlakyProvider(fail_on={2})
    engine = make_engine("buffer", provider=provider)
    engine.run_turn("one")
    with pytest.raises(ProviderResponseError) as caught:
        engine.run_turn("two")
    third = engine.run_turn("three")
    assert [m.content for m in engine.store.history.messages(engine.session.id)] == [
        "one", "echo #1: one", "three", "echo #3: three"]
    turns = engine.store.turns.turns(engine.session.id)
    assert [(t.number, t.status) for t in turns] == [(1, "ok"), (2, "failed"), (3, "ok")]
    assert turns[1].reply is None and turns[1].error == str(caught.value)
    assert "two" not in str(third.context.messages())
    # The failed turn kept what would have been sent, for inspect.
    assert turns[1].context["parts"][-1]["messages"][0]["content"] == "two"


class RefusingProvider(ScriptedProvider):
    """Sends its request as soon as it is asked to stream, and is refused there."""

    def stream(self, messages: Any) -> ScriptedReply:
        raise ProviderResponseError("the endpoint refused the request at once")


def test_a_provider_refusing_as_it_is_asked_records_a_failed_turn(make_engine) -> None:
    engine = make_engine("window", provider=RefusingProvider())
    with pytest.raises(ProviderResponseError):
        engine.run_turn("你好")
    (turn,) = engine.store.turns.turns(engine.session.id)
    assert (turn.status, turn.reply, turn.error) == (
        "failed", None, "the endpoint refused the request at once")
    assert turn.context["parts"][-1]["messages"][0]["content"] == "你好"


class BrokenPairReply(ScriptedReply):
    def __iter__(self) -> Iterator[str]:
        yield "a broken pair \ud83d"
        yield " then 好"


class BrokenPairProvider(ScriptedProvider):
    def stream(self, messages: Any) -> ScriptedReply:
        super().stream(messages)
        return BrokenPairReply("x", 0, 1)


def test_a_lone_surrogate_in_a_reply_is_shown_and_stored_as_a_replacement(make_engine) -> None:
    engine = make_engine("window", provider=BrokenPairProvider())
    shown: list[str] = []
    result = engine.run_turn("hi", on_delta=shown.append)
    assert shown == ["a broken pair \ufffd", " then 好"]
    assert result.reply == "a broken pair \ufffd then 好"
    assert [m.content for m in engine.store.history.messages(engine.session.id)] == [
        "hi", "a broken pair \ufffd then 好"]


class InterruptedReply(ScriptedReply):
    """What the user's Ctrl-C does to a stream: KeyboardInterrupt mid-reply."""

    def __iter__(self) -> Iterator[str]:
        yield "half "
        raise KeyboardInterrupt


class InterruptedProvider(ScriptedProvider):
    def stream(self, messages: Any) -> ScriptedReply:
        super().stream(messages)
        return InterruptedReply("x", 0, 1)


def test_cancelled_turn_is_recorded_and_nothing_enters_memory(make_engine) -> None:
    engine = make_engine("window", provider=InterruptedProvider())
    result = engine.run_turn("stop me")
    assert result.status == "cancelled"
    assert engine.store.history.messages(engine.session.id) == []
    (turn,) = engine.store.turns.turns(engine.session.id)
    assert (turn.status, turn.reply) == ("cancelled", "half ") and turn.error


def test_a_turn_record_holds_what_was_sent(make_engine) -> None:
    engine = make_engine("window", k=1)
    engine.run_turn("my order is ORD-7731")
    result = engine.run_turn("我的订单号是什么？")
    record = engine.store.turns.turn(engine.session.id)
    assert record.number == 2 and record.status == "ok"
    assert record.strategy == "window" and record.params == {"k": 1}
    assert record.provider == "scripted" and record.tokenizer == "cl100k_base"
    assert record.estimated_tokens == result.context.tokens == record.prompt_tokens
    assert [p["kind"] for p in record.context["parts"]] == ["system", "history", "input"]
    assert record.context["parts"][1]["reason"] == {
        "kind": "newest_turns", "strategy": "window", "setting": "k", "value": 1, "turns": [1, 1]}
    # (fields at their defaults are not stored; reading fills them back)
    assert Context.from_json(record.context).parts[1].reason == NewestTurns("window", "k", 1,
                                                                            (1, 1))


def test_switching_strategy_keeps_history(make_engine) -> None:
    from registered import create_strategy

    engine = make_engine("window", k=0)
    engine.run_turn("first")
    assert engine.build_context("next").part("history") is None
    engine.set_strategy(create_strategy("buffer"))
    history = engine.build_context("next").part("history")
    assert history is not None and [m.content for m in history.messages] == [
        "first", "echo #1: first"]
    assert engine.store.sessions.session_by_id(engine.session.id).strategy == "buffer"


def test_a_turn_under_another_model_updates_the_session(make_engine) -> None:
    engine = make_engine("buffer")
    engine.run_turn("hello")
    assert (engine.session.provider, engine.session.model) == ("scripted", "scripted")
    engine.provider = ScriptedProvider("other-model")
    engine.run_turn("again")
    stored = engine.store.sessions.session_by_id(engine.session.id)
    assert (stored.provider, stored.model) == ("scripted", "other-model")
    assert engine.store.turns.turn(engine.session.id).model == "other-model"


def test_a_failed_turn_leaves_the_session_model_alone(make_engine) -> None:
    engine = make_engine("buffer")
    engine.provider = FlakyProvider({1})
    engine.provider.model = "flaky"
    with pytest.raises(ProviderResponseError):
        engine.run_turn("hello")
    assert engine.store.sessions.session_by_id(engine.session.id).model == "scripted"


def test_reopening_with_another_strategy_or_system_says_so(store) -> None:
    from registered import open_session

    from chatmem.config.settings import Settings

    settings = Settings(system="Be brief.")
    first = open_session(store, settings, ScriptedProvider(), "s", strategy="window")
    assert first.notices == []
    same = open_session(store, settings, ScriptedProvider(), "s", strategy="window",
                        params={"k": "5"}, system="Be brief.")
    assert same.notices == []
    changed = open_session(store, settings, ScriptedProvider(), "s", strategy="tokens",
                           params={"max_tokens": "300"}, system="你好，简短回答。")
    assert changed.notices == [
        StrategyChanged("s", "window k=5", "tokens max_tokens=300"),
        SystemPromptReplaced("s", 9, 8),
    ]


def test_a_strategy_switched_to_mid_session_catches_up_before_its_first_turn(
    make_engine,
) -> None:
    from registered import create_strategy

    engine = make_engine("window", k=2)
    for i in range(8):
        engine.run_turn(f"note {i}: the order ORD-77{i} ships on day {i} with some more words")
    engine.set_strategy(create_strategy("summary-buffer", {"max_tokens": "300"}))
    result = engine.run_turn("what did I order first?")
    # Without catching up, this first context would hold only the turns that fit, no summary.
    summary = result.context.part("summary")
    assert summary is not None and "turns 1–" in summary.messages[0].content
    # Turn 1's order is in memory: in the summary, or pinned by the drift guard.
    assert "ORD-770" in str(result.context.messages()[:-1])
    assert result.notices and isinstance(notice := result.notices[0], SummaryUpdated)
    assert notice.version == 1 and notice.upto > 1
    assert result.context.tokens <= 300


def test_a_ctrl_c_as_the_finished_reply_is_drawn_records_the_turn_as_cancelled(
        store, scripted) -> None:  # type: ignore[no-untyped-def]
    # The window between the stream's end and the end-of-reply callback: the turn is
    # recorded (cancelled, out of memory), never lost.
    from registered import open_session

    from chatmem.config.settings import Settings
    from chatmem.store import TurnStatus

    engine = open_session(store, Settings(system="Be brief."), scripted, "s", strategy="window")

    def interrupted() -> None:
        raise KeyboardInterrupt

    result = engine.run_turn("hello", on_reply_end=interrupted)
    assert result.status == TurnStatus.CANCELLED
    assert [t.status for t in store.turns.turns(engine.session.id)] == [TurnStatus.CANCELLED]
    assert store.history.messages(engine.session.id) == []
