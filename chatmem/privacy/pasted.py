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

import base64
import binascii
import re
from collections.abc import Iterator

from chatmem.lazy_patterns import lazy
from chatmem.privacy.secret_names import NOT_A_SECRET

# scheme://user:PASSWORD@host: a password may hold '@' unescaped ("p@ss@host"): the last
# one before the host ends it. The user name is no secret and stays.
_URL_USERINFO = lazy(
    r"(?<=[A-Za-z0-9])://[^\s:@/?#\"'<>]{0,64}:(?P<value>[^\s/?#\"'<>]{1,128})@"
    r"(?=[A-Za-z0-9\[])")
# NAME=VALUE, NAME: VALUE, NAME = "VALUE", for a NAME ending like a secret's (checked below).
_ASSIGNED = lazy(
    r"(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z0-9_.-]{0,56}?(?:pass(?:word|wd|phrase)?|pwd|secret"
    r"|key|token))[\"']?[ \t]{0,3}[=:][ \t]{0,3}"
    r"(?:(?P<q>[\"'])(?P<quoted>[^\"'\n]{1,128})(?P=q)"
    r"|(?P<value>[^\s\"',;]{1,128}))", re.IGNORECASE)
_SECRET_NAME = lazy(
    r"(?:pass(?:word|wd|phrase)|pwd"
    r"|(?:^|[_.-])pass|secret|(?:secret|api|access|private|client|signing|encryption)[_.-]?key"
    r"|(?:^|[_.-])(?:auth|access|api|bearer|refresh|session|github|gitlab|slack|npm|pypi)?"
    r"[_.-]?token)$",
    re.IGNORECASE)
# curl -u ann:pass, wget --user=ann --password=… (the latter is a named secret already)
_USER_COLON_PASS = lazy(
    r"(?<!\S)(?:-u|--user)(?:[ \t]{1,3}|=)?[\"']?[^\s:\"']{1,64}:(?P<value>[^\s\"']{1,128})")
# mysql -pPASS (the value glued to -p; "-p 3306" and "ssh -p2222" are no password)
_MYSQL = lazy(r"(?<![A-Za-z0-9_-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mariadb)"
                    r"(?![A-Za-z0-9_-])[^\n|;&]{0,200}?(?<!\S)-p(?P<value>[^\s\"']{1,128})")
# WIFI:S:HomeNet;T:WPA;P:secret;; (fields in any order; \; escapes a semicolon)
_WIFI_QR = lazy(r"WIFI:(?:[A-Za-z]:(?:\\.|[^;\\\n]){0,64};){0,5}?"
                      r"P:(?P<value>(?:\\.|[^;\\\n]){1,128})", re.IGNORECASE)
_BASIC = lazy(r"(?<![A-Za-z])Basic[ \t]{1,3}(?P<value>[A-Za-z0-9+/]{8,512}={0,2})"
                    r"(?![A-Za-z0-9+/=])")
_PLACEHOLDER = lazy(r"[$%<{\[(].*|\*+|x+|\.+|(?:your|my)[_-]?pass(?:word)?|"
                          r"pass(?:word|wd)?|secret|changeme|true|false|yes|no|\d{1,5}",
                          re.IGNORECASE)
"""A value that stands for a password, not one: $PGPASSWORD, ${DB_PASS}, <password>, ***,
"password"; a bare number of a few digits is a port or a user id ("-u 1000:1000")."""


def _kept(value: str) -> bool:
    return len(value) >= 3 and value.lower() not in NOT_A_SECRET and \
        not _PLACEHOLDER.fullmatch(value)


def _basic_credentials(value: str) -> bool:
    """Whether `value` is the base64 of "user:password", as HTTP Basic auth carries it."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        text = decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return ":" in text and text.isprintable() and len(text.split(":", 1)[1]) >= 1


def pasted_passwords(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, value) of each password `text` pastes as a URL, a command or a config."""
    if "://" in text:
        for match in _URL_USERINFO.finditer(text):
            if _kept(match.group("value")):
                yield match.start("value"), match.end("value"), match.group("value")
    if "=" in text or ":" in text:
        for match in _ASSIGNED.finditer(text):
            group = "quoted" if match.group("quoted") is not None else "value"
            value = match.group(group)
            if _SECRET_NAME.search(match.group("name")) and _kept(value):
                yield match.start(group), match.end(group), value
    if "-u" in text:
        for match in _USER_COLON_PASS.finditer(text):
            if _kept(match.group("value")):
                yield match.start("value"), match.end("value"), match.group("value")
    lowered = text.lower()
    if "-p" in text and ("mysql" in lowered or "mariadb" in lowered):
        for match in _MYSQL.finditer(text):
            if _kept(match.group("value")):
                yield match.start("value"), match.end("value"), match.group("value")
    if "wifi:" in lowered:
        for match in _WIFI_QR.finditer(text):
            yield match.start("value"), match.end("value"), match.group("value")
    if "Basic" in text:
        for match in _BASIC.finditer(text):
            if _basic_credentials(match.group("value")):
                yield match.start("value"), match.end("value"), match.group("value")
