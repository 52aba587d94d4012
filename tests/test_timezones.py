"""chatmem.timezones: the name a zone is given where results depend on it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from chatmem import timezones
from chatmem.timezones import zone_name, zone_named


def test_a_zone_is_named_by_its_iana_name_else_its_offset() -> None:
    assert zone_name(UTC) == "UTC"
    assert zone_name(zone_named("Asia/Shanghai")) == "Asia/Shanghai"
    assert zone_name(timezone(timedelta(hours=8))) == "UTC+08:00"
    assert zone_name(timezone(timedelta(hours=-3, minutes=-30))) == "UTC-03:30"


def test_the_system_zone_is_named_by_what_etc_localtime_links_to(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """/etc/localtime is read as a zone keyed "localtime", which names no zone: the link's
    target does."""
    zoneinfo = tmp_path / "usr" / "share" / "zoneinfo" / "Asia"
    zoneinfo.mkdir(parents=True)
    shanghai = zoneinfo / "Shanghai"
    system = Path("/usr/share/zoneinfo/Asia/Shanghai")
    if not system.is_file():
        pytest.skip("no system zoneinfo")
    shanghai.write_bytes(system.read_bytes())
    link = tmp_path / "localtime"
    link.symlink_to(shanghai)
    monkeypatch.setattr(timezones, "LOCALTIME", link)
    monkeypatch.delenv("TZ", raising=False)
    assert zone_name(timezones.system_zone()) == "Asia/Shanghai"
    copied = tmp_path / "copied"
    copied.write_bytes(shanghai.read_bytes())  # a copy, not a link: its offset
    monkeypatch.setattr(timezones, "LOCALTIME", copied)
    assert zone_name(timezones.system_zone()) == "UTC+08:00"


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Shanghai"])
def test_tz_as_a_zone_files_path_is_that_zone_all_year(
        zone: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # TZ=:/usr/share/zoneinfo/America/New_York (the path form) was read as the C library's
    # offset now: EST all year, and a July time shown an hour early.
    path = Path("/usr/share/zoneinfo") / zone
    if not path.is_file():
        pytest.skip("no system zoneinfo")
    for tz in (f":{path}", str(path)):
        monkeypatch.setenv("TZ", tz)
        system = timezones.system_zone()
        assert zone_name(system) == zone
        for month in (1, 7):
            moment = datetime(2026, month, 15, 12, tzinfo=UTC)
            assert moment.astimezone(system).utcoffset() == moment.astimezone(
                ZoneInfo(zone)).utcoffset()
    assert zone_name(zone_named(str(path))) == zone
    with pytest.raises(ValueError, match="is not a time zone this machine knows"):
        zone_named("/no/such/zoneinfo/Mars")
