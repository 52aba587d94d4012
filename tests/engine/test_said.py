"""An input is read on the day it is said: on the first message of a new day, "yesterday" is the
day before that one (not the day before the previous chat's) and a message recalled from the
previous chat's day goes out below that day's line (its "tomorrow" is not read as today's)."""

from __future__ import annotations

import json
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

import pytest
from asked import asked_at
from cli_runner import invoke
from registered import open_session, parse_spec

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.engine.resend import resend_last
from chatmem.evaluation.replay import replay
from chatmem.memory.assembly import assemble
from chatmem.memory.base import BaseStrategy, ContextRequest, MemoryEnv
from chatmem.memory.context import Context
from chatmem.memory.params import NoParams
from chatmem.memory.registry import StrategyRegistry
from chatmem.notices import Notice
from chatmem.plugins import Registries
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store
from chatmem.transcripts.reader import parse_transcript

SHANGHAI = ZoneInfo("Asia/Shanghai")
LOCKER = "My gym locker is number 42."
MEETING = {"zh": "明天下午三点我要和李雷见面。", "en": "Tomorrow at three I am meeting Li Lei."}
YESTERDAY = {"zh": "昨天我说了什么？", "en": "What did I say yesterday?"}
WHEN = {"zh": "我什么时候和李雷见面？", "en": "When am I meeting Li Lei?"}
# 15:00 on 3 and 4 March, then 09:00 on the 5th, in Shanghai.
DAY1, DAY2, DAY3 = "2026-03-03T15:00:00+08:00", "2026-03-04T15:00:00+08:00", \
    "2026-03-05T09:00:00+08:00"


def chatted(make_engine, language: str, *, locker: bool = True):
    engine = make_engine("retrieval", mode="bm25", recent=0)
    engine.zone = SHANGHAI
    for at, text in ([(DAY1, LOCKER)] if locker else []) + [(DAY2, MEETING[language])]:
        asked_at(engine.store, at)
        engine.run_turn(text)
    asked_at(engine.store, DAY3)
    return engine


@pytest.mark.parametrize("language", ["zh", "en"])
def test_yesterday_on_the_first_message_of_a_day_is_the_day_before_it(
        make_engine, language: str) -> None:
    engine = chatted(make_engine, language)
    recalled = engine.build_context(YESTERDAY[language]).part("recalled")
    assert recalled is not None
    assert recalled.reason.times_named == (("2026-03-04", "2026-03-04"),)
    assert MEETING[language] in [m.content for m in recalled.messages]
    # The turn sent then reads it so too, and is stamped when it was said.
    result = engine.run_turn(YESTERDAY[language])
    reason = result.context.part("recalled").reason
    assert reason.times_named == (("2026-03-04", "2026-03-04"),)
    stored = engine.store.history.messages(engine.session.id)[-2]
    assert stored.content == YESTERDAY[language] and stored.created_at.startswith("2026-03-05T01")


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_message_from_the_previous_chats_day_names_its_day(make_engine, language: str) -> None:
    engine = chatted(make_engine, language, locker=False)
    recalled = engine.build_context(WHEN[language]).part("recalled")
    assert recalled is not None and recalled.messages[0].content == MEETING[language]
    assert recalled.messages[0].said_on == date(2026, 3, 4)
    assert recalled.messages[0].sent.startswith("[2026-03-04 Wednesday]\n")


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_retried_turn_is_read_on_the_day_it_is_sent_again(make_engine, language: str) -> None:
    engine = chatted(make_engine, language)
    engine.run_turn(YESTERDAY[language])
    asked_at(engine.store, "2026-03-05T09:05:00+08:00")
    retried = resend_last(engine)
    # Its own first try left memory: the newest stored message is of the 4th, not "today".
    assert retried.context.part("recalled").reason.times_named == (("2026-03-04",
                                                                     "2026-03-04"),)


