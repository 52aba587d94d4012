"""Whose summary the owner of a shared PostgreSQL session goes on from: a write share's
grantee's turns write the strategy's state (his upkeep), which she does not trust (p025),
yet her own summaries stay hers, so her next update folds only what they do not cover."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pytest
from cli_runner import run
from pg import Team
from registered import open_session

from chatmem.config.sections import EmbeddingsSection, SummarySection
from chatmem.config.settings import Settings
from chatmem.errors import TurnNotReplaceable
from chatmem.memory import pins
from chatmem.providers.base import ChatMessages, Purpose
from chatmem.providers.scripted import RULES, ScriptedProvider
from chatmem.providers.scripted_summary import extractive_summary
from chatmem.store import Store

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

SAID = {"en": ("Ann turn {n}: I paid {n}0 EUR on 2026-03-{d:02d}.", "Bob says {n}: ORD-{n}."),
        "zh": ("安娜第{n}轮：我在2026-03-{d:02d}付了{n}0欧元。", "鲍勃说{n}：订单ORD-{n}。")}


class Counting(ScriptedProvider):
    """A scripted model that keeps the characters each summary request sends."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[int] = []

    def complete(self, messages: Any, *, purpose: Purpose = Purpose.CHAT) -> str:
        if purpose is Purpose.SUMMARY:
            self.sent.append(sum(len(str(m.get("content", ""))) for m in messages))
        return super().complete(messages, purpose=purpose)


def her_summaries(team: Team) -> list[tuple[list[int], int]]:
    """Ann's own summary versions, oldest first: (covered message ids, last message id)."""
    return [(json.loads(c), int(last)) for c, last in team.rows(
        "SELECT covered_ids, last_message_id FROM summaries WHERE writer = 'ann'"
        " ORDER BY version")]


@pytest.mark.parametrize("strategy", ["summary", "summary-buffer"])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_her_turns_after_a_grantees_go_on_from_her_own_summary(
        team: Team, language: str, strategy: str) -> None:
    """On main her first turn after each of his re-summarized her whole history: 50 turns
    (his every 5th) sent her summarizer 60,485 characters, the turn after his ~5,100 and
    growing with the history; now ~1,100 each."""
    settings = Settings(system="", embeddings=EmbeddingsSection(provider="none"))
    params = {"max_tokens": "200"} if strategy == "summary-buffer" else {}
    hers, his = SAID[language]
    ann_model, bob_model = Counting(), Counting()
    with Store(team.url("ann")) as ann_store, Store(team.url("bob")) as bob_store:
        ann = open_session(ann_store, settings, ann_model, "proj", strategy=strategy,
                           params=params)
        ann.run_turn(hers.format(n=1, d=1))
        run(team.url("ann"), "sessions", "share", "proj", "--with", "bob", "--write", code=0)
        bob = open_session(bob_store, settings, bob_model, "ann/proj")
        for n in range(2, 31):
            if n % 5 == 0:
                bob.run_turn(his.format(n=n))
            else:
                ann.run_turn(hers.format(n=n, d=n % 28 + 1))
        assert bob_model.sent  # his turns keep his own summary up
        # Each version of hers folds only messages after the last one it went on from.
        versions = her_summaries(team)
        assert len(versions) > 3
        for (_, before), (covered, _) in pairwise(versions):
            assert min(covered) > before
        # What her next turn sends is her own latest summary, never a text he wrote.
        (latest,), = team.rows("SELECT text FROM summaries WHERE writer = 'ann'"
                               " ORDER BY version DESC LIMIT 1")
        context = ann.build_context("what did I pay?")
        summary = [m.content for p in context.parts if p.kind == "summary" for m in p.messages]
        assert len(summary) == 1 and latest in summary[0]
        theirs = [t for t, in team.rows("SELECT text FROM summaries WHERE writer = 'bob'")]
        assert theirs and all(t not in summary[0] for t in theirs if t != latest)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_her_own_summary_still_refuses_replacing_the_turn_it_covers(
        team: Team, language: str) -> None:
    """Her update goes on from her own summary, so that summary holds her last turn even once
    his SQL wrote the strategy's state: her /retry of it would leave the old reply in it."""
    settings = Settings(system="", embeddings=EmbeddingsSection(provider="none"))
    hers = SAID[language][0]
    with Store(team.url("ann")) as store:
        ann = open_session(store, settings, ScriptedProvider(), "proj", strategy="summary")
        ann.run_turn(hers.format(n=1, d=1))
        ann.run_turn(hers.format(n=2, d=2))
        run(team.url("ann"), "sessions", "share", "proj", "--with", "bob", "--write", code=0)
        with psycopg.connect(team.url("bob"), autocommit=True) as conn:
            conn.execute("INSERT INTO strategy_state (session_id, strategy, key, value)"
                         " VALUES (%s, 'summary', 'released', '0') ON CONFLICT"
                         " (session_id, strategy, key) DO UPDATE SET value = '0'",
                         [ann.session.id])
        assert store.memory.strategy_state(ann.session.id, "summary") == {}
        with pytest.raises(TurnNotReplaceable) as refused:
            store.turns.replaceable_turn(ann.session.id)
        assert "summary" in str(refused.value)


