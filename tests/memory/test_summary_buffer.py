"""`summary-buffer`: summary + recent whole turns within max_tokens, one call per prune."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from fact_conversations import CHINESE_FACTS, CHINESE_FILLER, mixed_line
from listed_history import ListHistory, scratch_state
from registered import create_strategy, open_session

from chatmem.config.settings import Settings
from chatmem.context_warnings import SummaryBehind
from chatmem.engine import Engine
from chatmem.errors import ProviderTimeout
from chatmem.memory import pins
from chatmem.memory.base import ContextRequest
from chatmem.memory.context import Context, Message
from chatmem.memory.reasons import PinnedDetails, PinsReleased, SummaryClipped
from chatmem.notices import SummaryFailed, SummaryUpdated
from chatmem.providers.base import ChatMessages
from chatmem.providers.scripted import RULES, ScriptedProvider
from chatmem.providers.scripted_summary import extractive_summary
from chatmem.store import Store

SYSTEM = "Be brief."


def line(i: int) -> str:
    if i % 10 == 0:
        return f"My order ORD-77{i} ships on 2026-05-{i // 10:02d} and costs ${i * 10}."
    if i % 7 == 0:
        return f"我们第{i}次讨论：预算五千元，五月去杭州，住三晚。"
    return f"Note {i}: the tea is warm and the garden is quiet today, nothing else to add."


def run(engine: Engine, first: int, last: int) -> list[int]:
    """Run turns first..last; the summarizer calls each turn made."""
    provider = engine.helper
    assert isinstance(provider, ScriptedProvider)
    calls = []
    for i in range(first, last + 1):
        before = provider.calls_by_purpose.get("summary", 0)
        result = engine.run_turn(line(i))
        assert result.status == "ok"
        calls.append(provider.calls_by_purpose.get("summary", 0) - before)
    return calls


def open_engine(store: Store, provider: ScriptedProvider, **params: str) -> Engine:
    return open_session(store, Settings(system=SYSTEM), provider, "long",
                        strategy="summary-buffer", params=params)


def test_sixty_turns_stay_within_600_tokens_with_one_call_per_prune(store: Store) -> None:
    provider = ScriptedProvider()
    engine = open_engine(store, provider, max_tokens="600")
    calls = run(engine, 1, 60)
    turns = store.turns.turns(engine.session.id)
    assert len(turns) == 60
    for turn in turns:
        assert turn.context["tokens"] <= 600, turn.number
        assert turn.estimated_tokens is not None and turn.estimated_tokens <= 600
        assert turn.context["warnings"] == []
    versions = store.memory.summaries(engine.session.id, "summary-buffer")
    # One call per prune: each turn makes at most one call, and every call is one version.
    assert set(calls) <= {0, 1}
    assert provider.calls_by_purpose["summary"] == sum(calls) == len(versions) > 10
    # Batched: some prune folded more than one turn (four messages or more) in its one call.
    assert max(len(v.covered_ids) for v in versions) >= 4
    # Nothing is summarized twice, nothing before the boundary is skipped.
    covered = [i for v in versions for i in v.covered_ids]
    assert len(covered) == len(set(covered))
    boundary = engine.state.get("summary-buffer")["boundary_turn"]
    expected = [m.id for m in store.history.messages(engine.session.id, 1, boundary)]
    assert sorted(covered) == expected
    # The last context: the summary counts inside the budget, then the newest turns.
    last = turns[-1].context
    kinds = [p["kind"] for p in last["parts"]]
    assert kinds[:2] == ["system", "summary"] and kinds[-2:] == ["history", "input"]
    history = next(p for p in last["parts"] if p["kind"] == "history")
    assert min(m["turn"] for m in history["messages"]) > 1  # turn 1 on went into the summary


def test_a_restart_midway_gives_the_same_contexts(tmp_path: Path) -> None:
    replies = [f"reply {i}: noted, thank you." for i in range(1, 61)]
    script = tmp_path / "replies.txt"
    script.write_text("\n".join(replies), encoding="utf-8")
    rest = tmp_path / "rest.txt"
    rest.write_text("\n".join(replies[30:]), encoding="utf-8")

    with Store(tmp_path / "straight.db") as store:
        engine = open_engine(store, ScriptedProvider(script=script), max_tokens="600")
        run(engine, 1, 60)
        straight = [t.context for t in store.turns.turns(engine.session.id)]
        straight_summaries = [s.text for s in store.memory.summaries(engine.session.id)]

    with Store(tmp_path / "restarted.db") as store:
        run(open_engine(store, ScriptedProvider(script=script), max_tokens="600"), 1, 30)
    # A new process: new Store, provider and engine on the same file; the session
    # resumes its strategy and the stored prune boundary.
    with Store(tmp_path / "restarted.db") as store:
        engine = open_session(store, Settings(system=SYSTEM), ScriptedProvider(script=rest), "long")
        assert engine.strategy.name == "summary-buffer"
        assert engine.strategy.params["max_tokens"] == 600
        run(engine, 31, 60)
        restarted = [t.context for t in store.turns.turns(engine.session.id)]
        restarted_summaries = [s.text for s in store.memory.summaries(engine.session.id)]

    assert len(restarted) == 60
    assert restarted == straight
    assert restarted_summaries == straight_summaries


def dropping(word: str, replacement: str) -> Callable[[ChatMessages], str]:
    def rule(messages: ChatMessages) -> str:
        return extractive_summary(messages).replace(word, replacement)

    return rule


@pytest.mark.parametrize(("statement", "anchor", "vague"), [
    ("My order number is ORD-7731 and it ships Friday.", "ORD-7731", "my order"),
    ("我的预算是五千元，五月去杭州。", "五千元", "一笔钱"),
])
def test_an_anchor_the_summarizer_drops_is_pinned_in_the_next_context(
    make_engine: Callable[..., Engine], monkeypatch: pytest.MonkeyPatch,
    statement: str, anchor: str, vague: str,
) -> None:
    monkeypatch.setitem(RULES, "summary", dropping(anchor, vague))
    engine = make_engine("summary-buffer", max_tokens=260, summary_max_tokens=64)
    result = engine.run_turn(statement)
    for i in range(2, 8):
        if engine.store.memory.summaries(engine.session.id):
            break
        result = engine.run_turn(f"Note {i}: the tea is warm and the garden is quiet today.")
    version = engine.store.memory.latest_summary(engine.session.id, "summary-buffer")
    assert version is not None and version.version == 1
    assert anchor not in version.text and vague in version.text
    assert version.dropped_anchors == [anchor]
    boundary = engine.state.get("summary-buffer")["boundary_turn"]
    assert len(result.notices) == 1
    assert isinstance(notice := result.notices[0], SummaryUpdated)
    # The summary's change counts the Chinese statement's characters beside the notes' words.
    unit = "words" if statement.isascii() else "characters and words"
    assert (notice.version, notice.upto, notice.unit) == (1, boundary, unit)
    assert (notice.pinned, notice.unpinned, notice.released) == ((anchor,), (), ())
    context = engine.build_context("what did I say?")
    facts = context.part("facts")
    assert facts is not None
    assert facts.reason == PinnedDetails((1,))
    assert f"- {anchor} (from turn 1: \"{statement}\")\n" in facts.messages[0].content
    assert facts.messages[0].role == "system"
    assert context.tokens <= 260


NINE = ("Turn nine: the parcel code is PX-9911, the tea is warm, the garden is quiet,"
        " the sky is clear and nothing else is new today.")


def test_a_failed_prune_keeps_turns_raw_and_catches_up_in_one_call(
    make_engine: Callable[..., Engine], monkeypatch: pytest.MonkeyPatch,
) -> None:
    failing = {"now": False}

    def rule(messages: ChatMessages) -> str:
        if failing["now"]:
            raise ProviderTimeout("the summarizer timed out after 60 s")
        return extractive_summary(messages)

    monkeypatch.setitem(RULES, "summary", rule)
    engine = make_engine("summary-buffer", max_tokens=300, summary_max_tokens=64)
    provider = engine.helper
    assert isinstance(provider, ScriptedProvider)
    for i in range(1, 9):
        engine.run_turn(line(i))
    assert engine.store.memory.summaries(engine.session.id)
    boundary = engine.state.get("summary-buffer")["boundary_turn"]

    failing["now"] = True  # turn N = 9
    result = engine.run_turn(NINE)
    assert result.status == "ok"
    assert len(result.notices) == 1
    assert isinstance(notice := result.notices[0], SummaryFailed)
    assert notice.error == "the summarizer timed out after 60 s"
    assert notice.turns and notice.turns[0] == boundary + 1 and notice.turns[-1] <= 9
    nine = [m.content for m in engine.store.history.messages(engine.session.id, 9, 9)]
    assert nine[0] == NINE
    assert engine.state.get("summary-buffer")["boundary_turn"] == boundary

    failing["now"] = False  # turn N+1 = 10 carries the unsummarized turns that fit the budget
    before = provider.calls_by_purpose["summary"]
    result = engine.run_turn(line(10))
    assert result.context.tokens <= 300
    sent = [m["content"] for m in result.context.messages()]
    [behind] = result.context.warnings
    assert isinstance(behind, SummaryBehind) and behind.last == 9
    # The older ones are said to wait for the summary, not sent over the budget.
    waiting = (behind.waiting_first, behind.waiting_last)
    assert waiting == ((boundary + 1, behind.first - 1) if behind.first > boundary + 1
                       else (0, 0))
    assert all(m.content in sent
               for m in engine.store.history.messages(engine.session.id, behind.first, 9))
    # The update after turn N+1 catches up: one call, all pending turns at once.
    assert provider.calls_by_purpose["summary"] == before + 1
    latest = engine.store.memory.latest_summary(engine.session.id, "summary-buffer")
    caught_up = engine.state.get("summary-buffer")["boundary_turn"]
    assert caught_up >= boundary + 2  # the failed prune and the new one, batched
    assert latest is not None and latest.covered_ids == [
        m.id for m in engine.store.history.messages(engine.session.id, boundary + 1, caught_up)]
    assert engine.state.get("summary-buffer")["behind"] == ""

    result = engine.run_turn(line(11))  # turn N+2: back within budget, no warning
    assert result.context.warnings == ()
    assert result.context.tokens <= 300
    assert any("PX-9911" in m["content"] for m in result.context.messages())


def test_stateless_build_fits_the_newest_turns_and_starts_on_a_user_message() -> None:
    from chatmem.tokens import counter_for_model

    counter = counter_for_model(None, exact=True)

    def m(role: str, text: str) -> Message:
        return Message(role, text, counter.count_message(role, text))

    history = ListHistory.from_messages(
        [m("assistant", "Welcome!")]
        + [x for i in range(1, 30) for x in (m("user", line(i)), m("assistant", f"ok {i}"))]
    )
    strategy = create_strategy("summary-buffer", {"max_tokens": "200"})
    context = strategy.build(ContextRequest(history, m("user", "and now?"), counter,
                                            system=SYSTEM, state=scratch_state()))
    assert context.tokens <= 200
    kept = context.part("history")
    assert kept is not None and kept.messages[0].role == "user"
    assert context.messages()[-1] == {"role": "user", "content": "and now?"}
    assert context.part("summary") is None
    assert line(1) not in [m.content for m in kept.messages]  # the oldest left out, unsummarized


def test_a_summary_that_no_longer_fits_is_clipped_visibly_not_sent_over_budget(
    store: Store,
) -> None:
    engine = open_engine(store, ScriptedProvider(), max_tokens="400")
    run(engine, 1, 20)
    assert store.memory.latest_summary(engine.session.id, "summary-buffer") is not None
    # A much longer system prompt leaves less room than the stored summary needs.
    store.sessions.update_session(engine.session.id, system="Answer in full sentences. " * 55)
    engine = open_session(store, Settings(), ScriptedProvider(), "long")
    context = engine.build_context("and now?")
    assert context.tokens <= 400
    summary = context.part("summary")
    assert summary is not None
    assert SummaryClipped(summary.reason.version) in context.dropped
    assert summary.reason.clipped_to is not None and summary.reason.clipped_to > 0
    # The oldest part is cut, behind a marker; the newest summarized turn is still there.
    content = summary.messages[0].content
    assert re.search(r"instructions:\n<summary>\n\[…older part clipped to fit \d+ tokens\]\n",
                     content)
    newest = store.memory.latest_summary(engine.session.id, "summary-buffer").text.splitlines()[-1]
    assert content.endswith("\n" + newest + "\n</summary>")


def test_a_22_turn_chinese_conversation_keeps_every_anchor_and_flags_a_vague_budget(
    make_engine: Callable[..., Engine], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(RULES, "summary", dropping("五千元", "一笔预算"))
    engine = make_engine("summary-buffer", max_tokens=300)
    for text in CHINESE_FACTS + CHINESE_FILLER:
        assert engine.run_turn(text).status == "ok"
    assert engine.history().turn_count() == 22
    versions = engine.store.memory.summaries(engine.session.id, "summary-buffer")
    flagged = [v for v in versions if "五千元" in v.dropped_anchors]
    assert len(flagged) == 1  # flagged once, then kept pinned
    assert all("五千元" not in v.text for v in versions)
    context = engine.build_context("我们的预算是多少？")
    assert context.tokens <= 300
    facts = context.part("facts")
    assert facts is not None
    # Each pin says where it was said: its line names turn 2, quoted or not.
    [line] = [x for x in facts.messages[0].content.splitlines() if "五千元" in x]
    assert line.startswith("- ") and "turn 2" in line
    assert flagged[0].version in facts.reason.versions
    # Old points left the extractive summary long ago; their anchors are still sent.
    sent = "\n".join(m["content"] for m in context.messages())
    for anchor in ("李雷", "ORD-7731", "五千元", "五月"):
        assert anchor in sent, anchor


def test_pruning_to_a_low_water_mark_batches_summarizer_calls(tmp_path: Path) -> None:
    calls = {}
    for prune_to in ("1.0", "0.5"):
        provider = ScriptedProvider()
        with Store(tmp_path / f"prune-{prune_to}.db") as store:
            engine = open_engine(store, provider, max_tokens="600", prune_to=prune_to)
            run(engine, 1, 60)
            assert all(t.context["tokens"] <= 600 for t in store.turns.turns(engine.session.id))
        calls[prune_to] = provider.calls_by_purpose["summary"]
    # Folding only what overflowed prunes on almost every turn once the window is
    # full; folding down to half the room leaves space for several turns.
    assert calls["0.5"] * 2 < calls["1.0"]


@pytest.mark.parametrize("raw", ["1.5", "-0.1"])
def test_prune_to_outside_zero_to_one_is_a_parameter_error(raw: str) -> None:
    from chatmem.errors import StrategyError

    with pytest.raises(StrategyError) as error:
        create_strategy("summary-buffer", {"prune_to": raw})
    bound = "at most 1.0" if raw == "1.5" else "at least 0.0"
    assert str(error.value) == (
        f"parameter prune_to='{raw}' of strategy 'summary-buffer' must be {bound}"
    )


def test_pins_keep_to_a_quarter_of_a_tight_budget_and_the_newest_turn_is_always_sent(
    store: Store,
) -> None:
    """A3: 160 turns full of ids, amounts and dates at max_tokens=500."""
    provider = ScriptedProvider()
    engine = open_engine(store, provider, max_tokens="500")
    released: list[tuple[SummaryUpdated, set[str]]] = []  # (notice, pinned right after it)
    for i in range(1, 161):
        result = engine.run_turn(mixed_line(i))
        assert result.status == "ok"
        released += [(n, {p.text for p in pins.pinned_facts(store.memory, engine.session.id)})
                     for n in result.notices if isinstance(n, SummaryUpdated) and n.released]
    turns = store.turns.turns(engine.session.id)
    limit = engine.strategy.pin_limit()
    assert limit == 125  # a quarter of 500
    for turn in turns[1:]:
        parts = {p["kind"]: p for p in turn.context["parts"]}
        assert turn.context["tokens"] <= 500, turn.number
        # The previous turn is always sent: pins never crowd out all history.
        assert turn.number - 1 in {m["turn"] for m in parts["history"]["messages"]}, turn.number
        if "facts" in parts:
            assert parts["facts"]["tokens"] <= limit, turn.number
    # Prunes come in batches again: far fewer summarizer calls than turns.
    calls = provider.calls_by_purpose["summary"]
    assert calls == len(store.memory.summaries(engine.session.id))
    assert calls / len(turns) < 0.4
    # Released pins are said so, and stay listed in the versions that dropped them.
    assert len(released) > 5
    dropped_ever = {a for v in store.memory.summaries(engine.session.id) for a in v.dropped_anchors}
    for notice, pinned_then in released:
        assert notice.pin_limit == 125
        for anchor in notice.released:
            assert anchor in dropped_ever and anchor not in pinned_then
    last = turns[-1].context
    said = [n for n in Context.from_json(last).dropped if isinstance(n, PinsReleased)]
    assert len(said) == 1 and said[0].limit == 125 and said[0].count > 1
    # Every pin line says which turn it came from.
    facts = next(p for p in last["parts"] if p["kind"] == "facts")["messages"][0]["content"]
    lines = facts.split("<facts>\n")[1].split("\n</facts>")[0].splitlines()
    assert lines and all(re.search(r"\((?:from )?turn \d+[:)]", x) for x in lines)


def test_a_clipped_summary_keeps_the_newest_turns_and_one_marker(
    make_engine: Callable[..., Engine],
) -> None:
    """A4: four long Chinese turns at max_tokens=200 (a 66-token summary)."""
    lines = [
        "你好，我叫王小明，预算是五千元，三月十五日出发，航班MU5137，住在湖景花园酒店。",
        "第一天我们去西湖，然后去灵隐寺，晚上吃杭帮菜，第二天早上看日出。",
        "第二天坐高铁去上海，看外滩夜景，晚上住在南京路附近的酒店。",
        "在上海想吃本帮菜，推荐几家餐厅吧，最好在外滩附近，人均两百元以内。",
    ]
    engine = make_engine("summary-buffer", max_tokens=200)
    notices = [n for text in lines for n in engine.run_turn(text).notices]
    versions = engine.store.memory.summaries(engine.session.id, "summary-buffer")
    clipped = [v for v in versions if v.text.startswith("[…older part clipped to fit 66 tokens]\n")]
    assert len(clipped) == sum(isinstance(n, SummaryUpdated) and n.clipped_to == 66
                               for n in notices) > 1
    for version in versions:  # never a nested or re-clipped marker
        assert version.text.count("[…") <= 1 and "[…clip" not in version.text
        assert engine.counter.count_text(version.text) <= 66
    # The newest version covers turn 4, and turn 4's words are in it.
    latest = versions[-1]
    assert engine.state.get("summary-buffer")["boundary_turn"] == 4
    assert latest.text.endswith("- " + lines[3]) and latest in clipped
    context = engine.build_context("还有什么？")
    assert "本帮菜" in context.part("summary").messages[0].content
    # What the clip cut from the oldest turn is pinned, with its turn.
    facts = context.part("facts")
    assert facts is not None and "MU5137" in facts.messages[0].content
    assert "turn 1" in facts.messages[0].content