def transcript(language: str, *later: tuple[str, str], dates: bool = False) -> str:
    """Three days' chat; `dates`: dated by day alone (`2026-03-03`), as some exporters do."""
    lines = [{"chatmem": 1}]
    for n, (at, text) in enumerate([(DAY1, LOCKER), (DAY2, MEETING[language]),
                                    (DAY3, YESTERDAY[language]), *later], 1):
        at = at[:10] if dates else at
        lines += [{"role": "user", "content": text, "id": f"u{n}", "ts": at},
                  {"role": "assistant", "content": "OK.", "id": f"a{n}", "ts": at}]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_replay_reads_each_input_on_the_transcripts_clock(
        store: Store, language: str) -> None:
    replay(parse_transcript(transcript(language), "t.jsonl"),
           [parse_spec("retrieval:mode=bm25,recent=0")],
           chat_provider=ScriptedProvider(), store=store, save_as="r", zone=SHANGHAI)
    session = store.sessions.session("r")
    last = store.turns.turns(session.id)[-1]
    reason = Context.from_json(last.context).part("recalled").reason
    assert reason.times_named == (("2026-03-04", "2026-03-04"),)


def what_if_at_turn_3(tmp_path: Path, path: Path) -> list[dict[str, Any]]:
    """The parts `inspect --turn 3` would send under words-only recall, the transcript at
    `path` imported first."""
    db = str(tmp_path / "t.db")
    invoke("sessions", "import", str(path), "会话", "--no-index", "--db", db, code=0)
    shown = invoke("inspect", "会话", "--turn", "3", "--strategy",
                   "retrieval:mode=bm25,recent=0", "--provider", "scripted", "--json",
                   "--db", db, code=0)
    parts: list[dict[str, Any]] = json.loads(shown.stdout)["context"]["parts"]
    return parts


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_what_if_at_a_stored_turn_reads_it_on_that_turns_day(
        tmp_path: Path, monkeypatch, language: str) -> None:
    monkeypatch.setenv("CHATMEM_TIMEZONE", "Asia/Shanghai")
    path = tmp_path / "t.jsonl"
    # A turn on a later day: the what-if at turn 3 is still read on the 5th.
    path.write_text(transcript(language, ("2026-03-07T10:00:00+08:00", "OK, thanks.")),
                    encoding="utf-8")
    parts = what_if_at_turn_3(tmp_path, path)
    assert any("the input names 4 Mar 2026" in part["reason"] for part in parts)


DAY_ZONES = ["Pacific/Auckland", "Pacific/Kiritimati", "America/Los_Angeles", "Asia/Shanghai"]


@pytest.mark.parametrize("language", ["zh", "en"])
@pytest.mark.parametrize("zone", DAY_ZONES)
def test_a_replay_reads_a_date_alone_as_that_day_in_the_users_zone(
        store: Store, language: str, zone: str) -> None:
    # Read as noon UTC, the 5th was the 6th from UTC+12 on, and its "yesterday" the 5th.
    replay(parse_transcript(transcript(language, dates=True), "t.jsonl"),
           [parse_spec("retrieval:mode=bm25,recent=0")],
           chat_provider=ScriptedProvider(), store=store, save_as="r", zone=ZoneInfo(zone))
    session = store.sessions.session("r")
    last = store.turns.turns(session.id)[-1]
    recalled = Context.from_json(last.context).part("recalled")
    assert recalled.reason.times_named == (("2026-03-04", "2026-03-04"),)
    assert MEETING[language] in [m.content for m in recalled.messages]
    assert {m.said_on for m in recalled.messages} <= {date(2026, 3, 3), date(2026, 3, 4), None}


@pytest.mark.parametrize("language", ["zh", "en"])
@pytest.mark.parametrize("zone", DAY_ZONES)
def test_a_what_if_reads_a_turn_dated_by_day_on_that_day_in_the_users_zone(
        tmp_path: Path, monkeypatch, language: str, zone: str) -> None:
    monkeypatch.setenv("CHATMEM_TIMEZONE", zone)
    path = tmp_path / "t.jsonl"
    path.write_text(transcript(language, ("2026-03-07", "OK, thanks."), dates=True),
                    encoding="utf-8")
    parts = what_if_at_turn_3(tmp_path, path)
    assert any("the input names 4 Mar 2026" in part["reason"] for part in parts)
    said_on = {m["content"]: m.get("said_on") for part in parts for m in part["messages"]}
    assert said_on[MEETING[language]] == "2026-03-04"


