"""Generated conversations, and `check_strategy`: the whole contract over one strategy.

The conversations are Hypothesis strategies (English, Chinese and mixed inputs, long ones
that push budgets, a system prompt or none, an opening greeting or none, small windows and
budgets), drawn derandomized: the same conversations on every run, and a failure is shrunk
to the smallest conversation that still breaks the rule. Hypothesis is imported only when
they are drawn (the `testing` extra brings it).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from chatmem.testing.contract import Conversation, run_conversation

if TYPE_CHECKING:
    from hypothesis import settings as Settings
    from hypothesis.strategies import SearchStrategy

PIECES = [
    "my", "order", "is", "ORD-7731", "what", "did", "I", "say?", "budget", "5000", "yuan",
    "我的", "订单号", "是", "预算", "五千元", "我们五月去杭州旅行", "三月十五日",
    "alice@example.com",
    "https://example.com/a?b=1", "，", "。", "!", "\n", "Ünïcödé", "🙂",
]
"""What generated inputs are made of: ids, amounts, dates, an e-mail, a URL, CJK runs."""

OPENED_BY_THE_ASSISTANT: Conversation = {
    "system": "You are Aria.", "k": 3, "max_tokens": 400,
    "greeting": "Welcome to the Blue Inn. The password is OWL-7.",
    "inputs": ["Bo. what is the password?", "and again?", "再说一遍？"]}
"""A session that opens with the assistant's greeting, as a character app's chat does: every
strategy sends it in place (right after the system prompt) while the turns after it are sent."""

EXAMPLES = 25
"""Conversations a strategy runs alone; COMBINED as NAME+window, ON_POSTGRES on PostgreSQL."""
COMBINED = 8
ON_POSTGRES = 5


def conversations() -> SearchStrategy[Conversation]:
    """The generated conversations `run_conversation` takes, as a Hypothesis strategy."""
    from hypothesis import strategies as st

    text_input = st.one_of(
        st.lists(st.sampled_from(PIECES), min_size=1, max_size=12).map(" ".join),
        st.lists(st.sampled_from(PIECES), min_size=1, max_size=12).map("".join),
        st.text(alphabet=st.sampled_from("abc xyz 0123 我你他订单杭州，。-"), min_size=1,
                max_size=60),
        st.sampled_from(PIECES).map(lambda p: (p + " ") * 40),  # long enough to push budgets
    ).filter(lambda s: s.strip() != "")
    return st.builds(
        Conversation,
        system=st.sampled_from(["", "Be brief.", "你是一个简洁的助手。", "Be brief. " * 30]),
        inputs=st.lists(text_input, min_size=1, max_size=7),
        greeting=st.sampled_from([None, "Hello! 你好，我能帮什么？"]),
        max_tokens=st.integers(min_value=20, max_value=400),
        k=st.integers(min_value=0, max_value=3),
    )


def contract_settings(examples: int = EXAMPLES) -> Settings:
    """Hypothesis settings for the contract: `examples` conversations, the same every run,
    no deadline (a turn runs a whole engine)."""
    from hypothesis import HealthCheck, settings

    return settings(max_examples=examples, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


def check_strategy(name: str, *, examples: int = EXAMPLES, combined: int = COMBINED,
                   postgres: str | None = None, embedder: str = "hash") -> None:
    """Check strategy `name` (installed: registered by a plugin's entry point) against
    every rule of the contract, as chatmem's own tests check its strategies: the
    conversation opening with a greeting, `examples` generated conversations alone,
    `combined` as `NAME+window` (0: none), and, given a PostgreSQL URL as `postgres`, 5
    more there; recall ranks with `embedder` (`"hash"`: deterministic, no model). Raises
    AssertionError naming the rule and (from Hypothesis) the smallest conversation that
    breaks it; returns None when every rule holds."""
    from hypothesis import given

    def run(spec: str, convo: Conversation, location: str | None = None) -> None:
        with tempfile.TemporaryDirectory() as folder:
            run_conversation(spec, convo, Path(folder), embedder=embedder, location=location)

    def checked(spec: str, count: int, location: str | None) -> Callable[[], None]:
        @contract_settings(count)
        @given(convo=conversations())
        def check(convo: Conversation) -> None:
            run(spec, convo, location)

        return check

    run(name, OPENED_BY_THE_ASSISTANT)
    runs: list[tuple[str, int, str | None]] = [(name, examples, None),
                                                (f"{name}+window", combined, None)]
    if postgres:
        runs.append((name, ON_POSTGRES, postgres))
    for spec, count, location in runs:
        if count > 0:
            checked(spec, count, location)()
