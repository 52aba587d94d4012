"""`chatmem sessions export --all`: everything the history file holds, in one zip archive.

Readable without chatmem; `sessions import ARCHIVE.zip` restores it whole
(chatmem.privacy.restore), and each transcript imports back alone:

    README.txt              what is where
    manifest.json           version, time, what was exported (with how many of each session's
                            turns the fact extractor had read: import marks those read)
    sessions/NAME.jsonl     each session as a transcript (`sessions import` reads it)
    summaries/NAME.json     each session's summary versions and pinned details (to read)
    facts.json              every fact (user profile and session), with earlier values

It holds no images (each up to 20 MB, the history keeps them) nor the record of what each
turn sent, where they are named: the manifest counts the images left out, and import
says so. `sessions copy` carries both.

The archive is plaintext even when the history file is encrypted: it is for
the user to keep, move or read, and is written readable by its owner only.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chatmem.errors import UsageError
from chatmem.privacy.files import open_private
from chatmem.store.records import FactScope
from chatmem.text import json_safe
from chatmem.timestamps import stamp_seconds, utc_now

if TYPE_CHECKING:
    from chatmem.store import SessionRecord, SessionSummary
    from chatmem.store.privacy_protocols import PrivacyStore

README = """\
chatmem export — everything one history file held when it was exported.

`chatmem sessions import THIS.zip` restores into a history every session, each
in its user profile with its retention, and every fact of facts.json (all or
nothing; a session name the history has already is refused). summaries/ is kept
to read and is not restored: a summarising strategy summarises again.

sessions/NAME.jsonl   each session as a JSON Lines transcript, its header naming
                      its user profile and retention: `chatmem sessions import
                      sessions/NAME.jsonl` restores that one session (without
                      its facts, which are in facts.json)
                      (OWNER-NAME.jsonl: a session OWNER shared with you)
summaries/NAME.json   each summary version of the session (text, turns covered,
                      details the drift guard pinned)
facts.json            every fact: key, value, scope (user profile or session),
                      where it was stated, its earlier values, its end if any
manifest.json         chatmem version, export time, counts; per session
                      facts_read_turns, how many of its turns (from the first)
                      the fact extractor had read: import marks those read, and
                      the extractor reads the rest

Not in it: the images sent with messages (manifest.json's images_left_out counts
them) and the record of what each turn sent (`chatmem inspect`). `chatmem sessions
copy --from HISTORY --to backup.db` copies a history with both.

