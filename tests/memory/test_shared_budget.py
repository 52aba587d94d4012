"""A combination's shared budget and the recalled messages merged into its history part."""

from __future__ import annotations

from fact_conversations import context_with, english_session
from hypothesis import given, settings
from hypothesis import strategies as st
from listed_history import ListHistory, scratch_state

from chatmem.memory.base import ContextRequest
from chatmem.memory.context import Message, Part
from chatmem.memory.reasons import Recalled, RecallVerdict, SharedBudgetCut, StoredReason
from chatmem.memory.shared_budget import fit_budget
from chatmem.tokens import counter_for_model


def test_a_recalled_message_in_a_history_turn_cut_to_fit_is_sent_as_recalled(
    make_engine,
) -> None:
    """The review's run (window+retrieval, window.k=13 on proghelp): recall's best message
    sat in a window turn, so it was merged into history, and the shared budget cut that
    turn; nothing sent it while inspect's row said 'kept'."""
    engine = english_session(make_engine, "buffer")
    context = context_with(engine, "window+retrieval", "Do I live in Lisbon?",
                           **{"window.k": 36, "retrieval.max_tokens": 300})
    assert context.tokens <= context.budget == 300
    history = [m.turn for m in context.part("history").messages]
    assert history[0] > 4  # window held turns 4–39; the budget cut the oldest
    recalled = context.part("recalled")
    assert recalled is not None and "I live in Lisbon." in [m.content for m in recalled.messages]
    sent = [m.id for p in context.parts for m in p.messages if m.id is not None]
    assert len(sent) == len(set(sent))
    for row in context.recall:  # a row says kept only for a message that is sent
        assert row["kept"] == (row["id"] in sent), row
    assert isinstance(recalled.reason, Recalled)
    assert recalled.reason.sent == len(recalled.messages)
    cut = context.dropped[-1]
    assert isinstance(cut, SharedBudgetCut) and cut.history is not None
    assert 4 in range(cut.history[0], cut.history[1] + 1) and cut.recalled == ()


def test_a_recalled_message_cut_from_history_and_from_recall_is_not_called_kept(
    make_engine,
) -> None:
    """Recall chose turn 38's question, which the tokens member's history held; the fit cut
    turn 38 and had no room to recall it: its row said 'kept' (no part sent it)."""
    engine = english_session(make_engine, "buffer")
    context = context_with(engine, "tokens+retrieval", "curious thing about volcanoes",
                           **{"tokens.max_tokens": 120, "retrieval.recent": 0})
    sent = {m.id for p in context.parts for m in p.messages}
    assert [m.turn for m in context.part("history").messages] == [39, 39]
    gone = [r for r in context.recall if r["why"] == RecallVerdict.SHARED_BUDGET.value]
    assert [(r["turn"], r["role"], r["kept"]) for r in gone] == [(38, "user", False)]
    assert all(r["id"] in sent for r in context.recall if r["kept"])
    cut = context.dropped[-1]
    assert isinstance(cut, SharedBudgetCut) and [n for n, _ in cut.recalled] == [38]


def _request() -> ContextRequest:
    return ContextRequest(ListHistory(), Message("user", "now?", 5),
                          counter_for_model(None, exact=True), state=scratch_state())


