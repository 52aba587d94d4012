"""A plugin's recalled messages in a combination with retrieval (dates on): each one goes out
below the line naming the day it was said, worked out on the times of every recalled message,
not only retrieval's; and a plugin's own `said_on` is checked like the rest of what it returns
(a day, not a time; its line counted in the tokens)."""

from __future__ import annotations

from datetime import UTC, date

import pytest
from cli_runner import invoke
from plugin_site import Install

from chatmem.errors import StrategyFailed
from chatmem.memory.context import Context
from chatmem.plugins import load_registries

PICKS = '''
from dataclasses import dataclass, replace
from datetime import date, datetime

from chatmem.memory.assembly import assemble
from chatmem.memory.base import BaseStrategy
from chatmem.memory.context import Message, Part
from chatmem.memory.params import param
from chatmem.memory.reasons import TextReason


@dataclass(frozen=True)
class PicksParams:
    turns: str = param("1", "the turns it recalls, as 1/4")
    day: str = param("", "the day its first recalled message is sent as said on")
    at: str = param("", "or the time (a datetime, wrongly)")
    recount: bool = param(True, "count the day's line into the tokens")
    note: bool = param(False, "also recall a note of its own (not stored), said on `day`")


class Picks(BaseStrategy[PicksParams]):
    name = "picks"
    description = "Recalls the turns it is told to."
    OPTIONS = PicksParams

    def build(self, request):
        options = self.options
        picked = [m for n in options.turns.split("/")
                  for t in request.history.turns(int(n), int(n)) for m in t.messages]
        said = (datetime.fromisoformat(options.at) if options.at
                else date.fromisoformat(options.day) if options.day else None)
        if said is not None and options.note:
            note = Message("user", "笔记 note: 妹妹的机票 tickets", 0, said_on=said)
            picked.append(replace(note, tokens=request.counter.count_message("user", note.sent)))
        elif said is not None:
            first = replace(picked[0], said_on=said)
            if options.recount:
                first = replace(first, tokens=request.counter.count_message(first.role,
                                                                            first.sent))
            picked[0] = first
        return assemble(request, [Part("recalled", tuple(picked), TextReason("picks"))],
                        budget=request.budget)


def register(plugins):
    plugins.add_strategy(Picks)
'''

DAYS = [  # (role, text, when): asked about on 6 May
    ("user", "我妹妹 Alice 下周五到 — my sister Alice arrives next Friday.", "2026-05-01T10:00:00"),
    ("assistant", "Noted, Alice arrives next Friday.", "2026-05-01T10:00:30"),
    ("user", "The zebra exhibit opens the day after tomorrow.", "2026-05-01T10:05:00"),
    ("assistant", "OK.", "2026-05-01T10:05:30"),
    ("user", "I moved the dentist visit to next Tuesday.", "2026-05-03T11:00:00"),
    ("assistant", "Dentist on next Tuesday noted.", "2026-05-03T11:00:30"),
    ("user", "演唱会的票 the concert tickets cost 80 dollars each.", "2026-05-03T11:05:00"),
    ("assistant", "Got it.", "2026-05-03T11:05:30"),
    ("user", "Weather is nice today.", "2026-05-06T09:00:00"),
    ("assistant", "Indeed.", "2026-05-06T09:00:30"),
    ("user", "What do I have planned?", "2026-05-06T09:05:00"),
    ("assistant", "Let me check.", "2026-05-06T09:05:30"),
]
QUESTION = "When does my sister Alice arrive, and the tickets?"
RETRIEVAL = {"retrieval.mode": "bm25", "retrieval.top_k": 1, "retrieval.smooth": 0,
             "retrieval.sitting": 0, "retrieval.later": 0}


def days(make_engine, installed: Install):
    installed("chatmem-picks", "chatmem_picks", PICKS, name="picks")
    engine = make_engine("window")
    engine.zone = UTC
    engine.store.history.import_messages(engine.session.id, [
        {"role": role, "content": text, "ts": at + "+00:00"} for role, text, at in DAYS])
    return engine


