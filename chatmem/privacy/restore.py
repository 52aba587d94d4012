"""Reading back an archive `sessions export --all` wrote (`sessions import ARCHIVE.zip`):
its sessions, each under its profile with its retention, and its facts. Every error is
one line naming the archive and the member; nothing is written here."""

from __future__ import annotations

import dataclasses
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from chatmem.errors import TranscriptError
from chatmem.store.records import FactScope
from chatmem.store.restored_facts import EarlierValue, KeptFact
from chatmem.store.session_names import is_session_name, session_name_from
from chatmem.text import profile_name, valid_text
from chatmem.timestamps import is_time
from chatmem.transcripts.format import Transcript
from chatmem.transcripts.reader import parse_transcript

MOST_MEMBER_BYTES = 64 * 1024 * 1024
"""A member larger than this unpacked is not read (a zip bomb would fill the memory)."""


@dataclass(frozen=True)
class ArchivedSession:
    name: str
    """The name it is restored under: its own, or OWNER-NAME for one shared with the user."""
    transcript: Transcript


@dataclass(frozen=True)
class Archive:
    path: Path
    sessions: list[ArchivedSession]
    facts: list[dict[str, Any]]
    """facts.json's facts, checked."""

    def kept_facts(self, ids: Mapping[str, int]) -> list[KeptFact]:
        """The facts with their sessions' names as the target's ids (`ids`: name → id)."""
        def session(name: str | None) -> int | None:
            return ids.get(name) if name is not None else None

        return [KeptFact(
            f["key"], f["value"], FactScope(f["scope"]),
            profile_name(f["user"]) if f["scope"] == "user" else None,
            session(f["session"]) if f["scope"] == "session" else None,
            session(f.get("stated_in")), f.get("source_turn"), f["created_at"], f["updated_at"],
            f.get("forgotten_at"), f.get("expires_at"), f.get("used_at"),
            tuple(EarlierValue(h["value"], session(h.get("stated_in")), h.get("source_turn"),
                               h["stated_at"], h["replaced_at"]) for h in f.get("history", [])))
            for f in self.facts]


def is_archive(path: Path) -> bool:
    """Whether `path` is meant as an archive: named .zip, or a zip whatever its name."""
    return path.suffix.lower() == ".zip" or zipfile.is_zipfile(path)


def read_archive(path: Path) -> Archive:
    try:
        with zipfile.ZipFile(path) as zf:
            return _read(path, zf)
    except FileNotFoundError:
        raise TranscriptError(f"{path}: no such archive") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError):
        raise TranscriptError(f"{path}: not a zip archive `sessions export --all` wrote"
                              " (or a damaged one)") from None
    except OSError as e:
        raise TranscriptError(f"{path}: cannot read the archive: {e.strerror}") from None


def _read(path: Path, zf: zipfile.ZipFile) -> Archive:
    manifest = _json(path, zf, "manifest.json")
    listed = manifest.get("sessions") if isinstance(manifest, dict) else None
    if not isinstance(listed, list) or not all(
            isinstance(s, dict) and isinstance(s.get("transcript"), str)
            and isinstance(s.get("name"), str) for s in listed):
        raise TranscriptError(f"{path}: manifest.json: not a chatmem export's manifest (no list"
                              " of sessions with name and transcript)")
    sessions = [_session(path, zf, entry) for entry in listed]
    facts = _json(path, zf, "facts.json") if "facts.json" in zf.namelist() else []
    if not isinstance(facts, list):
        raise TranscriptError(f"{path}: facts.json: expected a list of facts")
    for number, fact in enumerate(facts, 1):
        _check_fact(fact, f"{path}: facts.json: fact {number}")
    return Archive(path, sessions, facts)


def _session(path: Path, zf: zipfile.ZipFile, entry: Mapping[str, Any]) -> ArchivedSession:
    member = entry["transcript"]
    source = f"{path}:{member}"
    transcript = parse_transcript(_text(path, zf, member), source)
    if transcript.user is None and isinstance(entry.get("user"), str) and entry["user"].strip():
        # An archive written before headers said whose a session is: its manifest did.
        transcript = dataclasses.replace(transcript, user=profile_name(valid_text(entry["user"])))
    own = entry.get("shared_by") is None and is_session_name(entry["name"])
    name = entry["name"] if own else session_name_from(PurePosixPath(member).stem)
    return ArchivedSession(name, transcript)


def _text(path: Path, zf: zipfile.ZipFile, member: str) -> str:
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise TranscriptError(f"{path}: {member} is listed in manifest.json but missing") from None
    if info.file_size > MOST_MEMBER_BYTES:
        raise TranscriptError(f"{path}: {member}: {info.file_size:,} bytes unpacked; at most"
                              f" {MOST_MEMBER_BYTES:,} are read")
    try:
        return zf.read(info).decode("utf-8-sig")
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
    _check_values(fact, where, (*_NAMES, "user"), _TIMES, _MAYBE_TIMES)
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
