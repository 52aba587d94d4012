"""One timestamp format and one parser: stored times round-trip, and the parser reads what the
three parsers it replaced read (the store's pause, retention's and the fact table's)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmem.render import when
from chatmem.store.recall import UNKNOWN_PAUSE, pause
from chatmem.timestamps import (
    dated_time,
    has_zone,
    is_time,
    local_moment,
    local_moments,
    parse_time,
    stamp,
    stamp_seconds,
)

moments = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                       timezones=st.sampled_from([UTC, timezone(timedelta(hours=8)),
                                                  timezone(timedelta(hours=-5, minutes=-30))]))


def old_pause_parse(text: str) -> datetime | None:
    """store/recall.py's parser before this module: a naive time was unreadable."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else None


def old_stamp_parse(text: str) -> datetime:
    """store/retention.py's parse_stamp and render/facts.py's _utc: a naive time was UTC."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@st.composite
def iso_texts(draw: st.DrawFn) -> str:
    """The forms a stored or imported time takes: chatmem's own, `Z`, an offset, no zone."""
    moment = draw(moments)
    spec = draw(st.sampled_from(["seconds", "milliseconds", "microseconds", "minutes"]))
    text = moment.isoformat(timespec=spec)
    zone = draw(st.sampled_from(["keep", "Z", "naive"]))
    if zone == "Z":
        return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec=spec) + "Z"
    if zone == "naive":
        return moment.replace(tzinfo=None).isoformat(timespec=spec)
    return text


@given(moments)
def test_a_stored_time_reads_back_as_the_same_instant_to_the_millisecond(moment: datetime) -> None:
    text = stamp(moment)
    read = parse_time(text)
    assert read.utcoffset() == timedelta(0)
    assert abs(read - moment) < timedelta(milliseconds=1)
    assert stamp(read) == text


@given(iso_texts())
def test_the_parser_agrees_with_the_parsers_it_replaced(text: str) -> None:
    read = parse_time(text)
    assert read.tzinfo is not None
    assert read == old_stamp_parse(text)
    assert has_zone(text) is (old_pause_parse(text) is not None)
    if has_zone(text):
        assert read == old_pause_parse(text)


@given(iso_texts(), iso_texts())
def test_pause_is_unknown_unless_both_times_name_their_zone(before: str, at: str) -> None:
    old_start, old_end = old_pause_parse(before), old_pause_parse(at)
    expected = (UNKNOWN_PAUSE if old_start is None or old_end is None
                else (old_end - old_start).total_seconds())
    assert pause(before, at) == expected


@pytest.mark.parametrize("text", ["", "not a date", "2024-13-45T99:99:99", "2026-01-01Z",
                                  "2026-01-01T00:00:00z", "二〇二六年一月一日"])
def test_text_that_is_not_an_iso_time_is_refused(text: str) -> None:
    assert not is_time(text)
    assert not has_zone(text)
    with pytest.raises(ValueError):
        parse_time(text)
    assert pause(text, "2026-01-01T00:00:00Z") == UNKNOWN_PAUSE


def test_a_naive_time_is_read_as_utc_but_draws_no_pause() -> None:
    assert parse_time("2026-01-05T08:00:00") == datetime(2026, 1, 5, 8, tzinfo=UTC)
    assert pause("2026-01-05T08:00:00", "2026-01-05T09:00:00Z") == UNKNOWN_PAUSE
    assert pause("2026-01-05T08:00:00+08:00", "2026-01-05T01:00:00Z") == 3600.0


@given(moments)
def test_a_shown_time_is_the_stored_one_cut_to_the_second(moment: datetime) -> None:
    shown = stamp_seconds(moment)
    assert shown == moment.astimezone(UTC).isoformat(timespec="seconds")
    assert stamp(moment).startswith(shown[:19]) and shown.endswith("+00:00")
    assert parse_time(shown) == parse_time(stamp(moment)).replace(microsecond=0)


