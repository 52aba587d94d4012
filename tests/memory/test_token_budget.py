"""`tokens`: the newest whole turns that fit; the budget counts everything sent."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from listed_history import ListHistory, scratch_state
from registered import create_strategy

from chatmem.context_warnings import OverBudget
from chatmem.memory.base import ContextRequest
from chatmem.memory.context import Message
from chatmem.memory.reasons import DroppedTurns, NewestTurns
from chatmem.tokens import counter_for_model

COUNTER = counter_for_model(None, exact=True)


def msg(role: str, content: str, id: int | None = None) -> Message:
    return Message(role, content, COUNTER.count_message(role, content), id)


def build(turn_texts: list[str], budget: int, system: str | None, text: str = "and now?"):
    messages = []
    for n, body in enumerate(turn_texts, 1):
        messages += [msg("user", body, 2 * n - 1), msg("assistant", f"reply to {n}", 2 * n)]
    h = ListHistory.from_messages(messages)
    req = ContextRequest(history=h, input=msg("user", text), counter=COUNTER, system=system,
                         state=scratch_state())
    return h, create_strategy("tokens", {"max_tokens": str(budget)}).build(req)


def test_budget_counts_system_input_and_overhead() -> None:
    turn_texts = ["我的订单号是ORD-7731，预算五千元", "hello there", "third"]
    _, everything = build(turn_texts, 10_000, "Be brief.")
    exact = COUNTER.count_messages(everything.messages())
    assert everything.tokens == exact
    # A budget one token short of everything drops exactly the oldest turn.
    _, trimmed = build(turn_texts, exact - 1, "Be brief.")
    part = trimmed.part("history")
    assert part is not None
    assert part.messages[0].content == "hello there"
    assert part.reason == NewestTurns("tokens", "max_tokens", exact - 1, (2, 3), (1, 1),
                                      to_fit=True)
    assert trimmed.dropped == (DroppedTurns((1, 1)),)
    assert trimmed.tokens <= exact - 1 and not trimmed.warnings


def test_system_prompt_over_budget_is_said_loudly() -> None:
    _, context = build(["a"], 20, "Be brief. " * 30)
    assert context.part("history") is None
    fixed = context.part("system").tokens + context.part("input").tokens + context.priming
    assert context.warnings == (OverBudget(fixed, 20, fixed=True),)
    assert context.messages()[-1] == {"role": "user", "content": "and now?"}


@settings(max_examples=60, derandomize=True, deadline=None)
@given(
    turn_texts=st.lists(st.text(alphabet="ab 订单杭州 0123.", min_size=1, max_size=40),
                        max_size=12),
    budget=st.integers(min_value=1, max_value=300),
)
def test_keeps_the_longest_newest_suffix_that_fits(turn_texts: list[str], budget: int) -> None:
    h, context = build(turn_texts, budget, "Be brief.")
    part = context.part("history")
    kept = [m for m in part.messages] if part else []
    turns = list(h.newest_first())[::-1]
    n_kept = len(kept) // 2
    # Whole turns, starting on a user message, newest first.
    assert kept == [m for t in turns[len(turns) - n_kept:] for m in t.messages]
    fixed = context.tokens - sum(m.tokens for m in kept)
    if fixed <= budget:
        assert context.tokens <= budget
        if n_kept < len(turns):
            # The next older turn would not have fit.
            assert context.tokens + turns[len(turns) - n_kept - 1].tokens > budget
    else:
        assert n_kept == 0 and context.warnings
