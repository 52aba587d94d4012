"""The zone a user's days are read in: which calendar day a message was said on, and what
"today", "yesterday" or "上周五" in an input name.

chatmem stores every time in UTC (chatmem.timestamps), and an imported one with the offset
its transcript gave; a day, though, is the user's: said at 07:30 in Shanghai is that
Saturday, not Friday 23:30 UTC. The zone is the `timezone` setting (an IANA name,
`Asia/Shanghai`), else the system's: $TZ when it names a zone, else /etc/localtime, else the
offset the C library applies now. It is handed to context assembly with each request,
so a build stays a function of what it is given, and a replay elsewhere can be told it.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

LOCALTIME = Path("/etc/localtime")


def zone_named(name: str, shown: str | None = None) -> tzinfo:
    """The zone an IANA name (`Europe/Paris`, `UTC`) or a zone file's path
    (`/usr/share/zoneinfo/Europe/Paris`, as TZ=:PATH gives it) stands for.

    Raises ValueError naming what it takes when `name` is none this machine knows, saying
    `name` as `shown` when given (a setting's caller passes config's shown_value: `timezone =
    "sk-…"` repeated the key whole; this module does not import config)."""
    if name.strip().upper() in ("UTC", "Z", "ETC/UTC"):
        return UTC
    try:
        if name.strip().startswith("/"):
            return _zone_file(Path(name.strip()))
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(f"{shown or repr(name)} is not a time zone this machine knows (an "
                         "IANA name, e.g. Asia/Shanghai, Europe/Paris or UTC)") from None


def _zone_file(path: Path) -> tzinfo:
    """The zone a TZif file holds, keyed by its IANA name when it lies under a zoneinfo
    folder (zone_name names it so), else by its path. Read as a fixed offset instead, a
    TZ=:/usr/share/zoneinfo/America/New_York put July an hour early."""
    parts = path.parts
    key = "/".join(parts[parts.index("zoneinfo") + 1:]) if "zoneinfo" in parts[:-1] else str(path)
    with path.open("rb") as file:
        return ZoneInfo.from_file(file, key=key)


def system_zone() -> tzinfo:
    """The system's local zone: $TZ's name, /etc/localtime, or the offset in use now."""
    named = os.environ.get("TZ", "").removeprefix(":")
    if named:
        try:
            return zone_named(named)
        except ValueError:
            pass  # a POSIX rule (`CST-8`): the C library reads it, below
    elif LOCALTIME.is_file():
        try:
            with LOCALTIME.open("rb") as file:
                return ZoneInfo.from_file(file, key="localtime")
        except (OSError, ValueError):
            pass
    return datetime.now().astimezone().tzinfo or UTC


def zone_name(zone: tzinfo) -> str:
    """What `zone` is called where a result depends on it (eval's output): its IANA name,
    for the system's /etc/localtime the zone it links to, else its offset now (`UTC+08:00`)."""
    if zone is UTC:
        return "UTC"
    key = getattr(zone, "key", None)
    if key and key != "localtime":
        return str(key)
    if key == "localtime":
        parts = LOCALTIME.resolve().parts
        if "zoneinfo" in parts[:-1]:
            return "/".join(parts[parts.index("zoneinfo") + 1:])
    offset = datetime.now(zone).strftime("%z") or "+0000"
    return f"UTC{offset[:3]}:{offset[3:]}"