class Clock(BaseStrategy[NoParams]):
    """A plugin's strategy reading when each input is said, as the README says it may."""

    name = "clock"
    description = "Sends nothing; notes each request's said_at and zone."
    OPTIONS = NoParams
    seen: ClassVar[list[tuple[str, datetime, tzinfo]]] = []
    updated_in: ClassVar[list[tzinfo]] = []

    def build(self, request: ContextRequest) -> Context:
        # As a plugin does: no check for None (the README promises a time).
        Clock.seen.append((request.input.content, request.said_at.astimezone(request.zone),
                           request.said_at))
        return assemble(request, [], budget=self.budget(request))

    def update(self, env: MemoryEnv) -> list[Notice]:
        Clock.updated_in.append(env.zone)
        return []


def clock_registry() -> StrategyRegistry:
    strategies = Registries(entry_points=list).strategies
    strategies.add(Clock)
    Clock.seen.clear()
    Clock.updated_in.clear()
    return strategies


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_strategy_gets_a_time_for_a_probe_and_an_untimed_input(
        store: Store, language: str) -> None:
    lines = [json.loads(line) for line in transcript(language).splitlines()]
    # A probe after the 4th's chat, and an input of the 5th exported without its time.
    lines.insert(5, {"probe": WHEN[language], "expect_text": ["Li Lei" if language == "en"
                                                              else "李雷"]})
    del lines[-2]["ts"]
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    strategies = clock_registry()
    replay(parse_transcript(text, "t.jsonl"), [strategies.parse("clock")],
           chat_provider=ScriptedProvider(), store=store, zone=SHANGHAI, strategies=strategies)
    said = {question: at for question, _, at in Clock.seen}
    # Both read as when the newest message stored was: the 4th's reply, 15:00 there.
    assert said[WHEN[language]] == datetime(2026, 3, 4, 15, tzinfo=SHANGHAI)
    assert said[YESTERDAY[language]] == datetime(2026, 3, 4, 15, tzinfo=SHANGHAI)


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_turns_said_at_is_in_the_users_zone(store: Store, language: str) -> None:
    settings = Settings(embeddings=EmbeddingsSection(provider="none"))
    engine = open_session(store, settings, ScriptedProvider(), "钟", strategy="clock",
                          strategies=clock_registry())
    engine.zone = SHANGHAI
    asked_at(store, "2026-03-05T07:00:00+08:00")  # still the 4th in UTC
    engine.run_turn(MEETING[language])
    engine.build_context(WHEN[language])
    for _, _, said in Clock.seen:
        assert said == datetime(2026, 3, 5, 7, tzinfo=SHANGHAI)
        # The day history.said_at dates this turn's messages by, as a plugin compares them.
        assert said.utcoffset() == SHANGHAI.utcoffset(said) and said.date() == date(2026, 3, 5)
    assert len(Clock.seen) == 2


@pytest.mark.parametrize("language", ["zh", "en"])
def test_an_update_is_told_the_users_zone_in_a_replay_as_in_a_chat(
        store: Store, language: str) -> None:
    strategies = clock_registry()
    replay(parse_transcript(transcript(language), "t.jsonl"), [strategies.parse("clock")],
           chat_provider=ScriptedProvider(), store=store, zone=SHANGHAI, strategies=strategies)
    settings = Settings(embeddings=EmbeddingsSection(provider="none"), timezone="Asia/Shanghai")
    open_session(store, settings, ScriptedProvider(), "钟", strategy="clock",
                 strategies=strategies).run_turn(MEETING[language])
    # Three replayed turns (no settings there), then the chat's.
    assert Clock.updated_in == [SHANGHAI] * 4
