"""Rows of the history file as plain dataclasses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from chatmem.speakers import with_speaker, writer_label
from chatmem.store.postgres_writers import trusted_count, written_by_owner
from chatmem.store.stored_values import (
    checked_time,
    json_text,
    known_columns,
    read_time,
    stored_enum,
    stored_json,
    unreadable_state,
    unreadable_time,
)
from chatmem.tokens import token_count


class TurnStatus(StrEnum):
    """How a turn ended. Only an ok turn's messages are in the history (and in memory)."""

    OK = "ok"
    FAILED = "failed"
    """The provider failed; only the turn row is stored, to inspect what was sent."""
    CANCELLED = "cancelled"
    """Ctrl-C (or a client that went away) during the reply; kept out of memory."""


class FactScope(StrEnum):
    """Whose a fact is: one session's, or a user profile's (every session of it)."""

    SESSION = "session"
    USER = "user"


MOST_INTEGER = 2**63 - 1
"""The largest id or number a database column holds (SQLite's and PostgreSQL's bigint): a
larger one names no row, and binding it would fail."""


class AccessLevel(StrEnum):
    """What the connecting role may do with a session (a file's are all its user's own)."""

    OWN = "own"
    WRITE = "write"
    """Shared with it for writing: add turns, change settings; not rename, not delete."""
    READ = "read"
    """Shared with it read-only: every write is refused."""


@dataclass(frozen=True)
class SessionAccess:
    level: AccessLevel
    owner: str | None = None
    """The role that owns it (PostgreSQL); None in a file."""
    role: str | None = None
    """The connecting role (PostgreSQL); None in a file."""


OWNED = SessionAccess(AccessLevel.OWN)


@dataclass(frozen=True)
class SessionRecord:
    id: int
    name: str
    strategy: str
    params: dict[str, Any]
    provider: str | None
    model: str | None
    system: str | None
    user: str | None
    created_at: str
    updated_at: str
    tokenizer: str | None = None
    """The tokenizer its latest turn was counted with (or its transcript recorded)."""
    retention_days: int | None = None
    """Its own retention: None follows the config's retention_days, 0 keeps it for good."""

    def __post_init__(self) -> None:
        for column in ("created_at", "updated_at"):
            checked_time(getattr(self, column), f"session {self.name!r}: {column}")

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> SessionRecord:
        data = known_columns(cls, row)
        data["params"] = stored_json(data["params"], f"session {data['name']!r}: params", "{}")
        return cls(**data)


def session_address(name: str, shared_by: str | None) -> str:
    """What names a session in a command: `OWNER/NAME` when another role shared it with the
    user (their own session may have the same name), else its name."""
    return f"{shared_by}/{name}" if shared_by else name


@dataclass(frozen=True)
class SessionSummary:
    """One line of `list_sessions`: a session's settings and how much it holds.

    The fields are in the query's column order, which `sessions list --json` keeps."""

    name: str
    strategy: str
    params: dict[str, Any]
    provider: str | None
    model: str | None
    tokenizer: str | None
    created_at: str
    updated_at: str
    messages: int
    """Its messages in the history (a replaced turn's left out)."""
    turns: int
    """The conversation's turns, forked and imported ones too."""
    requests: int
    """The requests recorded for it, failed and cancelled ones included."""
    id: int
    """What names it when another session has its name (one shared with the user)."""
    shared_by: str | None = None
    """Its owner, when another role shared it with the user (PostgreSQL); None for their own.
    `address` names it in any command."""
    access: AccessLevel = AccessLevel.OWN
    """The user's own, or shared with them for writing or read-only (sharing.listed_access)."""
    shares: int | None = 0
    """How many roles the user shared their own session with; None for one shared with them
    (row security shows a grantee only their own share)."""
    failed: int = 0
    """Its requests the provider failed: stored (`logs` lists them), none in the history."""
    cancelled: int = 0
    """Its requests cancelled during the reply (Ctrl-C): stored, none in the history. A
    session of cancelled turns only listed "0 turns, 0 messages" as if it held nothing."""

    @property
    def address(self) -> str:
        """What names it in a command: `OWNER/NAME` when shared, else its name."""
        return session_address(self.name, self.shared_by)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> SessionSummary:
        data = known_columns(cls, row)
        data["params"] = stored_json(data["params"], f"session {data['name']!r}: params", "{}")
        if "access" in data:
            data["access"] = AccessLevel(data["access"])
        return cls(**data)