def _turn(turn: int, tokens: int) -> tuple[Message, ...]:
    return (Message("user", f"question {turn}", tokens // 2, turn * 2, turn),
            Message("assistant", f"answer {turn}", tokens - tokens // 2, turn * 2 + 1, turn))


def test_the_fit_recalls_a_held_message_whose_history_turn_it_cuts() -> None:
    # Fixed: 5 input + 3 priming = 8. History turns 1–10 of 20 tokens; recall also chose
    # turn 2's question (10 tokens), which history holds.
    history = Part("history", tuple(m for t in range(1, 11) for m in _turn(t, 20)),
                   StoredReason("history"))
    also = Part("recalled", (_turn(2, 20)[0],), StoredReason("recalled"), ((2, 0.9),))
    parts, history_cut, recalled_cut = fit_budget(_request(), [history], 8 + 70, also)
    assert [p.kind for p in parts] == ["recalled", "history"]
    assert [(m.turn, m.role) for m in parts[0].messages] == [(2, "user")]
    assert parts[0].scores == ((2, 0.9),)
    assert [m.turn for m in parts[1].messages] == [8, 8, 9, 9, 10, 10]
    assert history_cut == list(range(1, 8)) and recalled_cut == []


def test_a_held_message_whose_history_turn_is_kept_is_sent_once_and_paid_once() -> None:
    history = Part("history", tuple(m for t in range(1, 5) for m in _turn(t, 20)),
                   StoredReason("history"))
    also = Part("recalled", (_turn(2, 20)[0],), StoredReason("recalled"), ((2, 0.9),))
    parts, history_cut, recalled_cut = fit_budget(_request(), [history], 8 + 60, also)
    assert [p.kind for p in parts] == ["history"]
    assert [m.turn for m in parts[0].messages] == [2, 2, 3, 3, 4, 4]
    assert history_cut == [1] and recalled_cut == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=8, unique=True),
       st.dictionaries(st.integers(31, 40), st.floats(0, 20), max_size=4),
       st.dictionaries(st.integers(1, 30), st.tuples(st.floats(0, 20), st.booleans()),
                       max_size=5),
       st.integers(0, 400))
def test_no_recalled_message_is_lost_between_history_and_recall(
    history, recalled, held, budget,
) -> None:
    """Whatever the budget: each message is sent at most once, every message recall chose
    is sent (as history or as recalled) unless its turn is listed cut, history stays the
    newest turns, whole, the recalled part opens on a question, and the fit is within
    the budget once the input fits."""
    history = sorted(history)
    held = {n: v for n, v in held.items() if n in history}
    held_messages = tuple(_turn(n, 20)[1 if reply else 0]
                          for n, (_, reply) in sorted(held.items()))
    parts = [p for p in (
        Part("recalled", tuple(m for t in sorted(recalled) for m in _turn(t, 20)),
             StoredReason("recalled"), tuple(sorted(recalled.items()))),
        Part("history", tuple(m for t in history for m in _turn(t, 20)),
             StoredReason("history"))) if p.messages]
    also = Part("recalled", held_messages, StoredReason("recalled"),
                tuple((n, s) for n, (s, _) in sorted(held.items()))) if held else None
    fitted, history_cut, recalled_cut = fit_budget(_request(), parts, budget, also)
    by_kind = {p.kind: p for p in fitted}
    sent = [m.id for p in fitted for m in p.messages]
    assert len(sent) == len(set(sent))
    cut = {n for n, _ in recalled_cut}
    chosen = [*(m for t in sorted(recalled) for m in _turn(t, 20)), *held_messages]
    for message in chosen:
        assert (message.id in sent) != (message.turn in cut), message
    kept_history = sorted({m.turn for m in by_kind["history"].messages}) \
        if "history" in by_kind else []
    assert kept_history == history[len(history_cut):]
    if "recalled" in by_kind:
        assert by_kind["recalled"].messages[0].role == "user"
    assert 8 + sum(p.tokens for p in fitted) <= budget or budget < 8


def test_a_kept_row_another_member_sends_in_history_says_so(make_engine) -> None:
    """window+retrieval: recall chose messages of turns the window sends; inspect's table
    called them "kept, beside" while the recalled part's count left them out."""
    engine = english_session(make_engine, "buffer")
    context = context_with(engine, "window+retrieval", "Do I live in Lisbon?",
                           **{"window.k": 36, "retrieval.recent": 0})
    history = {m.id for m in context.part("history").messages}
    recalled = context.part("recalled")
    recalled_ids = {m.id for m in recalled.messages} if recalled is not None else set()
    in_history = [r for r in context.recall if r["why"] == RecallVerdict.IN_HISTORY.value]
    assert in_history  # recent=0: recall ranks the window's turns too
    assert all(r["kept"] and r["id"] in history for r in in_history)
    kept = [r for r in context.recall if r["why"] == RecallVerdict.KEPT.value]
    assert all(r["id"] in recalled_ids for r in kept)
