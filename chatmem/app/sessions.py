"""Sessions as a person manages them: list, show a page of turns, rename, fork, delete,
export, import and keep for a while. Each use case takes a workspace and returns a value;
writes are one transaction each (the store's)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chatmem.errors import NoSuchTurn, NotFound, UsageError
from chatmem.store.session_names import check_session_name as check_session_name
from chatmem.store.session_names import normal_name as normal_name
from chatmem.store.session_names import session_name_from as session_name_from
from chatmem.store.session_names import session_name_of as session_name_of
from chatmem.store.sharing import shared_address as shared_address

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.store import (
        ForkReport,
        LogEntry,
        MessageRecord,
        ModelUsage,
        SessionRecord,
        SessionSummary,
        TurnRecord,
    )
    from chatmem.store.records import SessionAccess
    from chatmem.store.sharing import Share

def list_sessions(workspace: Workspace) -> list[SessionSummary]:
    """Every session, most recent first: name, strategy, params, counts, dates. A replay's
    sessions still being saved (or left by a killed one) are not sessions yet: left out."""
    from chatmem.store.session_names import is_unfinished

    return [row for row in workspace.store.sessions.list_sessions()
            if not is_unfinished(row.name)]


def lookalike_sessions(workspace: Workspace, name: str) -> list[str]:
    """The user's own sessions other than `name` whose names read as it (`names.folded_name`:
    trip or Trip beside ｔｒｉｐ): a new session beside one is likely a slip of the input
    method or the shift key, worth a word."""
    from chatmem.names import folded_name

    read_as = folded_name(name)
    return [row.name for row in list_sessions(workspace)
            if row.shared_by is None and row.name != name and folded_name(row.name) == read_as]


def session_named(workspace: Workspace, name: str) -> SessionRecord:
    """The session called `name`; NotFound (naming the command that lists them) if none."""
    return workspace.store.sessions.session(name)


def deletable_session(workspace: Workspace, name: str) -> SessionRecord:
    """The session called `name`, once this role may delete it (its owner): NotFound, or
    the one-line refusal a share's grantee gets, before any question is asked."""
    session = workspace.store.sessions.session(name)
    workspace.store.sessions.check_session_writable(session.id, owners_only="delete")
    return session


def find_session(workspace: Workspace, name: str) -> SessionRecord | None:
    return workspace.store.sessions.find_session(name)


def session_address(workspace: Workspace, session: SessionRecord) -> str:
    """What names `session` in a command: `OWNER/NAME` when shared with the user."""
    return workspace.store.sessions.address(session.id)


def stored_name(workspace: Workspace, session: SessionRecord) -> str | None:
    """The name `session` has now (another process may have renamed it); None when it is
    gone. One read by id."""
    try:
        return workspace.store.sessions.session_by_id(session.id).name
    except NotFound:
        return None


def turn_count(workspace: Workspace, session: SessionRecord) -> int:
    return workspace.store.history.turn_count(session.id)


def recorded_turn(workspace: Workspace, session: SessionRecord,
                  number: int | None = None) -> TurnRecord:
    """Turn `number` of `session` as running a chat reads it (default: the last); NotFound
    if none. Its context's runs and rendered prompt are not read (store.turns.turn)."""
    return workspace.store.turns.turn(session.id, number, expanded=False)


def turn_at(workspace: Workspace, session: SessionRecord, turn: int) -> TurnRecord:
    """The request recorded at the conversation's turn `turn`, the one `inspect S TURN`
    shows (store.turns.at_turn), as `recorded_turn` reads it; NotFound for an imported or
    forked turn."""
    return workspace.store.turns.at_turn(session.id, turn, expanded=False)


def last_turn(workspace: Workspace, session: SessionRecord) -> TurnRecord | None:
    """The session's last stored turn (any status), None before the first; as
    `recorded_turn` reads it: a chat reads it as it starts, and another role's context
    there (a write-share grantee's) must neither stop nor slow it."""
    try:
        return workspace.store.turns.turn(session.id, expanded=False)
    except NotFound:
        return None


def history_version(workspace: Workspace, session: SessionRecord) -> int | None:
    """What moves when text leaves the session's history (a purge, /undo, a replaced turn;
    in any process); None once the session is gone. One row read: what an open chat checks
    before it shows copies it keeps (its Up history, its completion menus)."""
    return workspace.store.sessions.erasures(session.id)


def last_history_reply(workspace: Workspace,
                       session: SessionRecord) -> tuple[int, str | None] | None:
    """The history's last turn and its reply (None when it has none), read from the messages:
    an imported or forked session's turns have no turn records. None: no messages."""
    history = workspace.store.history
    last = history.turn_count(session.id)
    if last == 0:
        return None
    messages = history.messages(session.id, first_turn=last)
    return last, next((m.content for m in reversed(messages) if m.role == "assistant"), None)


def last_completed_turn_id(workspace: Workspace, session: SessionRecord) -> int | None:
    """The id of the session's last completed turn still in memory (failed or cancelled
    attempts may follow it): the one a regenerate replaces (see store.turns.hide_turn)."""
    return workspace.store.turns.last_completed_id(session.id)


def check_replaceable(workspace: Workspace, session: SessionRecord,
                      expected: int | None) -> None:
    """Refuse (TurnNotReplaceable) a regenerate or edit of the session's last turn that
    would be refused, before anything says it is under way (see store.turns.hide_turn);
    `expected`: the id of the turn the caller means."""
    workspace.store.turns.replaceable_turn(session.id, expected)


