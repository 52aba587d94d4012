"""chatmem.timezones: the name a zone is given where results depend on it."""

from __future__ import annotations

from datetime import UTC, timedelta, timezone
from pathlib import Path

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
