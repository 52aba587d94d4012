"""Reading back an archive `sessions export --all` wrote (`sessions import ARCHIVE.zip`):
its sessions, each under its profile with its retention, and its facts. Every error is
one line naming the archive and the member; nothing is written here.

The manifest, the sizes and the facts are checked when the archive is read; the transcripts
are parsed one at a time as they are restored (`Archive.transcripts`), so memory holds one
of them, not all: the restore is one transaction, so one failing still leaves nothing."""

from __future__ import annotations

import dataclasses
import json
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

from chatmem.errors import TranscriptError
from chatmem.store.records import FactScope, session_address
from chatmem.store.restored_facts import EarlierValue, KeptFact
from chatmem.store.session_names import (
    is_session_name,
    normal_name,
    reserved_for,
    session_name_from,
)
from chatmem.text import profile_name, valid_text
from chatmem.timestamps import in_every_zone, is_time, parse_time, stamp, utc_now
from chatmem.transcripts.format import Transcript
from chatmem.transcripts.reader import MOST_TRANSCRIPT_BYTES, parse_transcript

MOST_MEMBER_BYTES = MOST_TRANSCRIPT_BYTES
"""A member larger than this unpacked is not read (a zip bomb would fill the memory)."""
MOST_ARCHIVE_BYTES = 1024 * 1024 * 1024
"""The members an archive's manifest names, unpacked, together: more is not read (members
sharing their packed bytes would each be within MOST_MEMBER_BYTES)."""


@dataclass(frozen=True)
class ArchivedSession:
    name: str
    """The name it is restored under: its own, or OWNER-NAME for one shared with the user."""
    member: str
    """Its transcript's member in the archive."""
    user: str | None
    """Whose it is as the manifest says (an archive written before headers said so)."""
    address: str
    """What facts.json names it by: its name, or OWNER/NAME for one another role shared
    with the user who exported it."""
    facts_read_turns: int | None = None
    """How many of its turns, from the first, the exporting history's fact extractor had
    read (the import marks those read); None: unknown (an archive written before the
    manifest said, or a state that could not be read)."""
    created_at: str | None = None
    updated_at: str | None = None
    """When it was made and last used, stored form (None: an archive written before the
    manifest said; the import's moment then): retention and "the most recent session" go
    by `updated_at`."""


@dataclass(frozen=True)
class Archive:
    path: Path
    sessions: list[ArchivedSession]
    facts: list[dict[str, Any]]
    """facts.json's facts, checked."""
    summaries: int = 0
    """Summary versions the manifest counts in summaries/ (kept to read; not restored)."""
    images_left_out: int = 0
    """Images the exported sessions held, which no archive holds (manifest.json says how
    many; 0 from one written before it said)."""
    latest: datetime | None = None
    """The latest any of its times may be (see `_latest`); None: as written."""

    def transcripts(self) -> Iterator[tuple[ArchivedSession, Transcript]]:
        """Each session with its transcript, parsed as it is reached: the one before is
        dropped by then if the caller keeps no hold on it."""
        with _reading(self.path), zipfile.ZipFile(self.path) as zf:
            for listed in self.sessions:
                yield listed, _transcript(self.path, zf, listed)

    def kept_facts(self, ids: Mapping[str, int]) -> list[KeptFact]:
        """The facts with their sessions' names as the target's ids (`ids`: name → id).
        A session fact whose session the archive does not hold is refused: restored, it
        would belong to no session and no profile, reach no context, and no erasure
        (forget-me, a session's delete) would find it."""
        def session(name: str | None) -> int | None:
            return ids.get(name) if name is not None else None

        for number, fact in enumerate(self.facts, 1):
            if fact["scope"] == "session" and fact["session"] not in ids:
                raise TranscriptError(
                    f"{self.path}: facts.json: fact {number}: its session"
                    f" {fact['session']!r} is not in the archive; nothing was imported")
        def at(time: str) -> str:
            # A fact used "in 9000" never went idle, as a session so dated was never erased.
            # exported_at is written to the second: a fact used within it is no later.
            if self.latest is None or parse_time(time) < self.latest + timedelta(seconds=1):
                return time
            return stamp(self.latest)

        def maybe_at(time: str | None) -> str | None:
            return None if time is None else at(time)

        return [KeptFact(
            f["key"], f["value"], FactScope(f["scope"]),
            profile_name(f["user"]) if f["scope"] == "user" else None,
            ids[f["session"]] if f["scope"] == "session" else None,
            session(f.get("stated_in")), f.get("source_turn"), at(f["created_at"]),
            at(f["updated_at"]), maybe_at(f.get("forgotten_at")), f.get("expires_at"),
            maybe_at(f.get("used_at")),
            tuple(EarlierValue(h["value"], session(h.get("stated_in")), h.get("source_turn"),
                               at(h["stated_at"]), at(h["replaced_at"]))
                  for h in f.get("history", [])),
            f.get("speaker") if f["scope"] == "session" else None)
            for f in self.facts]