VAGUE = {"en": ("We budget 5000 EUR.", "5000 EUR", "a budget"),
         "zh": ("我们的预算是五千元。", "五千元", "一笔预算")}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_her_pins_outlive_a_grantees_turn_and_his_stay_out(
        team: Team, language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The drift guard's pins are in the strategy's state, which his turn's upkeep rewrites:
    going on from her own summary, she would send neither them nor his; they are what her
    own versions dropped (bare), less what she unpinned."""
    said, anchor, vague = VAGUE[language]

    def summary(messages: ChatMessages) -> str:
        return extractive_summary(messages).replace(anchor, vague).replace("ORD-7", "order 7")

    monkeypatch.setitem(RULES, "summary", summary)
    settings = Settings(system="", embeddings=EmbeddingsSection(provider="none"))
    hers = SAID[language][0]
    with Store(team.url("ann")) as ann_store, Store(team.url("bob")) as bob_store:
        ann = open_session(ann_store, settings, ScriptedProvider(), "proj", strategy="summary")
        for text in (hers.format(n=1, d=1), said, "ORD-7731", hers.format(n=4, d=4)):
            ann.run_turn(text)
        facts = ann.build_context("?").part("facts")
        assert facts is not None and anchor in facts.messages[0].content
        # She unpins the order id: it stays out after his turn too.
        (order,) = pins.find_pins(pins.pinned_facts(ann_store.memory, ann.session.id),
                                  "ORD-7731")
        pins.unpin(ann_store, order)
        run(team.url("ann"), "sessions", "share", "proj", "--with", "bob", "--write", code=0)
        bob = open_session(bob_store, settings, ScriptedProvider(), "ann/proj")
        bob.run_turn(SAID[language][1].format(n=5))
        mallory = json.dumps([["马洛里", 1, None, None, ""]], ensure_ascii=False)
        with psycopg.connect(team.url("bob"), autocommit=True) as conn:
            conn.execute("UPDATE strategy_state SET value = %s WHERE session_id = %s"
                         " AND strategy = 'summary' AND key = 'pinned'",
                         [mallory, ann.session.id])
        for _ in range(2):  # before her next turn, and after it (her state again)
            facts = ann.build_context("?").part("facts")
            assert facts is not None
            assert anchor in facts.messages[0].content
            assert "马洛里" not in facts.messages[0].content
            assert "ORD-7731" not in facts.messages[0].content
            ann.run_turn(hers.format(n=6, d=6))
        # Nor does his SQL emptying her unpins bring the order id back.
        with psycopg.connect(team.url("bob"), autocommit=True) as conn:
            assert conn.execute("UPDATE strategy_state SET value = '[]' WHERE session_id = %s"
                                " AND strategy = 'summary' AND key = 'unpinned'",
                                [ann.session.id]).rowcount == 1
        facts = ann.build_context("?").part("facts")
        assert facts is None or "ORD-7731" not in facts.messages[0].content


@pytest.mark.parametrize("language", ["en", "zh"])
def test_no_pins_rebuilt_after_a_grantees_turn_with_the_drift_guard_off(
        team: Team, language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Her pins are rebuilt from what her own versions dropped, which they record whatever
    the guard: with `[summary] drift_guard` off she had no pins, and his turn must not give
    her some (before her next turn, and after it, her state again)."""
    said, anchor, vague = VAGUE[language]

    def summary(messages: ChatMessages) -> str:
        return extractive_summary(messages).replace(anchor, vague)

    monkeypatch.setitem(RULES, "summary", summary)
    settings = Settings(system="", embeddings=EmbeddingsSection(provider="none"),
                        summary=SummarySection(drift_guard=False))
    hers = SAID[language][0]
    with Store(team.url("ann")) as ann_store, Store(team.url("bob")) as bob_store:
        ann = open_session(ann_store, settings, ScriptedProvider(), "proj", strategy="summary")
        for text in (hers.format(n=1, d=1), said, hers.format(n=3, d=3)):
            ann.run_turn(text)
        (dropped,), = team.rows("SELECT dropped_anchors FROM summaries WHERE writer = 'ann'"
                                " ORDER BY version LIMIT 1 OFFSET 1")
        assert anchor in json.loads(dropped)  # recorded, not pinned
        assert ann.build_context("?").part("facts") is None
        run(team.url("ann"), "sessions", "share", "proj", "--with", "bob", "--write", code=0)
        bob = open_session(bob_store, settings, ScriptedProvider(), "ann/proj")
        bob.run_turn(SAID[language][1].format(n=4))
        for _ in range(2):
            assert ann.build_context("?").part("facts") is None
            ann.run_turn(hers.format(n=5, d=5))
        assert pins.pinned_facts(ann_store.memory, ann.session.id) == []
