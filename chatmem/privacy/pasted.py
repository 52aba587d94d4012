"""Passwords pasted the way programs take them: inside a URL, in a command, in a config line.

People paste what they are stuck on: `postgresql://ann:Sup3rS3cret@db/team`,
`PGPASSWORD=… psql`, `SECRET_KEY = "…"`, `curl -u ann:pass`, `mysql -pPASS`, a Wi-Fi
QR payload (`WIFI:S:HomeNet;T:WPA;P:pass;;`), an `Authorization: Basic` header. None
of these says "my password is", so the sentence rules of chatmem.privacy.sensitive
miss them; each shape here is named by its syntax instead.

The guard reads every message and every summary, so each pattern is led by a literal
(`://`, `=`, `-u`, `WIFI:`, `Basic`) and its runs are bounded: a pattern is only tried
where it can start, and never backtracks over a long run (a pasted log, a hash).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from chatmem.privacy.secret_names import NOT_A_SECRET

# scheme://user:PASSWORD@host: a password may hold '@' unescaped ("p@ss@host"): the last
# one before the host ends it. The user name is no secret and stays.
_URL_USERINFO = re.compile(
    r"(?<=[A-Za-z0-9])://[^\s:@/?#\"'<>]{0,64}:(?P<value>[^\s/?#\"'<>]{1,128})@"
    r"(?=[A-Za-z0-9\[])")
_PLACEHOLDER = re.compile(r"[$%<{\[(].*|\*+|x+|\.+|(?:your|my)[_-]?pass(?:word)?|"
                          r"pass(?:word|wd)?|secret|changeme|true|false|yes|no|\d{1,5}",
                          re.IGNORECASE)
"""A value that stands for a password, not one: $PGPASSWORD, ${DB_PASS}, <password>, ***,
"password"; a bare number of a few digits is a port or a user id ("-u 1000:1000")."""


def _kept(value: str) -> bool:
    return len(value) >= 3 and value.lower() not in NOT_A_SECRET and \
        not _PLACEHOLDER.fullmatch(value)


def pasted_passwords(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, value) of each password `text` pastes as a URL, a command or a config."""
    if "://" in text:
        for match in _URL_USERINFO.finditer(text):
            if _kept(match.group("value")):
                yield match.start("value"), match.end("value"), match.group("value")