@dataclass(frozen=True)
class MessageRecord:
    id: int
    session_id: int
    position: int
    turn: int
    role: str
    content: str
    external_id: str | None
    created_at: str
    writer: str | None = None
    """On PostgreSQL, the role that inserted a message other than a reply into a session it
    does not own (the server's `writer`, p023, which no role writes: a write share's grantee,
    or the owner of the session a fork copied it from); None otherwise."""
    stored_text: str | None = field(default=None, compare=False, repr=False)
    """The text as stored, where `content` has the writer's label added (`as_stored`)."""

    def __post_init__(self) -> None:
        # Every message read goes through here (a buffer turn reads them all): the row is
        # named only when its time does not parse.
        try:
            read_time(self.created_at)
        except (TypeError, ValueError):
            raise unreadable_time(self.created_at, f"message {self.id} (session"
                                  f" {self.session_id}, position {self.position}): created_at"
                                  ) from None
        if self.writer is not None:
            # The speaker is the server's word, not the text's: a grantee's psql INSERT or
            # another front end stores no label, and his own typed `ann: …` must not read as
            # hers. Added here, where every context, summary, fact request and recall reads
            # messages; an older row labelled in its text (`bob: …`) is not labelled twice.
            labelled = as_read(self.role, self.content, self.writer)
            if labelled != self.content:
                object.__setattr__(self, "stored_text", self.content)
                object.__setattr__(self, "content", labelled)

    @property
    def as_stored(self) -> str:
        """The message's text as stored, without the label its writer's name adds: what a
        copy of it stores (the copy keeps its writer, so it reads labelled alike)."""
        return self.content if self.stored_text is None else self.stored_text


MESSAGE_COLUMNS = "id, session_id, position, turn, role, content, external_id, created_at"
"""A MessageRecord's columns in its fields' order: `MessageRecord(*row)` of a row selected
with them skips matching names row by row (recall reads hundreds of messages a turn)."""


def message_columns(kind: str, alias: str = "messages") -> str:
    """MESSAGE_COLUMNS of `alias` (a `messages` row), on PostgreSQL followed by the role that
    wrote it when that is not the session's owner and it is not a reply (MessageRecord's
    `writer`): the speaker a context names, whatever the text says."""
    return ", ".join(f"{alias}.{c}" for c in MESSAGE_COLUMNS.split(", ")) \
        + writer_column(kind, alias)


def writer_column(kind: str, alias: str) -> str:
    """`, ` the role that wrote `alias` (a `messages` row) when that is not its session's
    owner and it is not a reply, on PostgreSQL (MessageRecord.writer); nothing on a file."""
    if kind != "postgresql":
        return ""
    return (f", CASE WHEN {alias}.role <> 'assistant'"
            f" AND NOT {written_by_owner(alias)} THEN {alias}.writer END")


def as_read(role: str, content: str, writer: str | None) -> str:
    """A message's `content` as every reader gets it: after its `writer`'s label when
    another role than its session's owner wrote it (MessageRecord)."""
    return content if writer is None else with_speaker(role, content, writer_label(writer))


def counted_messages(kind: str) -> str:
    """MESSAGE_COLUMNS of messages `m`, then each one's stored token count under the
    tokenizer bound first (None: not counted there, or by a role the reader does not trust:
    postgres_writers.trusted_count), on backend `kind`: a WHERE on `m` follows. A lookup by
    key per message: a join lets PostgreSQL's planner hash the whole token_counts table
    (every message's count)."""
    return (f"SELECT {message_columns(kind, 'm')}"
            + ", (SELECT c.tokens FROM token_counts c WHERE c.message_id = m.id"
            f" AND c.tokenizer = ?{trusted_count(kind, 'c')}) FROM messages m")


