"""A secret said once stays out of every later summary, anchor, pin and fact, whoever
repeats it and however many turns later (issue 19, finding 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from registered import open_session

from chatmem.config.settings import Settings
from chatmem.engine import Engine
from chatmem.memory import pins, sensitive_turns
from chatmem.memory.context import Message
from chatmem.memory.history_view import HistoryTurn
from chatmem.memory.sensitive_turns import SENSITIVE_KEY
from chatmem.memory.state import SessionState
from chatmem.notices import SummaryUpdated
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

SECRET = "amber-finch-31"
FILLER = [(f"Small talk {i}: the garden is quiet and the tea is warm.", "Sounds nice.")
          for i in range(6)]
REPEAT = f"It is {SECRET}, on the fridge."
"""The assistant's repeat: nothing in it alone says what it is ("Lake house Wi-Fi:
amber-finch-31" did, once Wi-Fi named a key; issue 28)."""


def _memory(store: Store, engine: Engine) -> str:
    facts = [f"{f.key} {f.value}" for f in store.facts.facts(include_deleted=True)]
    pinned = [f"{p.text} {p.quote}" for p in pins.pinned_facts(store.memory, engine.session.id)]
    summaries = [f"{s.text} {s.anchors} {s.dropped_anchors}"
                 for s in store.memory.summaries(engine.session.id)]
    return "\n".join(facts + pinned + summaries)


def _helper_requests(log: Path) -> str:
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return "\n".join(m["content"] for e in lines if e["purpose"] != "chat"
                     for m in e["messages"])


def _play(engine: Engine, turns: list[tuple[str, str]]) -> list[str]:
    return [n for user, reply in turns for n in engine.replay_turn(user, reply).notices]