@given(moments)
def test_a_dated_time_moves_into_any_zone(moment: datetime) -> None:
    """Within years 2–9998 a stored time is dated, and a day either way stays in the calendar;
    at the edges (an exporter's zero time) it is undated, never an OverflowError later."""
    text = moment.isoformat()
    found = dated_time(text)
    if found is None:
        assert moment.astimezone(UTC).year in (1, 9999)
    else:
        assert found == moment
        for hours in (-24, 24):
            found.astimezone(timezone(timedelta(hours=hours * 23 / 24)))


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00+05:45",
                                  "9999-12-31T23:59:59-05:00", "0001-01-01", "", None, "不是"])
def test_a_time_at_the_calendars_edge_or_unread_is_undated(text: str | None) -> None:
    assert dated_time(text) is None


@pytest.mark.parametrize("text", ["2026-03-07", "20260307"])
def test_a_date_alone_is_its_noon_in_utc(text: str) -> None:
    # As an instant (ordering, lengths of time); the user's day is local_moment's.
    assert parse_time(text) == datetime(2026, 3, 7, 12, tzinfo=UTC)
    assert not has_zone(text)
    assert when(text, ZoneInfo("America/Los_Angeles")) == text[:16]
    assert when("2026-03-07T20:00:00Z", ZoneInfo("Asia/Tokyo")) == "2026-03-08 05:00"


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "Pacific/Auckland", "Pacific/Tongatapu",
                                  "Asia/Shanghai", "UTC", "America/Los_Angeles",
                                  "Pacific/Pago_Pago", "Etc/GMT+12"])
@pytest.mark.parametrize("text", ["2026-01-10", "20260110"])
def test_a_date_alone_is_that_day_in_every_zone(zone: str, text: str) -> None:
    # Any one instant is the day before or after somewhere: noon UTC is the 11th from UTC+12.
    moment = local_moment(text, ZoneInfo(zone))
    assert moment is not None and moment.date() == date(2026, 1, 10)
    assert moment.astimezone(ZoneInfo(zone)).date() == date(2026, 1, 10)


@pytest.mark.parametrize("text, zone, local", [
    ("2026-01-10T11:30:00Z", "Pacific/Auckland", datetime(2026, 1, 11, 0, 30)),
    ("2026-01-10T11:30:00", "Pacific/Kiritimati", datetime(2026, 1, 11, 1, 30)),
    ("2026-01-10T03:00:00+08:00", "America/Los_Angeles", datetime(2026, 1, 9, 11, 0))])
def test_a_time_of_day_is_moved_into_the_users_zone(text: str, zone: str,
                                                     local: datetime) -> None:
    moment = local_moment(text, ZoneInfo(zone))
    assert moment is not None and moment.replace(tzinfo=None) == local
    assert moment == parse_time(text)


@pytest.mark.parametrize("text", ["0001-01-01", "9999-12-31", "", None, "不是"])
def test_an_undated_time_has_no_local_moment(text: str | None) -> None:
    assert local_moment(text, ZoneInfo("Pacific/Kiritimati")) is None


_ODD = ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00+05:45", "9999-12-31T23:59:59-05:00",
        "0001-01-01", "9999-12-31", "0001-01-02", "9999-12-30", "2026-03-07", "20260307",
        "2026-W10-1", "2026-01-10T11:30:00", "", None, "不是", "2026-13-01", "2026-03-07T25:00"]


@given(st.lists(st.one_of(iso_texts(), moments.map(lambda m: m.date().isoformat()),
                          st.sampled_from(_ODD), st.text(max_size=12)), max_size=8),
       st.sampled_from(["Pacific/Kiritimati", "Etc/GMT+12", "Asia/Shanghai", "UTC"]))
def test_times_read_at_once_are_each_as_local_moment_reads_it(texts: list[str | None],
                                                               zone: str) -> None:
    moments_read = local_moments(texts, ZoneInfo(zone))
    one_by_one = [local_moment(text, ZoneInfo(zone)) for text in texts]
    assert moments_read == one_by_one
    # The same instants in the same zone, not only equal ones (a day is read off them).
    assert [m and (m.utcoffset(), m.replace(tzinfo=None)) for m in moments_read] == \
        [m and (m.utcoffset(), m.replace(tzinfo=None)) for m in one_by_one]