@dataclass
class TurnRecord:
    """One request as it was sent, whatever its outcome."""

    session_id: int
    status: TurnStatus
    input: str
    context: dict[str, Any]
    strategy: str
    params: dict[str, Any] = field(default_factory=dict)
    reply: str | None = None
    provider: str | None = None
    model: str | None = None
    tokenizer: str | None = None
    estimated_tokens: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: int | None = None
    rendered_prompt: str | None = None
    error: str | None = None
    number: int = 0
    history_turn: int | None = None
    user_message_id: int | None = None
    assistant_message_id: int | None = None
    created_at: str = ""
    superseded_by: int | None = None
    """The number of the turn that replaced this one (/retry, /edit-last): its messages
    stay stored but are out of memory."""
    id: int | None = None
    at_turn: int | None = None
    """Not a column: the conversation's turn this request was (`history_turn`) or was
    attempted as (a failed or cancelled one), as `sessions show`, fork --at-turn, inspect
    and logs number turns; `number` only orders the session's requests. Read with
    `store.turns` (turns.AT_TURN)."""

    @property
    def turn(self) -> int:
        """The conversation's turn number (see `at_turn`); `number` before it is read."""
        return self.at_turn or self.history_turn or self.number

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TurnRecord:
        data = known_columns(cls, row)
        what = f"turn {data.get('number')}"
        data["status"] = stored_enum(TurnStatus, data["status"], f"{what}: status")
        data["context"] = stored_json(data["context"], f"{what}: context")
        data["params"] = stored_json(data["params"], f"{what}: params", "{}")
        for name in ("prompt_tokens", "completion_tokens"):
            # Written before the provider's counts were checked (a server's 'lots', 1.5e300,
            # -1000): not known, rather than a traceback in every `logs` and `inspect`.
            data[name] = token_count(data.get(name))
        return cls(**data)

    def to_row(self, stored_context: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The row to insert; `stored_context` is the context as stored, when it differs."""
        row = {k: v for k, v in self.__dict__.items() if k not in ("id", "at_turn")}
        row["context"] = json_text(self.context if stored_context is None else stored_context)
        row["params"] = json_text(self.params)
        return row


@dataclass(frozen=True)
class StateRow:
    """One stored value of a strategy's state, with the session it is in (strategy_state_values):
    a row another role's session holds that chatmem cannot read is passed over by name."""

    session_id: int
    strategy: str
    key: str
    name: str
    """The session's own name (its owner's word for it)."""
    shared_by: str | None
    """Its owner when another role shares it with the user; None for the user's own."""
    value: Any = None
    readable: bool = True
    """False: the value is not JSON (written outside chatmem); `value` is then None."""

    @property
    def address(self) -> str:
        return session_address(self.name, self.shared_by)

    def error(self, why: str = "is not valid JSON in the history") -> Exception:
        """The one line naming the row and how its owner drops it."""
        return unreadable_state(self.name, self.shared_by, self.strategy, self.key, why)


@dataclass(frozen=True)
class SummaryRecord:
    id: int
    session_id: int
    strategy: str
    version: int
    text: str
    covered_ids: list[int]
    last_message_id: int | None
    anchors: list[str]
    dropped_anchors: list[str]
    model: str | None
    created_at: str
    last_turn: int | None = None
    """The turn of `last_message_id` in its session's history: where the summary ends."""

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> SummaryRecord:
        data = known_columns(cls, row)
        for key in ("covered_ids", "anchors", "dropped_anchors"):
            data[key] = stored_json(data[key], f"summary v{data.get('version')}: {key}", "[]")
        return cls(**data)


@dataclass(frozen=True)
class FactRecord:
    id: int
    scope: FactScope
    user: str | None
    session_id: int | None
    key: str
    value: str
    source_message_id: int | None
    source_turn: int | None
    created_at: str
    updated_at: str
    deleted_at: str | None
    source_session_id: int | None = None
    """The session the fact was stated in (its turn is source_turn)."""
    expires_at: str | None = None
    """Its own end, when the user gave one (/remember --for 7d)."""
    used_at: str | None = None
    """When a context last sent it; an unused extracted fact can expire (fact_idle_days)."""
    speaker: str | None = None
    """Who stated a session fact: a group chat's member or a write share's grantee; None:
    the session's owner (and every fact stored before facts kept it, read as before)."""

    def __post_init__(self) -> None:
        for column in ("created_at", "updated_at", "deleted_at", "expires_at", "used_at"):
            if column in ("created_at", "updated_at") or getattr(self, column) is not None:
                checked_time(getattr(self, column), f"fact {self.id} ({self.key!r}): {column}")

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> FactRecord:
        data = known_columns(cls, row)
        data["scope"] = stored_enum(FactScope, data["scope"], f"fact {data.get('id')}: scope")
        return cls(**data)


@dataclass(frozen=True)
class FactHistoryRecord:
    """A value a fact had before a newer one replaced it."""

    id: int
    fact_id: int
    key: str
    value: str
    source_session_id: int | None
    source_turn: int | None
    stated_at: str
    replaced_at: str

    def __post_init__(self) -> None:
        for column in ("stated_at", "replaced_at"):
            checked_time(getattr(self, column), f"fact {self.fact_id}'s earlier value {self.id}:"
                                                f" {column}")