def is_archive(path: Path) -> bool:
    """Whether `path` is meant as an archive: named .zip, or a zip whatever its name. Only a
    regular file is looked into: zipfile read /dev/zero until out of memory."""
    return path.suffix.lower() == ".zip" or (path.is_file() and zipfile.is_zipfile(path))


def read_archive(path: Path, most_bytes: int = MOST_ARCHIVE_BYTES) -> Archive:
    """The archive's sessions and facts, checked; its transcripts are read as they are
    restored (`Archive.transcripts`). `most_bytes`: see MOST_ARCHIVE_BYTES."""
    with _reading(path), zipfile.ZipFile(path) as zf:
        return _read(path, zf, most_bytes)


@contextmanager
def _reading(path: Path) -> Iterator[None]:
    try:
        yield
    except FileNotFoundError:
        raise TranscriptError(f"{path}: no such archive") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError):
        raise TranscriptError(f"{path}: not a zip archive `sessions export --all` wrote"
                              " (or a damaged one)") from None
    except OSError as e:
        raise TranscriptError(f"{path}: cannot read the archive: {e.strerror}") from None


def _read(path: Path, zf: zipfile.ZipFile, most_bytes: int) -> Archive:
    manifest = _json(path, zf, "manifest.json")
    listed = manifest.get("sessions") if isinstance(manifest, dict) else None
    if not isinstance(listed, list) or not all(
            isinstance(s, dict) and isinstance(s.get("transcript"), str)
            and isinstance(s.get("name"), str) for s in listed):
        raise TranscriptError(f"{path}: manifest.json: not a chatmem export's manifest (no list"
                              " of sessions with name and transcript)")
    latest = _latest(manifest)
    sessions = [_session(path, entry, latest) for entry in listed]
    _check_listed(path, zf, sessions, most_bytes)
    facts = _json(path, zf, "facts.json") if "facts.json" in zf.namelist() else []
    if not isinstance(facts, list):
        raise TranscriptError(f"{path}: facts.json: expected a list of facts")
    for number, fact in enumerate(facts, 1):
        _check_fact(fact, f"{path}: facts.json: fact {number}")
    summaries = manifest.get("summaries")
    images = manifest.get("images_left_out")
    left_out = images if isinstance(images, int) and not isinstance(images, bool) else 0
    return Archive(path, sessions, facts,
                   summaries if isinstance(summaries, int) and summaries > 0 else 0,
                   max(left_out, 0), latest)


def _latest(manifest: Mapping[str, Any]) -> datetime:
    """The latest a session of the archive was used: when it was exported, or now when the
    manifest says no time (or one to come, a clock ahead of this one)."""
    now = utc_now()
    exported = manifest.get("exported_at")
    try:
        moment = parse_time(exported) if isinstance(exported, str) else None
    except ValueError:
        moment = None
    return now if moment is None or moment > now else moment


def _session(path: Path, entry: Mapping[str, Any], latest: datetime) -> ArchivedSession:
    member = entry["transcript"]
    own = entry.get("shared_by") is None and is_session_name(entry["name"])
    name = entry["name"] if own else session_name_from(PurePosixPath(member).stem)
    reserved = reserved_for(name)
    if reserved is not None:
        # Restored under it, the session would be hidden from every listing and deleted by
        # the next import or replay once that process id is gone.
        raise TranscriptError(f"{path}: {'manifest.json' if own else member}: session name"
                              f" {name!r} is reserved: {reserved}; nothing was imported")
    user = entry.get("user")
    owner = entry.get("shared_by")
    read = entry.get("facts_read_turns")
    if read is not None and (isinstance(read, bool) or not isinstance(read, int) or read < 0):
        raise TranscriptError(f"{path}: manifest.json: session {entry['name']!r}:"
                              f" 'facts_read_turns' must be a whole number ≥ 0 or null,"
                              f" not {read!r}")
    updated = _stored_time(path, entry, "updated_at", latest)
    created = _stored_time(path, entry, "created_at", latest)
    if created is not None and updated is not None:
        created = min(created, updated)  # stored forms: UTC, one width, compared as text
    return ArchivedSession(name, member, user if isinstance(user, str) and user.strip() else None,
                           session_address(entry["name"], owner if isinstance(owner, str)
                                           else None), read, created, updated)