def recalled_with(engine, **params: object) -> Context:
    strategy = load_registries().strategies.strategy(
        "picks+retrieval", {k: str(v) for k, v in {**RETRIEVAL, **params}.items()})
    return strategy.build(engine.request(QUESTION))


def lines(engine, context: Context) -> list[tuple[int | None, str, date | None]]:
    recalled = context.part("recalled")
    assert recalled is not None
    # Every message counted as sent, its line included.
    assert all(m.tokens == engine.counter.count_message(m.role, m.sent)
               for m in recalled.messages)
    return [(m.turn, m.role, m.said_on) for m in recalled.messages]


def test_a_message_only_a_plugin_recalled_names_the_later_day_it_was_said(
        make_engine, installed: Install) -> None:
    """It went out under the line of retrieval's earlier day (1 May), with none of its own;
    the replies, said the day their questions were, get none."""
    engine = days(make_engine, installed)
    context = recalled_with(engine, **{"picks.turns": "1/4"})
    assert lines(engine, context) == [
        (1, "user", date(2026, 5, 1)), (1, "assistant", None),
        (4, "user", date(2026, 5, 3)), (4, "assistant", None)]
    assert context.tokens <= context.budget and not context.over_budget


def test_a_plugins_own_day_stays_where_it_still_opens_a_run(
        make_engine, installed: Install) -> None:
    """The plugin's line (its turn 3, said on 3 May) was taken off: retrieval knew no time
    for it. A day that is not the one stored is the stored one (the user's, in their zone)."""
    engine = days(make_engine, installed)
    for day in ("2026-05-03", "2026-04-20"):
        context = recalled_with(engine, **{"picks.turns": "3", "picks.day": day})
        assert lines(engine, context) == [
            (1, "user", date(2026, 5, 1)), (3, "user", date(2026, 5, 3)),
            (3, "assistant", None)], day
    # A message of its own, not stored, is refused before it is sent (recalled parts hold
    # stored messages only, README: text of its own goes in a summary or facts part).
    with pytest.raises(StrategyFailed, match="not a stored one"):
        recalled_with(engine, **{"picks.turns": "4", "picks.day": "2026-05-02",
                                 "picks.note": True})


def test_a_plugins_said_on_that_is_a_time_or_left_out_of_its_tokens_is_one_line(
        installed: Install, tmp_path) -> None:
    """A datetime was sent with its time and lost from the stored context; a line not
    counted made the footer say 65 tokens of what the provider counted 78."""
    installed("chatmem-picks", "chatmem_picks", PICKS, name="picks")
    db = str(tmp_path / "h.db")
    invoke("chat", "c", "-s", "window", "--provider", "scripted", "--db", db,
           input="我妹妹下周五到 my sister arrives next Friday\nok\n", code=0)
    by = "(plugin picks (chatmem-picks 0.1.0))"
    wrong = {"picks:at=2026-05-01T10:00:00": "a message said on datetime, not a datetime.date",
             "picks:day=2026-05-01,recount=false":
                 "a message said on 2026-05-01 of 20 tokens, fewer than the 29 of its text "
                 "with the day's line above it"}
    for spec, returned in wrong.items():
        for strategy in (spec, spec.replace("picks:", "picks+retrieval:picks.")
                         .replace(",", ",picks.")):
            done = invoke("inspect", "c", "--next", "妹妹?", "-s", strategy, "--provider",
                          "scripted", "--db", db)
            assert done.exit_code != 0 and "Traceback" not in done.output, strategy
            assert done.stderr.splitlines() == [
                f"error: strategy 'picks' failed: its build returned a 'recalled' part "
                f"holding {returned} {by}"], strategy
    fine = invoke("inspect", "c", "--next", "妹妹?", "-s", "picks:day=2026-05-01", "--json",
                  "--provider", "scripted", "--db", db, code=0)
    assert "[2026-05-01 Friday]" in fine.stdout
