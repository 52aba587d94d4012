"""Days are the user's: a message chatmem stamped 23:30 UTC was said on Saturday morning in
Shanghai, and "yesterday" asked there at 07:40 is Friday (the `timezone` setting, else the
system's zone: $TZ here)."""

from __future__ import annotations

from datetime import date
from zoneinfo import ZoneInfo

import pytest
from asked import asked_after

from chatmem.config.loader import load_settings
from chatmem.errors import ConfigError
from chatmem.memory.context import Message
from chatmem.memory.recall_days import stored_times

EN = ["I booked the dentist for next Friday at three.", "Noted: dentist next Friday.",
      "I bought a new umbrella.", "A good buy.",
      "Tomorrow I fly to Beijing for a meeting at nine.", "Have a good trip to Beijing.",
      "Nice weather today.", "Enjoy it."]
ZH = ["我约了下周五下午三点看牙医。", "记下了：下周五看牙医。", "我买了一把新雨伞。", "买得好。",
      "明天我要去北京开会，会议在早上九点。",
      "祝你去北京一路顺利。", "今天天气不错。", "好好享受。"]
# As chatmem stamps them, in UTC: Thursday and Friday 17:00, then Saturday 07:30 and 09:00
# in Shanghai.
TIMES = ["2026-12-03T09:00:00+00:00", "2026-12-03T09:01:00+00:00",
         "2026-12-04T09:00:00+00:00", "2026-12-04T09:01:00+00:00",
         "2026-12-04T23:30:00+00:00", "2026-12-04T23:31:00+00:00",
         "2026-12-05T01:00:00+00:00", "2026-12-05T01:01:00+00:00"]
ASKED = {"en": "When do I fly to Beijing for the meeting?", "zh": "我什么时候去北京开会？"}
YESTERDAY = {"en": "What did I say yesterday?", "zh": "我昨天说了什么？"}


def session(make_engine, monkeypatch, zone: str, texts: list[str], upto: int = 8):
    monkeypatch.setenv("TZ", zone)
    engine = make_engine("retrieval", mode="bm25", max_tokens=400)
    engine.store.history.import_messages(engine.session.id, [
        {"role": ("user", "assistant")[i % 2], "content": texts[i], "ts": TIMES[i]}
        for i in range(upto)])
    asked_after(engine.store, engine.session.id)
    return engine


@pytest.mark.parametrize("language, texts", [("en", EN), ("zh", ZH)])
@pytest.mark.parametrize("zone, said_on", [("Asia/Shanghai", (None, date(2026, 12, 5))),
                                           ("UTC", (date(2026, 12, 4),))])
def test_a_recalled_message_names_the_users_day_it_was_said(
        make_engine, monkeypatch, language: str, texts: list[str], zone: str,
        said_on: tuple[date | None, ...]) -> None:
    engine = session(make_engine, monkeypatch, zone, texts)
    recalled = engine.build_context(ASKED[language]).part("recalled")
    assert recalled is not None
    # The day the model reads each message as said on: its run's line (none: today).
    read_as: dict[str, date | None] = {}
    day = None
    for m in recalled.messages:
        day = m.said_on or day
        read_as[m.content] = day
    # Said at 07:30 in Shanghai on the day of the newest message (09:00): today there,
    # named only after an earlier day's run; in UTC it was the day before.
    assert read_as[texts[4]] in said_on
    assert read_as.get(texts[0], date(2026, 12, 3)) == date(2026, 12, 3)


@pytest.mark.parametrize("language, texts", [("en", EN), ("zh", ZH)])
@pytest.mark.parametrize("zone, day", [("Asia/Shanghai", "2026-12-04"),
                                       ("UTC", "2026-12-03")])
def test_yesterday_is_the_users_yesterday_before_eight_in_the_morning(
        make_engine, monkeypatch, language: str, texts: list[str], zone: str,
        day: str) -> None:
    # The newest message is from 07:31 on Saturday in Shanghai, Friday 23:31 in UTC.
    engine = session(make_engine, monkeypatch, zone, texts, upto=6)
    recalled = engine.build_context(YESTERDAY[language]).part("recalled")
    assert recalled is not None
    assert recalled.reason.times_named == ((day, day),)