This archive is not encrypted. Keep it as safe as the conversations in it.
"""


@dataclass(frozen=True)
class PassedOver:
    """What of a session another role shares with the user the archive leaves out, because
    a row of it cannot be read (written outside chatmem): the user's own export never
    depends on it."""

    session: str
    """As the user names it (OWNER/NAME)."""
    owner: str
    strategy: str | None = None
    """The strategy whose pins were left out; None: the whole session."""


@dataclass(frozen=True)
class ArchiveReport:
    path: Path
    sessions: int
    messages: int
    summaries: int
    facts: int
    images_left_out: int = 0
    """Images the sessions hold, which an archive does not (README)."""
    passed_over: tuple[PassedOver, ...] = ()
    files_left_out: tuple[tuple[str, int], ...] = ()
    """(session, how many files its turns attached): a transcript holds none (README)."""


def _member_names(sessions: list[SessionSummary]) -> dict[int, str]:
    """A file name per session: its name (OWNER-NAME when shared with the user) when that is
    safe, else made safe and unique."""
    from chatmem.store import session_name_from

    taken: set[str] = set()
    names = {}
    for session in sessions:
        base = session_name_from(session.address)
        name, n = base, 1
        while name.lower() in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name.lower())
        names[session.id] = name
    return names


def _summaries(store: PrivacyStore, session: SessionRecord, address: str,
               passed_over: list[PassedOver]) -> dict[str, Any]:
    from chatmem.memory.pins import read_pins

    read = read_pins(store.memory, session.id)
    passed_over += [PassedOver(row.address, str(row.shared_by), row.strategy)
                    for row in read.skipped]
    return {
        "session": address,
        "summaries": [
            {"strategy": s.strategy, "version": s.version, "text": s.text,
             "covered_message_ids": s.covered_ids, "anchors": s.anchors,
             "dropped_anchors": s.dropped_anchors, "model": s.model, "created_at": s.created_at}
            for s in store.memory.summaries(session.id)],
        "pinned": [{"id": p.ref, "text": p.text, "strategy": p.strategy,
                    "summary_version": p.version, "turn": p.turn, "quote": p.quote}
                   for p in read.pins],
    }


def _facts(store: PrivacyStore, exported: set[int]) -> list[dict[str, Any]]:
    """The facts of the profiles and of the `exported` sessions: a session's fact whose
    session the archive leaves out (passed over, an unfinished replay's, none) is left out
    with it, and a session it was stated in is named only when the archive holds it: the import
    refuses a fact of a session it does not hold, which would belong to nobody."""
    facts = [f for f in store.facts.facts(include_deleted=True)
             if f.scope == FactScope.USER or f.session_id in exported]
    history = store.facts.fact_history([f.id for f in facts])
    # As a command names them (OWNER/NAME for one shared with the user: their own may have
    # its name), and as the manifest's name and shared_by do.
    names = store.sessions.session_addresses(exported)
    return [
        {"id": f.id, "key": f.key, "value": f.value, "scope": f.scope, "user": f.user,
         "session": names.get(f.session_id) if f.session_id else None,
         "stated_in": names.get(f.source_session_id) if f.source_session_id else None,
         "source_turn": f.source_turn, "created_at": f.created_at, "updated_at": f.updated_at,
         "forgotten_at": f.deleted_at, "expires_at": f.expires_at, "used_at": f.used_at,
         "speaker": f.speaker,
         "history": [{"value": h.value, "stated_in": names.get(h.source_session_id)
                      if h.source_session_id else None, "source_turn": h.source_turn,
                      "stated_at": h.stated_at, "replaced_at": h.replaced_at}
                     for h in history.get(f.id, [])]}
        for f in facts
    ]


def write_archive(store: PrivacyStore, path: Path, transcript: Callable[[SessionRecord], str], *,
                  version: str, force: bool = False) -> ArchiveReport:
    """Write every session, summary and fact of `store` to the zip at `path`.

    `transcript` renders one session as JSON Lines. The archive is written
    beside its destination first and renamed into place (open_private), so a
    failed export never leaves half an archive.
    """
    from chatmem.store.session_names import is_unfinished

    if path.exists() and not force:
        raise UsageError(f"{path} already exists; add --force to overwrite it")
    # A replay's sessions still being saved (or left by a killed one) are no sessions yet,
    # as in every listing: restored, they would be hidden and deleted by the next replay.
    listed_rows = [row for row in store.sessions.list_sessions() if not is_unfinished(row.name)]
    files = _member_names(listed_rows)
    shared_by = {row.id: row.shared_by for row in listed_rows}
    passed_over: list[PassedOver] = []
    exported_ids: set[int] = set()
    messages = summaries = exported = images = 0
    try:
        with (open_private(path, binary=True, replace=force) as raw,
              zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zf):
            zf.writestr("README.txt", README)
            listed = []
            for row in listed_rows:
                read = _read_session(store, row, transcript, passed_over)
                if read is None:
                    continue
                session, text, kept, count, facts_read = read
                name = files[session.id]
                exported += 1
                exported_ids.add(session.id)
                zf.writestr(f"sessions/{name}.jsonl", text)
                zf.writestr(f"summaries/{name}.json", _json(kept))
                messages += count
                summaries += len(kept["summaries"])
                images += len(store.images.images(session.id))
                listed.append({"name": session.name, "shared_by": shared_by[session.id],
                               "user": session.user,
                               "transcript": f"sessions/{name}.jsonl",
                               "summaries": f"summaries/{name}.json", "messages": count,
                               "facts_read_turns": facts_read,
                               "created_at": session.created_at,
                               "updated_at": session.updated_at})
            facts = _facts(store, exported_ids)
            zf.writestr("facts.json", _json(facts))
            zf.writestr("manifest.json", _json({
                "chatmem": version, "exported_at": stamp_seconds(utc_now()),
                "sessions": listed, "facts": len(facts), "summaries": summaries,
                "images_left_out": images}))
    except FileExistsError:
        raise UsageError(f"{path} already exists; add --force to overwrite it") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot write: {e.strerror}") from None
    return ArchiveReport(path, exported, messages, summaries, len(facts), images,
                         tuple(passed_over))


def _read_session(store: PrivacyStore, row: SessionSummary,
                  transcript: Callable[[SessionRecord], str], passed_over: list[PassedOver]
                  ) -> tuple[SessionRecord, str, dict[str, Any], int, int | None] | None:
    """A session's record, transcript, summaries, message count and how many of its turns
    the fact extractor had read (_facts_read), read before any is written; None, and said in
    `passed_over`, for one another role shares whose rows cannot be read (a time or JSON
    written outside chatmem)."""
    from chatmem.errors import StoreError, StoreFailure

    try:
        # By id: a session shared with the user may have the name of one of their own.
        session = store.sessions.session_by_id(row.id)
        messages = store.history.messages(session.id)
        return (session, transcript(session), _summaries(store, session, row.address,
                                                          passed_over),
                len(messages), _facts_read(store, session.id, [m.turn for m in messages]))
    except StoreError as e:
        if row.shared_by is None or e.kind is not StoreFailure.DAMAGED:
            raise
        passed_over.append(PassedOver(row.address, row.shared_by))
        return None


def _facts_read(store: PrivacyStore, session_id: int, turns: list[int]) -> int | None:
    """How many of the session's turns, from its first, the fact extractor had read: the
    import marks exactly those as read (its facts are in facts.json), and the extractor reads
    the rest. Counted, not its turn number: the transcript numbers turns again from 1, and
    a session stored before turns were renumbered may have gaps. None when its state cannot
    be read (written outside chatmem): the import then marks nothing."""
    from chatmem.store.state_coverage import FACTS_OWNER

    rows = [r for r in store.memory.strategy_state_values("done_turn", session_id)
            if r.strategy == FACTS_OWNER]
    if not rows:
        return 0
    done = rows[0].value
    if not rows[0].readable or isinstance(done, bool) or not isinstance(done, int):
        return None
    return len({turn for turn in turns if turn <= done})


def _json(data: Any) -> str:
    return json_safe(json.dumps(data, ensure_ascii=False, indent=2)) + "\n"
