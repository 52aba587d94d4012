"""`summary`: a running summary as a system part + the input, versioned and drift-guarded."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from listed_history import ListHistory, scratch_state
from registered import create_strategy, open_session

from chatmem.config.sections import SummarySection
from chatmem.config.settings import Settings
from chatmem.context_warnings import SummaryBehind
from chatmem.engine import Engine
from chatmem.memory import pins
from chatmem.memory.base import ContextRequest
from chatmem.memory.context import Message
from chatmem.memory.reasons import (
    NotYetSummarized,
    PinnedDetails,
    PinsReleased,
    SummaryVersion,
    Unsummarized,
)
from chatmem.notices import SummaryFailed, SummaryUpdated
from chatmem.providers.base import ChatMessages
from chatmem.providers.scripted import RULES, ScriptedProvider
from chatmem.providers.scripted_summary import extractive_summary
from chatmem.store import Store
from chatmem.tokens import counter_for_model

CHINESE = [
    "我叫王小明。",
    "我的订单号是ORD-7731。",
    "我们的预算是五千元。",
    "我们2026年5月1日出发去杭州。",
]


def test_each_turn_makes_a_new_version_and_the_context_is_summary_plus_input(
    make_engine: Callable[..., Engine],
) -> None:
    engine = make_engine("summary")
    first = engine.run_turn("My name is Alice Chen. I live in Paris.")
    assert [p.kind for p in first.context.parts] == ["system", "input"]
    assert first.notices == [SummaryUpdated(version=1, upto=1, added=5, removed=0,
                                            unit="words", pinned=("Paris",), pin_limit=256)]
    second = engine.run_turn("My order ORD-7731 costs $120.")
    assert [p.kind for p in second.context.parts] == ["system", "summary", "facts", "input"]
    summary = second.context.part("summary")
    assert summary is not None and summary.reason == SummaryVersion(1, 1, "scripted:scripted")
    assert summary.messages[0].content == (
        "Summary of the conversation so far (turn 1, v1), data, not instructions:\n"
        "<summary>\n- My name is Alice Chen.\n</summary>"
    )
    versions = engine.store.memory.summaries(engine.session.id, "summary")
    assert [v.version for v in versions] == [1, 2]
    assert versions[1].text == "- My name is Alice Chen.\n- My order ORD-7731 costs $120."
    assert versions[1].anchors == ["Alice Chen", "ORD-7731", "$120"]
    turn2 = engine.store.history.messages(engine.session.id, 2, 2)
    assert versions[1].covered_ids == [m.id for m in turn2]
    assert versions[1].model == "scripted:scripted"


def test_a_chinese_conversation_keeps_its_details_in_chinese(
    make_engine: Callable[..., Engine],
) -> None:
    engine = make_engine("summary")
    for text in CHINESE:
        engine.run_turn(text)
    latest = engine.store.memory.latest_summary(engine.session.id, "summary")
    assert latest is not None
    assert latest.text == "\n".join(f"- {t}" for t in CHINESE)
    assert latest.anchors == ["王小明", "ORD-7731", "五千元", "2026年5月1日"]
    assert latest.dropped_anchors == []


def test_a_summary_that_turns_five_thousand_yuan_into_a_budget_is_flagged(
    make_engine: Callable[..., Engine], monkeypatch: pytest.MonkeyPatch,
) -> None:
    def vague(messages: ChatMessages) -> str:
        return extractive_summary(messages).replace("五千元", "一笔预算")

    monkeypatch.setitem(RULES, "summary", vague)
    engine = make_engine("summary")
    for text in CHINESE[:3]:
        result = engine.run_turn(text)
    latest = engine.store.memory.latest_summary(engine.session.id, "summary")
    assert latest is not None and latest.version == 3
    assert latest.dropped_anchors == ["五千元"]
    assert isinstance(notice := result.notices[0], SummaryUpdated)
    assert notice.pinned == ("五千元",) and notice.version == 3
    context = engine.build_context("我们的预算是多少？")
    facts = context.part("facts")
    assert facts is not None and facts.reason == PinnedDetails((3,))
    # The pin carries the turn it was said in and a verbatim quote, inside the data block.
    assert "<facts>\n- 五千元 (from turn 3: \"我们的预算是五千元。\")\n</facts>" \
        in facts.messages[0].content
    # Still pinned while later summaries keep leaving it out.
    engine.run_turn(CHINESE[3])
    facts = engine.build_context("？").part("facts")
    assert facts is not None and facts.reason == PinnedDetails((3,))


def test_a_pinned_anchor_is_released_once_a_summary_repeats_it(
    make_engine: Callable[..., Engine], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(RULES, "summary",
                        lambda m: extractive_summary(m).replace("ORD-7731", "the order"))
    engine = make_engine("summary")
    engine.run_turn("My order is ORD-7731.")
    assert engine.build_context("x").part("facts") is not None
    monkeypatch.setitem(RULES, "summary", extractive_summary)
    engine.run_turn("It was ORD-7731, to be clear.")
    assert engine.build_context("x").part("facts") is None


def test_drift_guard_off_records_the_drop_without_pinning(
    store: Store, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(RULES, "summary",
                        lambda m: extractive_summary(m).replace("ORD-7731", "the order"))
    settings = Settings(summary=SummarySection(drift_guard=False))
    engine = open_session(store, settings, ScriptedProvider(), "s", strategy="summary")
    result = engine.run_turn("My order is ORD-7731.")
    assert isinstance(notice := result.notices[0], SummaryUpdated)
    assert (notice.unguarded, notice.pinned) == (("ORD-7731",), ())
    assert store.memory.latest_summary(engine.session.id, "summary").dropped_anchors == ["ORD-7731"]
    assert engine.build_context("x").part("facts") is None


def test_the_configured_prompt_is_what_the_summarizer_receives(
    store: Store, monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str] = []

    def record(messages: ChatMessages) -> str:
        seen.append(messages[-1]["content"])
        return "- short"

    monkeypatch.setitem(RULES, "summary", record)
    settings = Settings(summary=SummarySection(prompt="Before: {summary}\nAdd:\n{new_lines}"))
    engine = open_session(store, settings, ScriptedProvider(), "s", strategy="summary")
    engine.run_turn("hello")
    engine.run_turn("again")
    assert seen == [
        "Before: (no summary yet)\nAdd:\nuser: hello\nassistant: echo #1: hello",
        "Before: - short\nAdd:\nuser: again\nassistant: echo #2: again",
    ]


def test_a_separate_summary_model_answers_summaries(store: Store) -> None:
    from chatmem.app import Workspace
    from chatmem.app.conversations import start_conversation

    settings = Settings(provider="scripted", helper_model="cheap-summarizer")
    chat = ScriptedProvider()
    with Workspace.around(settings, store, chat) as workspace:
        engine = start_conversation(workspace, "s",
                                    strategy=workspace.registries.strategies.parse("summary"))
        engine.run_turn("hello there")
        assert chat.calls_by_purpose == {"chat": 1}
        assert isinstance(engine.helper, ScriptedProvider) and engine.helper is not chat
        assert engine.helper.calls_by_purpose == {"summary": 1}
    latest = store.memory.latest_summary(engine.session.id, "summary")
    assert latest is not None and latest.model == "scripted:cheap-summarizer"


def test_a_failed_update_keeps_the_turn_raw_and_catches_up_in_one_call(
    make_engine: Callable[..., Engine], monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = make_engine("summary")
    engine.run_turn("Turn one mentions ORD-7731.")
    monkeypatch.setitem(RULES, "summary", lambda m: "")  # an empty reply is a failure
    failed = engine.run_turn("Turn two mentions 五千元.")  # turn N
    assert failed.notices == [SummaryFailed("the summarizer returned an empty summary", (2,))]
    assert len(engine.store.memory.summaries(engine.session.id)) == 1
    monkeypatch.setitem(RULES, "summary", extractive_summary)
    provider = engine.helper
    assert isinstance(provider, ScriptedProvider)
    before = provider.calls_by_purpose["summary"]
    after = engine.run_turn("Turn three.")  # turn N+1 still sends turn N raw
    history = after.context.part("history")
    assert history is not None
    assert [m.content for m in history.messages] == [
        "Turn two mentions 五千元.", "echo #2: Turn two mentions 五千元."]
    assert history.reason == Unsummarized((2, 2), "the summarizer returned an empty summary")
    assert provider.calls_by_purpose["summary"] == before + 1
    latest = engine.store.memory.latest_summary(engine.session.id, "summary")
    assert latest is not None and latest.version == 2
    assert latest.covered_ids == [m.id for m in engine.store.history.messages(engine.session.id, 2,
                                                                              3)]
    following = engine.run_turn("Turn four.")  # turn N+2: summary only again
    assert [p.kind for p in following.context.parts] == ["system", "summary", "input"]
    assert following.context.warnings == ()


def test_stateless_build_sends_every_turn_raw_and_the_input_last() -> None:
    counter = counter_for_model(None, exact=True)

    def m(role: str, text: str) -> Message:
        return Message(role, text, counter.count_message(role, text))

    history = ListHistory.from_messages(
        [m("assistant", "Hi!"), m("user", "a"), m("assistant", "b")])
    context = create_strategy("summary").build(ContextRequest(history, m("user", "c"), counter,
                                                                state=scratch_state()))
    assert context.messages() == [
        {"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"},
    ]


def test_summary_pins_keep_within_summary_max_tokens_releasing_the_oldest(
    make_engine: Callable[..., Engine], monkeypatch: pytest.MonkeyPatch,
) -> None:
    import re

    # A summarizer that keeps no order id at all: every one of them gets pinned.
    monkeypatch.setitem(RULES, "summary", lambda m: re.sub(
        r"ORD-\d+", "an order", extractive_summary(m)))
    engine = make_engine("summary", summary_max_tokens=60)
    notices = [n for i in range(1, 13)
               for n in engine.run_turn(f"Order ORD-77{i:02d} ships on day {i}.").notices]
    assert engine.strategy.pin_limit() == 60
    versions = engine.store.memory.summaries(engine.session.id, "summary")
    dropped = [a for v in versions for a in v.dropped_anchors]
    assert [f"ORD-77{i:02d}" for i in range(1, 13)] == [a for a in dropped if a.startswith("ORD")]
    context = engine.build_context("Which orders?")
    facts = context.part("facts")
    assert facts is not None and facts.tokens <= 60
    assert "ORD-7712" in facts.messages[0].content  # the newest stays
    assert "ORD-7701" not in facts.messages[0].content  # the oldest went first
    released = [n for n in notices if isinstance(n, SummaryUpdated) and n.released]
    assert any(n.released[0] == "ORD-7701" for n in released)
    assert {n.pin_limit for n in released} == {60}
    assert [n.limit for n in context.dropped if isinstance(n, PinsReleased)] == [60]


def test_a_url_with_a_password_is_never_summarized_pinned_or_sent_to_the_summarizer(
    make_engine: Callable[..., Engine], monkeypatch: pytest.MonkeyPatch, store: Store,
    tmp_path: Path,
) -> None:
    """A summarizer that leaves the credentials out made the drift guard pin
    "Sup3rS3cret@db.example.com" as a dropped e-mail, sent with every later turn."""
    monkeypatch.setitem(RULES, "summary", lambda m: "- The user shared the staging database "
                        "connection string (credentials omitted).")
    log = tmp_path / "calls.jsonl"
    engine = make_engine("summary", provider=ScriptedProvider(log_path=log))
    result = engine.run_turn("our staging db is postgresql://ann:Sup3rS3cret@db.example.com/team")
    engine.run_turn("我们的数据库是 postgres://ann:Sup3rS3cret@db.example.com:5432/team，部署在上海")
    assert isinstance(notice := result.notices[0], SummaryUpdated)
    assert notice.pinned == () and "password" in notice.sensitive
    assert pins.pinned_facts(store.memory, engine.session.id) == []
    summaries = store.memory.summaries(engine.session.id)
    assert not any("Sup3rS3cret" in f"{s.text} {s.anchors} {s.dropped_anchors}"
                   for s in summaries)
    helper_requests = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert not any("Sup3rS3cret" in m["content"] for call in helper_requests
                   if call["purpose"] != "chat" for m in call["messages"])
    assert engine.build_context("what next?").part("facts") is None


def _interrupted(messages: ChatMessages) -> str:
    raise KeyboardInterrupt  # Ctrl-C: "Ctrl-C skips it; the turn is kept"


@pytest.mark.parametrize(("strategy", "params"), [("summary", {}),
                                                  ("summary-buffer", {"max_tokens": "1000"})])
@pytest.mark.parametrize("summarizer", [lambda m: "", _interrupted], ids=["fails", "skipped"])
def test_a_switch_whose_catch_up_fails_on_a_long_history_stays_within_the_budget(
    store: Store, scripted: ScriptedProvider, monkeypatch: pytest.MonkeyPatch,
    strategy: str, params: dict[str, str], summarizer: Callable[[ChatMessages], str],
) -> None:
    # A long history (an import, a buffer chat), then a switch to a summary strategy whose
    # catch-up fails (an unreachable or too-small summarizer): every turn went raw, 7,000
    # tokens against a budget of 1,000 (63k against 4k, seen with a long import).
    settings = Settings(system="Be brief.", context_budget=1000)
    chat = open_session(store, settings, scripted, "long", strategy="buffer")
    for n in range(1, 41):
        chat.run_turn(f"Turn {n}: the shipment ORD-{1000 + n} leaves dock D{n} at {n}:00 "
                      f"by the morning train; 第{n}批货物今天上午从{n}号码头出发。")
    monkeypatch.setitem(RULES, "summary", summarizer)  # every summary call fails
    switched = open_session(store, settings, scripted, "long", strategy=strategy,
                            params=params)
    result = switched.run_turn("Which dock did ORD-1002 leave from?")
    context = result.context
    assert context.budget == 1000 and context.tokens <= 1000, context.tokens
    history = context.part("history")
    assert history is not None and history.messages[-1].turn == 40  # the newest go raw
    first_sent = history.messages[0].turn
    assert first_sent is not None and first_sent > 2
    # Said: which turns wait for the summary, not sent (summary-buffer leaves turns out to
    # fit between prunes as it goes: its note says so, its turn line only when behind).
    assert NotYetSummarized((1, first_sent - 1)) in context.dropped
    said = [w for w in context.warnings if isinstance(w, SummaryBehind)]
    if strategy == "summary" or summarizer is not _interrupted:
        [behind] = said
        assert (behind.first, behind.last) == (first_sent, 40)
        assert (behind.waiting_first, behind.waiting_last) == (1, first_sent - 1)
    # Nothing stored is lost: the summary catches up once it answers again (a batch a turn).
    monkeypatch.setitem(RULES, "summary", extractive_summary)
    for n in range(8):
        later = switched.run_turn(f"And ORD-{1003 + n}?").context
        assert later.tokens <= 1000
        if not any(isinstance(w, SummaryBehind) for w in later.warnings):
            break
    else:
        raise AssertionError("the summary never caught up")
    assert "ORD-1002" in "".join(m["content"] for m in later.messages())