def test_the_timezone_setting_names_the_zone_and_a_wrong_one_is_refused(
        tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    config = tmp_path / "config.toml"
    config.write_text('timezone = "Asia/Shanghai"\n', encoding="utf-8")
    settings = load_settings(config)
    assert str(settings.zone) == "Asia/Shanghai"
    monkeypatch.setenv("CHATMEM_TIMEZONE", "Europe/Paris")
    assert str(load_settings(config).zone) == "Europe/Paris"
    monkeypatch.setenv("CHATMEM_TIMEZONE", "Mars/Olympus")
    with pytest.raises(ConfigError, match=r"CHATMEM_TIMEZONE.*Mars/Olympus"):
        load_settings(config)
    monkeypatch.delenv("CHATMEM_TIMEZONE")
    config.write_text('timezone = "上海"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"config\.toml: key 'timezone'.*上海"):
        load_settings(config)


DAYS = [("2026-03-07", "I repainted the garden fence blue.", "我把花园的篱笆漆成了蓝色。"),
        ("2026-03-07", "Blue suits the garden.", "蓝色很配花园。"),
        ("2026-03-08", "I baked a lemon cake for Mira.", "我给米拉烤了一个柠檬蛋糕。"),
        ("2026-03-08", "Mira will love the cake.", "米拉会喜欢蛋糕的。"),
        ("2026-03-10", "The printer jammed again.", "打印机又卡纸了。"),
        ("2026-03-10", "Try a fresh ream of paper.", "换一包新纸试试。")]
ON_THE_8TH = {"en": "What did I do on March 8?", "zh": "我3月8日做了什么？"}


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("zone", ["America/Los_Angeles", "UTC", "Asia/Tokyo", "Pacific/Honolulu",
                                  "Asia/Shanghai", "Pacific/Auckland", "Pacific/Kiritimati"])
def test_a_date_alone_names_that_day_in_the_users_zone(
        make_engine, monkeypatch, language: str, zone: str) -> None:
    # A transcript dated by day: read as midnight UTC, west of UTC every message was said the
    # day before, and asked about March 8 recall found what was said on the 7th; read as noon
    # UTC, from UTC+12 on (Auckland's summer, Kiritimati) it was the day after.
    monkeypatch.setenv("TZ", zone)
    engine = make_engine("retrieval", mode="bm25", max_tokens=400)
    column = 1 if language == "en" else 2
    engine.store.history.import_messages(engine.session.id, [
        {"role": ("user", "assistant")[i % 2], "content": day[column], "ts": day[0]}
        for i, day in enumerate(DAYS)])
    asked_after(engine.store, engine.session.id)
    recalled = engine.build_context(ON_THE_8TH[language]).part("recalled")
    assert recalled is not None
    assert recalled.reason.times_named == (("2026-03-08", "2026-03-08"),)
    read_as: dict[str, date | None] = {}
    day = None
    for m in recalled.messages:
        day = m.said_on or day
        read_as[m.content] = day
    assert read_as[DAYS[2][column]] == date(2026, 3, 8)
    assert all(read_as[d[column]] == date.fromisoformat(d[0]) for d in DAYS[:4]
               if d[column] in read_as)


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "Pacific/Auckland", "Asia/Shanghai",
                                  "America/Los_Angeles", "Pacific/Pago_Pago"])
def test_a_combination_reads_a_date_alone_as_that_day_in_the_users_zone(
        make_engine, zone: str) -> None:
    # What a combination's members recalled without dating it is read from the history.
    engine = make_engine("retrieval", mode="bm25")
    engine.store.history.import_messages(engine.session.id, [
        {"role": ("user", "assistant")[i % 2], "content": day[2], "ts": day[0]}
        for i, day in enumerate(DAYS)])
    stored = engine.store.history.messages(engine.session.id)
    messages = [Message(r.role, r.content, 1, r.id, r.turn) for r in stored]
    times = stored_times(engine.state, messages, ZoneInfo(zone))
    assert {r.id: times[r.id].date() for r in stored} == {
        r.id: date.fromisoformat(day[0]) for r, day in zip(stored, DAYS, strict=True)}
