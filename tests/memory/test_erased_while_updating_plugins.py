"""A purge that lands while a plugin strategy's update is under way (its helper call slow,
the purge typed in a second shell) is not undone by the state the update stores: chatmem
notes the session's erasures when the update begins and drops its writes after one, says so,
and the next turn's update reads those turns again, purged. The plugin does nothing for it.
On every backend of the `history` fixture, the purge run by another connection from inside
the helper's call, so no timing is involved (see test_erased_while_updating for built-ins).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from acting_providers import ActsWhile
from conftest import History
from plugin_site import Install
from test_erased_while_updating import (
    erasure_notices,
    purging,
    stored_text,
)

from chatmem.engine import Engine
from chatmem.errors import ProviderResponseError
from chatmem.notices import DerivedMemory, ErasedWhileUpdating, MemoryUpdateFailed, SummaryFailed
from chatmem.providers.base import ChatMessages, Purpose
from chatmem.render.notices import notice_text
from chatmem.store import Store

KEEPS = '''
from dataclasses import dataclass

from chatmem.errors import StoreError
from chatmem.memory.assembly import assemble
from chatmem.memory.base import BaseStrategy
from chatmem.memory.context import Message, Part
from chatmem.memory.params import param
from chatmem.memory.reasons import TextReason
from chatmem.providers.base import Purpose


@dataclass(frozen=True)
class KeepsParams:
    swallow: bool = param(False, "catch chatmem's refusal to store and go on")


class Keeps(BaseStrategy[KeepsParams]):
    name = "keeps"
    description = "Every user message, kept in state and sent as a note."
    OPTIONS = KeepsParams
    keeps_state = True
    calls_helper = True

    def update(self, env):
        st = env.state.get(self.name) or {"upto": 0, "said": []}
        total = env.history.turn_count()
        said = list(st["said"])
        for turn in env.history.turns(st["upto"] + 1, total):
            said += [[turn.number, m.content] for m in turn.messages if m.role == "user"]
        if env.model is not None:  # where a slow helper is busy
            env.model.complete([{"role": "user", "content": said[-1][1]}],
                               purpose=Purpose.SUMMARY)
        try:
            env.state.set(self.name, upto=total, said=said)
            env.state.set_covering("keeps-count", 0, count=len(said))
        except StoreError:
            if not self.options.swallow:
                raise
        return []

    def build(self, request):
        said = (request.state.get(self.name) or {}).get("said", [])
        note = "Earlier the user said:\\n" + "\\n".join(text for _, text in said)
        parts = [Part("summary", (Message.counted("system", note, request.counter),),
                      TextReason("keeps"))] if said else []
        return assemble(request, parts, budget=self.budget(request))


def register(plugins):
    plugins.add_strategy(Keeps)
'''
"""A plugin that keeps every user message in its state, asking the helper (a summary call)
between reading the history and storing; with `swallow` it catches chatmem's refusal."""


@pytest.fixture
def keeps(installed: Install) -> None:
    installed("chatmem-keeps", "chatmem_keeps", KEEPS, name="keeps")


def kept_turns(store: Store, sid: int) -> list[int]:
    return [number for number, _ in store.memory.strategy_state(sid, "keeps")["said"]]


@pytest.mark.parametrize("swallow", [False, True])
@pytest.mark.usefixtures("keeps")
def test_a_plugin_state_made_across_a_purge_is_dropped_and_made_again_from_the_purged_text(
        make_engine: Callable[..., Engine[Store]], store: Store, history: History,
        swallow: bool) -> None:
    model = ActsWhile("complete")
    engine = make_engine("entity+keeps", provider=model, **{"keeps.swallow": swallow})
    sid = engine.session.id
    engine.run_turn("My city is Zanzibar")
    assert "Zanzibar" in json.dumps(store.memory.strategy_state(sid, "keeps"))
    model.arm(purging(history, sid, "city"), Purpose.SUMMARY)

    result = engine.run_turn("Tell me about Zanzibar beaches, 桑给巴尔 Zanzibar")

    assert model.armed is None  # the purge ran, inside the plugin's helper call
    assert erasure_notices(result.notices) == [
        ErasedWhileUpdating(DerivedMemory.STATE, 2, 2, "keeps")]
    assert not any(isinstance(n, MemoryUpdateFailed) for n in result.notices)
    (said,) = [notice_text(n) for n in erasure_notices(result.notices)]
    assert said.startswith("the memory strategy keeps made after turn 2 was not stored: "
                           "text was erased from this session")
    assert "Zanzibar" not in stored_text(store, sid)
    assert kept_turns(store, sid) == [1]  # neither write of that update was kept
    assert store.memory.strategy_state(sid, "keeps-count")["count"] == 1

    # The next turn's update is given turns 2–3 again and reads them as they are now.
    after = engine.run_turn("我想去海边 — what should I pack?")
    assert erasure_notices(after.notices) == []
    assert kept_turns(store, sid) == [1, 2, 3]
    assert "Zanzibar" not in stored_text(store, sid)
    assert "beaches" in json.dumps(store.memory.strategy_state(sid, "keeps"))
    sent = engine.build_context("what next?").messages()
    assert not any("Zanzibar" in m["content"] for m in sent)


@pytest.mark.usefixtures("keeps")
def test_a_plugin_catching_up_across_a_purge_stores_nothing_and_the_turn_reads_it_again(
        make_engine: Callable[..., Engine[Store]], store: Store, history: History) -> None:
    model = ActsWhile("complete")
    first = make_engine("entity", name="p", provider=model)
    sid = first.session.id
    first.run_turn("I live in Zanzibar")
    assert [f.key for f in store.facts.facts(session_id=sid)] == ["city"]
    engine = make_engine("keeps", name="p", provider=model)
    model.arm(purging(history, sid, "city"), Purpose.SUMMARY)

    caught_up = engine.catch_up()

    assert model.armed is None
    assert erasure_notices(caught_up) == [ErasedWhileUpdating(DerivedMemory.STATE, 1, 1, "keeps")]
    assert store.memory.strategy_state(sid, "keeps") == {}
    engine.run_turn("What is nice to see there? 那里有什么好看的？")
    assert kept_turns(store, sid) == [1, 2]
    assert "Zanzibar" not in stored_text(store, sid)


class FailsAfterPurge(ActsWhile):
    """The purge runs inside the summarizer's call, which then fails."""

    def __init__(self) -> None:
        super().__init__("complete")

    def complete(self, messages: ChatMessages, *, purpose: Purpose = Purpose.CHAT) -> str:
        reply = super().complete(messages, purpose=purpose)
        if purpose is Purpose.SUMMARY:
            raise ProviderResponseError("the summarizer is down")
        return reply


def test_a_built_in_checking_its_own_writes_is_not_checked_again(
        make_engine: Callable[..., Engine[Store]], store: Store, history: History) -> None:
    """A summary whose call fails records being behind, a write that holds no text: a purge
    during the call does not turn that failure into a dropped write (the summary checks the
    erasures it read itself, and only where it stores what it made)."""
    model = FailsAfterPurge()
    engine = make_engine("summary+entity", provider=model)
    sid = engine.session.id
    engine.run_turn("My city is Rome")
    model.arm(purging(history, sid, "city"), Purpose.SUMMARY)

    result = engine.run_turn("Reminder: my city is Rome")

    assert model.armed is None
    assert erasure_notices(result.notices) == []
    assert any(isinstance(n, SummaryFailed) for n in result.notices)
    assert "the summarizer is down" in store.memory.strategy_state(sid, "summary")["behind"]
    assert "Rome" not in stored_text(store, sid)