def test_the_assistant_repeating_a_password_turns_later_is_never_summarized_or_pinned(
        make_engine, store: Store, tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    engine = make_engine("summary", provider=ScriptedProvider(log_path=log))
    notices = _play(engine, [(f"The lake house wifi password is {SECRET}.", "Noted."),
                             *FILLER,
                             ("What was the wifi again?", REPEAT),
                             *FILLER[:2]])
    assert SECRET not in _memory(store, engine)
    assert SECRET not in _helper_requests(log)
    # The fold of the turn where the assistant repeated it says what was left out.
    assert any(isinstance(n, SummaryUpdated) and "password" in n.sensitive
               for n in notices[len(FILLER) + 1:])
    # The session remembers where the secret was said, never the secret.
    state = store.memory.strategy_state(engine.session.id, SENSITIVE_KEY)
    assert state == {"turns": [1, 8]}


def test_without_the_remembered_turns_the_later_repeat_would_reach_the_summarizer(
        make_engine, store: Store, tmp_path: Path) -> None:
    """What makes the difference is the stored turn list, not luck in the phrasing."""
    log = tmp_path / "calls.jsonl"
    engine = make_engine("summary", provider=ScriptedProvider(log_path=log))
    _play(engine, [(f"The lake house wifi password is {SECRET}.", "Noted."), *FILLER])
    store.memory.set_strategy_state(engine.session.id, SENSITIVE_KEY, {"turns": []})
    _play(engine, [("What was the wifi again?", REPEAT)])
    assert SECRET in _helper_requests(log)


def test_a_pin_the_assistant_suggests_is_no_fact_when_the_user_takes_it(
        make_engine, store: Store, tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    engine = make_engine("entity", provider=ScriptedProvider(log_path=log))
    _play(engine, [("Can you suggest a new PIN for my debit card?",
                    "How about 5830? It is not a date."),
                   ("My new pin is 5830 then.", "Good."),
                   ("My order number is ORD-2291.", "Noted.")])
    facts = {(f.key, f.value) for f in engine.state.live_facts()}
    assert facts == {("order number", "ORD-2291")}
    assert "5830" not in _helper_requests(log)


def test_a_value_given_after_its_label_in_the_turn_before_stays_out(
        make_engine, store: Store, tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    engine = make_engine("summary-buffer", max_tokens=200,
                         provider=ScriptedProvider(log_path=log))
    _play(engine, [("我告诉你储物柜的密码。", "好的，请说。"), ("6172", "记住了。"),
                   *FILLER, ("我的订单号是ORD-55190。", "好的。"), *FILLER])
    assert "6172" not in _memory(store, engine)
    assert "6172" not in _helper_requests(log)
    assert "ORD-55190" in _helper_requests(log)


def _latest_summary(store: Store, engine: Engine) -> str:
    return store.memory.summaries(engine.session.id)[-1].text


def test_a_plate_number_turns_after_a_phone_number_stays_in_later_summaries(
        make_engine, store: Store) -> None:
    engine = make_engine("summary", provider=ScriptedProvider())
    _play(engine, [("我的手机号是13800138000。", "好的。"), ("我喜欢喝龙井茶。", "好的。"),
                   ("我的车牌号是沪A·12345。", "好的。"), ("今天天气不错。", "是的。"),
                   ("周末去杭州。", "好的。")])
    summary = _latest_summary(store, engine)
    assert "沪A·12345" in summary
    assert "13800138000" not in summary


def test_turns_far_apart_are_not_read_as_a_label_and_its_answer(
        make_engine, store: Store) -> None:
    # Turn 1 ends asking for a card number; turn 3, re-read as the turn before a later
    # batch, is not the answer to it: turn 2 came in between.
    engine = make_engine("summary", provider=ScriptedProvider())
    _play(engine, [("My phone is 415-555-0134.", "Noted. What is your card number?"),
                   ("I'd rather not say.", "Fine."), ("My plate is ABC·12345!", "Nice."),
                   ("The weather is fine today.", "It is."), ("We go hiking on Sunday.", "Fun.")])
    summary = _latest_summary(store, engine)
    assert "ABC·12345" in summary
    assert "415-555-0134" not in summary


def test_a_guard_kept_between_folds_forgets_a_turn_taken_out_of_memory(
        make_engine, store: Store) -> None:
    """A fold's guard goes on from what the fold before read (a catch-up re-read every
    earlier secret at each batch); a turn replaced since (/retry) is read as it is now."""
    engine = make_engine("buffer")
    engine.replay_turn("Hello there.", "Hi!")
    engine.replay_turn(f"My wifi password is {SECRET}.", "Noted.")
    sid = engine.session.id
    state = SessionState(store, sid)
    turn_two = engine.history().turns(1, 2)[1]
    turn_three = HistoryTurn(3, (Message("user", f"Was it {SECRET}?", 5),))
    sensitive_turns.remember(state, sensitive_turns.guard_for(state, [turn_two])[0],
                             [turn_two])
    assert sensitive_turns.guard_for(state, [turn_three])[1] == ["Was it ⟦password⟧?"]
    store.turns.hide_turn(sid)  # what /retry does first
    assert sensitive_turns.guard_for(state, [turn_three])[1] == [f"Was it {SECRET}?"]


def test_a_write_grantees_note_does_not_make_the_owners_guard_forget_her_secret(
        team: Any, tmp_path: Path) -> None:
    """PostgreSQL: a note of the turns that said a secret that another role wrote reads as
    absent for the session's owner (p025). Bob's plain SQL writing ann's note (a value, as
    his turn's upsert of it does) made her guard forget her secret while her summary went
    on, and her assistant's bare repeat turns later reached her summarizer; the note is read
    from her history instead."""
    from cli_runner import run
    from grantees import sql_as

    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", "proj", f"The lake house wifi password is {SECRET}.", "--strategy",
        "summary", "--provider", "scripted", code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    assert sql_as(bob, "UPDATE strategy_state SET value = '[]' WHERE strategy = %s"
                       " AND key = 'turns'", [SENSITIVE_KEY]) == 1
    log = tmp_path / "calls.jsonl"
    with Store(ann) as store:
        engine = open_session(store, Settings(), ScriptedProvider(log_path=log), "proj")
        _play(engine, [*FILLER, ("What was the wifi again?", REPEAT)])
    assert SECRET not in _helper_requests(log)


def test_a_fold_asks_once_whether_the_note_is_distrusted_and_reads_it_once(
        team: Any) -> None:
    """PostgreSQL: each fold asked whether the note was another's (p025) up to five times
    (guard_for, then remember before and under its write lock), and while it was, read the
    whole history twice to make it again. Now once before the fold's guard and once under
    the lock it writes in; the history once."""
    from cli_runner import run
    from grantees import sql_as

    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", "proj", f"我家的 wifi 密码是 {SECRET}。", "--strategy", "summary",
        "--provider", "scripted", code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    assert sql_as(bob, "UPDATE strategy_state SET value = '[]' WHERE strategy = %s"
                       " AND key = 'turns'", [SENSITIVE_KEY]) == 1
    said: list[tuple[str, Any]] = []
    with Store(ann) as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "proj")
        store.db.observe = lambda sql, params, _: said.append((sql, params))  # type: ignore
        _play(engine, [*FILLER, ("What was the wifi again?", REPEAT)])
    asked = [sql for sql, params in said if sql.startswith("SELECT 1 FROM strategy_state")
             and SENSITIVE_KEY in params]
    folds = [sql for sql, _ in said if sql.startswith("INSERT INTO summaries")]
    whole = [sql for sql, params in said if sql.startswith("SELECT") and "FROM messages" in sql
             and " AND turn <= " in sql and list(params)[1:2] == [1]]
    # Main: 24 asked over 7 folds, the history from its first turn read 4 times (twice
    # each, said_in_history's two passes); now 9 (7 folds, 2 under the lock) and 2.
    assert folds
    assert len(asked) <= len(folds) + 2
    assert len(whole) <= 2