@dataclass(frozen=True)
class TurnRange:
    """Turns `first`..`last` (inclusive); `last` None: to the end."""

    first: int = 1
    last: int | None = None

    @classmethod
    def parse(cls, spec: str) -> TurnRange:
        """`1-40`, `120-` or `7`; `1–40` too, as chatmem prints a range (an en dash)."""
        start, dash, end = spec.replace("–", "-").partition("-")
        try:
            first = int(start) if start.strip() else 1
            last = int(end) if end.strip() else None if dash else first
        except ValueError:
            raise UsageError(f"--turns must be FIRST-LAST, e.g. 1-40 or 120-, got {spec!r}"
                             ) from None
        if first < 1 or (last is not None and last < first):
            raise UsageError(f"--turns {spec}: turns are numbered from 1, FIRST no more than "
                             "LAST")
        return cls(first, last)


@dataclass(frozen=True)
class SessionPage:
    """A session's settings and the messages of turns `first`..`last` of `total`."""

    session: SessionRecord
    first: int
    last: int
    total: int
    messages: list[MessageRecord]
    access: SessionAccess
    """The user's own (owner None in a file), or shared with them by `access.owner`."""
    shares: list[Share] | None
    """Whom the user shared their own session with; None for one shared with them."""

    @property
    def partial(self) -> bool:
        return self.first > 1 or self.last < self.total


def show_session(workspace: Workspace, name: str, turns: TurnRange | None = None, *,
                 every_turn: bool = False, newest: int = 50) -> SessionPage:
    """A page of `name`: the `turns` asked for, every turn, or the `newest` turns."""
    store = workspace.store
    session = store.sessions.session(name)
    total = store.history.turn_count(session.id)
    if every_turn or total == 0:
        first, last = 1, max(total, 1)
    elif turns is None:
        first, last = max(1, total - newest + 1), total
    else:
        first, last = turns.first, min(turns.last or total, total)
        if first > total:
            # As inspect --turn: past the last turn is an error naming it, not an empty
            # page "turns 5–3 of 3" (nor a 2**63 reaching SQLite as an OverflowError).
            raise NoSuchTurn(name, first, total)
    return SessionPage(session, first, last, total,
                       store.history.messages(session.id, first, last),
                       store.sessions.session_access(session.id),
                       store.sessions.shares(session.id))


@dataclass(frozen=True)
class Deleted:
    session: SessionRecord
    profile_facts: list[str]
    """Keys of facts the session taught its user's profile: they are the user's and stay."""
    vacuumed: bool
    """True: nothing erased survives in the file or its WAL (SQLite: secure_delete zeroed the
    rows and the WAL was folded in and emptied; the file is no longer rewritten)."""


def delete_session(workspace: Workspace, name: str) -> Deleted:
    """Erase a session for good: messages, turns, summaries, session facts, index rows (and
    the vector cache, which may hold vectors of its text)."""
    from chatmem.app.privacy import drop_vector_cache

    store = workspace.store
    session = store.sessions.session(name)
    learned = store.redactions.user_facts_from(session.id)
    store.sessions.delete_session(name)
    # Physical: secure_delete has zeroed the rows in the pages they were on; the WAL's older
    # copies of those pages go when it is folded in and emptied. No VACUUM: rewriting the
    # whole file for a small session took seconds on a large one and as much free disk.
    store.clear_log()
    drop_vector_cache()
    return Deleted(session, learned, vacuumed=store.db.kind == "sqlite")


def rename_session(workspace: Workspace, name: str, new_name: str) -> SessionRecord:
    """Rename a session; everything it owns follows. Returns it under its new name."""
    return workspace.store.sessions.rename_session(name, new_name)


def fork_session(workspace: Workspace, name: str, new_name: str, *,
                 at_turn: int | None = None,
                 progress: Callable[[int, int], None] | None = None) -> ForkReport:
    """Copy a session (turns 1..`at_turn`, default all) into a new one to branch from;
    `progress` hears (messages copied, messages to copy) as it goes."""
    return workspace.store.forks.fork_session(name, new_name, at_turn=at_turn,
                                              progress=progress)


def last_messages(workspace: Workspace, session: SessionRecord,
                  turns: int) -> list[MessageRecord]:
    """The messages of the session's last `turns` turns, oldest first."""
    store = workspace.store
    last = store.history.turn_count(session.id)
    return store.history.messages(session.id, max(1, last - turns + 1))


def recent_turns(workspace: Workspace, *, count: int = 20, session: str | None = None,
                 query: str | None = None, replied: bool = False) -> list[LogEntry]:
    """The latest turns across sessions (or of one), or those whose question or reply match
    `query` (the full-text index, English and Chinese), best match first; `replied`: only
    turns that have a reply (`logs -r`)."""
    store = workspace.store
    session_id = None
    if session is not None:
        # Worded as every other command's no-such-session: with a near name and the listing.
        session_id = store.sessions.session(session).id
    return store.logs.recent_turns(limit=count, session_id=session_id, query=query,
                                   replied=replied)


def holds_history(workspace: Workspace, session: str) -> bool:
    """Whether the named session's history holds a message (one imported, or forked, has
    messages but no turn in the logs, which record only the turns had here)."""
    record = workspace.store.sessions.find_session(session)
    return record is not None and has_messages(workspace, record)


def has_messages(workspace: Workspace, session: SessionRecord) -> bool:
    """Whether `session` holds a message yet (one row read at the most)."""
    return workspace.store.history.message_count(session.id, at_most=1) > 0


def usage_by_model(workspace: Workspace, session: SessionRecord) -> list[ModelUsage]:
    """Tokens the session's turns used, per model (what its cost is computed from)."""
    return workspace.store.logs.usage_by_model(session.id)