def _stored_time(path: Path, entry: Mapping[str, Any], key: str,
                 latest: datetime) -> str | None:
    """The manifest's `key` of a session in chatmem's stored form, no later than `latest`;
    None when not said. A time to come is not refused (another machine's clock may be
    minutes ahead): taken as it is, a session dated 9000 was listed first, continued by -c
    and never erased by retention."""
    value = entry.get(key)
    if value is None:
        return None
    try:
        moment = parse_time(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None or not in_every_zone(moment):
        raise TranscriptError(f"{path}: manifest.json: session {entry['name']!r}: {key!r}"
                              f" must be an ISO-8601 time, not {value!r}; nothing was imported")
    return stamp(min(moment, latest))


def _check_listed(path: Path, zf: zipfile.ZipFile, sessions: list[ArchivedSession],
                  most_bytes: int) -> None:
    """Each transcript listed once, each session named once, and the members within
    `most_bytes` together: said before any transcript is read."""
    held = set(zf.namelist())
    members: set[str] = set()
    names: set[str] = set()
    total = sum(zf.getinfo(m).file_size for m in ("manifest.json", "facts.json") if m in held)
    for listed in sessions:
        if listed.member not in held:
            raise TranscriptError(f"{path}: {listed.member} is listed in manifest.json but"
                                  " missing")
        if listed.member in members:
            raise TranscriptError(f"{path}: manifest.json: {listed.member} is listed twice")
        if normal_name(listed.name) in names:
            raise TranscriptError(f"{path}: manifest.json: two sessions named {listed.name!r}"
                                  " in the archive")
        members.add(listed.member)
        names.add(normal_name(listed.name))
        total += zf.getinfo(listed.member).file_size
    if total > most_bytes:
        raise TranscriptError(f"{path}: {total:,} bytes unpacked; at most {most_bytes:,} are"
                              " read from one archive")


def _transcript(path: Path, zf: zipfile.ZipFile, listed: ArchivedSession) -> Transcript:
    transcript = parse_transcript(_text(path, zf, listed.member), f"{path}:{listed.member}")
    if transcript.user is None and listed.user is not None:
        # An archive written before headers said whose a session is: its manifest did.
        transcript = dataclasses.replace(transcript, user=profile_name(valid_text(listed.user)))
    return transcript


def _text(path: Path, zf: zipfile.ZipFile, member: str) -> str:
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise TranscriptError(f"{path}: {member} is listed in manifest.json but missing") from None
    if info.file_size > MOST_MEMBER_BYTES:
        raise TranscriptError(f"{path}: {member}: {info.file_size:,} bytes unpacked; at most"
                              f" {MOST_MEMBER_BYTES:,} are read")
    try:
        # No more than the header says: zipfile inflates a whole read() at once, then cuts
        # it to that size and finds the checksum wrong, so a member whose header lies (an
        # 800 KB archive saying 100 bytes) took 1.7 GB of memory before it was refused.
        with zf.open(info) as unpacked:
            return unpacked.read(info.file_size).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TranscriptError(f"{path}: {member}: not UTF-8 text") from None


def _json(path: Path, zf: zipfile.ZipFile, member: str) -> Any:
    if member not in zf.namelist():
        raise TranscriptError(f"{path}: not an archive `sessions export --all` wrote"
                              f" (no {member})")
    try:
        return json.loads(_text(path, zf, member))
    except (RecursionError, ValueError) as e:
        raise TranscriptError(f"{path}: {member}: not valid JSON ({e})") from None


_TEXTS = ("key", "value")
_NAMES = ("session", "stated_in")
_TIMES = ("created_at", "updated_at")
_MAYBE_TIMES = ("forgotten_at", "expires_at", "used_at")


def _check_fact(fact: Any, where: str) -> None:
    if not isinstance(fact, dict):
        raise TranscriptError(f"{where}: expected an object")
    for key in _TEXTS:
        if not isinstance(fact.get(key), str) or not fact[key]:
            raise TranscriptError(f"{where}: {key!r} must be a string")
    if fact.get("scope") not in ("user", "session"):
        raise TranscriptError(f"{where}: 'scope' must be 'user' or 'session'")
    owner = "user" if fact["scope"] == "user" else "session"
    if not isinstance(fact.get(owner), str) or not fact[owner].strip():
        raise TranscriptError(f"{where}: a {fact['scope']} fact needs its {owner!r}")
    _check_values(fact, where, (*_NAMES, "user", "speaker"), _TIMES, _MAYBE_TIMES)
    history = fact.get("history", [])
    if not isinstance(history, list):
        raise TranscriptError(f"{where}: 'history' must be a list")
    for number, earlier in enumerate(history, 1):
        at = f"{where}: earlier value {number}"
        if not isinstance(earlier, dict) or not isinstance(earlier.get("value"), str):
            raise TranscriptError(f"{at}: expected an object with a 'value'")
        _check_values(earlier, at, ("stated_in",), ("stated_at", "replaced_at"), ())


def _check_values(data: Mapping[str, Any], where: str, names: tuple[str, ...],
                  times: tuple[str, ...], maybe_times: tuple[str, ...]) -> None:
    for key in names:
        if data.get(key) is not None and not isinstance(data[key], str):
            raise TranscriptError(f"{where}: {key!r} must be a string or null")
    turn = data.get("source_turn")
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int)):
        raise TranscriptError(f"{where}: 'source_turn' must be a whole number or null")
    for key in (*times, *maybe_times):
        value = data.get(key)
        if value is None and key in maybe_times:
            continue
        if not isinstance(value, str) or not is_time(value):
            raise TranscriptError(f"{where}: {key!r} must be an ISO-8601 time")
