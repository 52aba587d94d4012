"""Facts as a person keeps them: list, remember (in a session or the user's profile), forget,
unpin a drift-guard pin, and purge a fact's value wherever it is mentioned. One rule for
every front end; each write is one transaction."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

from chatmem.errors import NotFound, UsageError
from chatmem.store.records import AccessLevel, FactScope

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.memory.pins import PinnedFact, ReadPins
    from chatmem.privacy.phones import NumberForm
    from chatmem.privacy.purge import LeftMentions, Mentioned, Purge
    from chatmem.store import FactHistoryRecord, FactRecord, Redaction, SessionRecord
    from chatmem.store.records import StateRow


@dataclass(frozen=True)
class Owner:
    """Who a fact or a pin belongs to: `scope` and the session's or the user's name."""

    scope: FactScope
    name: str


@dataclass(frozen=True)
class ListedFact:
    fact: FactRecord
    owner: Owner | None
    history: tuple[FactHistoryRecord, ...]
    """Its earlier values, newest first."""
    expires_at: str | None
    """When it expires (its own end, or unused for fact_idle_days); None: kept."""


@dataclass(frozen=True)
class ListedPin:
    pin: PinnedFact
    owner: Owner
    pinned_at: str | None


@dataclass
class FactListing:
    facts: list[ListedFact] = field(default_factory=list)
    pins: list[ListedPin] = field(default_factory=list)
    session_names: dict[int, str] = field(default_factory=dict)
    """Names of the sessions the facts (and their earlier values) came from."""
    skipped: list[StateRow] = field(default_factory=list)
    """Pin lists of sessions shared with the user that could not be read (pins.read_pins)."""
    speakers: dict[int, str] = field(default_factory=dict)
    """Fact id → the group chat member who stated it (memory.facts.stated_by)."""


def select_facts(workspace: Workspace, *, user: str | None = None, session: str | None = None,
                 include_deleted: bool = False) -> list[FactRecord]:
    """Facts of a user, of a session (with its user's), or every fact in the history."""
    store = workspace.store
    if session is None and user is None:
        return store.facts.facts(include_deleted=include_deleted)
    chosen: dict[int, FactRecord] = {}
    if session is not None:
        record = store.sessions.session(session)
        for fact in store.facts.facts(user=record.user, session_id=record.id,
                                      include_deleted=include_deleted):
            chosen[fact.id] = fact
    if user is not None:
        for fact in store.facts.facts(user=user, include_deleted=include_deleted):
            chosen[fact.id] = fact
    return [chosen[i] for i in sorted(chosen)]


def select_pins(workspace: Workspace, *, user: str | None = None,
                session: str | None = None) -> ReadPins:
    """Drift-guard pins belong to sessions: a session's, or every session's unless `user`;
    with the pin lists of sessions shared with the user that could not be read, passed over
    (each front end names them)."""
    from chatmem.memory.pins import ReadPins, read_pins

    store = workspace.store
    guard = workspace.settings.summary.drift_guard
    if session is not None:
        return read_pins(store.memory, store.sessions.session(session).id, drift_guard=guard)
    return ReadPins([], []) if user is not None else read_pins(store.memory, drift_guard=guard)


def list_facts(workspace: Workspace, *, user: str | None = None,
               session: str | None = None) -> FactListing:
    """Facts and pinned details with their owner, source, earlier values and end."""
    read = select_pins(workspace, user=user, session=session)
    listing = _listing(workspace, select_facts(workspace, user=user, session=session),
                       read.pins)
    listing.skipped = read.skipped
    return listing


def session_facts(workspace: Workspace, session: SessionRecord) -> FactListing:
    """The facts a session may use (its own and its user's profile facts), and its pins."""
    from chatmem.memory.pins import pinned_facts

    store = workspace.store
    return _listing(workspace, store.facts.facts(user=session.user, session_id=session.id),
                    pinned_facts(store.memory, session.id,
                                 drift_guard=workspace.settings.summary.drift_guard))


def _listing(workspace: Workspace, facts: list[FactRecord],
             pins: list[PinnedFact]) -> FactListing:
    from chatmem.memory.facts import provenance, stated_by
    from chatmem.memory.pins import pinned_at
    from chatmem.privacy.retention import expiry_of

    store = workspace.store
    names, history = provenance(store, facts)
    idle = workspace.settings.fact_idle_days
    # Addresses: a session shared with the user may have the name of one of their own.
    owners = store.sessions.session_addresses(
        {f.session_id for f in facts if f.session_id is not None} | {p.session_id for p in pins})
    made = pinned_at(store.memory, pins)
    return FactListing(
        [ListedFact(f, _owner(f, owners), tuple(history.get(f.id, ())), expiry_of(f, idle))
         for f in facts],
        [ListedPin(p, Owner(FactScope.SESSION, owners.get(p.session_id, "?")), made.get(p))
         for p in pins],
        names, speakers=stated_by(store.history, facts))


def owner_of(workspace: Workspace, fact: FactRecord) -> Owner | None:
    """Who `fact` belongs to, as a listing names it: its user for a profile fact, else its
    session."""
    if fact.scope == FactScope.USER or fact.session_id is None:
        return _owner(fact, {})
    return _owner(fact, workspace.store.sessions.session_addresses({fact.session_id}))


def _owner(fact: FactRecord, sessions: dict[int, str]) -> Owner | None:
    if fact.scope == FactScope.USER:
        return Owner(FactScope.USER, fact.user or "")
    if fact.session_id is None:
        return None
    return Owner(FactScope.SESSION, sessions.get(fact.session_id, "?"))


# -- remembering ----------------------------------------------------------------------------


def remember(workspace: Workspace, session: SessionRecord, text: str, *,
             in_profile: bool = False, lasting: timedelta | None = None) -> list[FactRecord]:
    """Store what `text` states, now: `KEY: VALUE`, or statements like "my name is Ana"
    (else the whole text as a note), in the session or, `in_profile`, in its user's profile;
    `lasting` makes them expire. A key already known is updated; a session fact remembered
    into the profile moves there (one fact, one key), and a profile fact remembered for the
    session alone gets the session's own value beside it, which this session uses instead.
    All in one transaction; SessionGone (unnamed: the caller knows how to name it) when the
    session was deleted meanwhile."""
    from chatmem.engine.preflight import without_typed_credentials
    from chatmem.memory.facts import find_facts, missing_half, split_key_value
    from chatmem.memory.state import SessionState
    from chatmem.providers.scripted_facts import extract
    from chatmem.timestamps import stamp

    if not text.strip():
        raise UsageError("nothing to remember (empty text)")
    # As a turn's input is (Engine.without_credentials): a fact is stored and sent with
    # every later turn, and the key never reaches the database; the value shown says so.
    # The workspace's: the key the history opened with (key_command's) too.
    [text], _ = without_typed_credentials(workspace.settings, text,
                                          secrets=workspace.typed_secrets())
    half = missing_half(text)
    if half is not None:
        raise UsageError(f"nothing to remember: {text.strip()!r} has no {half}; "
                         "give both, KEY: VALUE")
    store = workspace.store
    ends = stamp(store.clock() + lasting) if lasting is not None else None
    pair = split_key_value(text)
    pairs = [pair] if pair else extract(text)[0]
    scope = FactScope.USER if in_profile and session.user else FactScope.SESSION
    stored: list[FactRecord] = []
    with store.write():
        # Under the write lock: a session deleted meanwhile (another shell, retention) is
        # said so, as a turn says it, not as the database's foreign key or row security.
        store.sessions.check_kept(session.id, "nothing was remembered")
        # A write share's grantee remembers his own value, beside the owner's (FactRecord.speaker).
        access = store.sessions.session_access(session.id)
        speaker = access.role if access.level is not AccessLevel.OWN else None
        # A member's value stored before facts kept their speaker is not the user's to replace.
        SessionState(store, session.id, session.user).keep_speakers()
        live = store.facts.facts(user=session.user, session_id=session.id)
        if not pairs:
            taken = {f.key for f in live}
            key = next(k for n in range(1, len(taken) + 2) if (k := f"note {n}") not in taken)
            pairs = [(key, text.strip())]
        for key, value in pairs:
            # Read afresh: an earlier pair of this very text may have stored the key.
            existing = [f for f in find_facts(store.facts.facts(
                user=session.user, session_id=session.id), key)
                if f.scope == FactScope.USER or f.speaker == speaker]
            if scope is FactScope.USER:
                for moved in (f for f in existing if f.scope == FactScope.SESSION):
                    store.facts.forget_fact(moved.id)  # promoted: one fact, one key
            # A profile fact remembered for this session only is not changed: the session's
            # own value stands in for it here (SessionState.live_facts), nowhere else.
            fact = store.facts.upsert_fact(
                existing[0].key if existing else key, value, scope=scope,
                user=session.user, session_id=session.id, source_session_id=session.id,
                speaker=speaker,
            )
            # Stated again without an end, a fact is kept until forgotten.
            stored.append(store.retention.set_fact_expiry(fact.id, ends))
    return stored


# -- forgetting -----------------------------------------------------------------------------


def one_to_forget(workspace: Workspace, ref: str, facts: list[FactRecord],
                  pins: list[PinnedFact], *, narrow: str,
                  owner: Callable[[PinnedFact], str] | None = None) -> FactRecord | PinnedFact:
    """The one fact or pin `ref` names among `facts` and `pins` (an id, a key, p3 or a pin's
    text); NotFound when it names none, UsageError listing them when it names several."""
    from chatmem.memory.forgetting import one_to_forget as pick

    chosen = pick(ref, facts, pins, narrow=narrow, owner=owner)
    if chosen is None:
        raise NotFound(f"no fact {ref!r}")
    return chosen


def fact_by_id(workspace: Workspace, fact_id: int, *,
               include_deleted: bool = False) -> FactRecord:
    """The fact of that exact id, read alone; one forgotten or past its own end is found
    only with `include_deleted` (a purge still erases it). NotFound otherwise."""
    store = workspace.store
    fact = store.facts.fact(fact_id)
    gone = fact.deleted_at is not None or (
        fact.expires_at is not None and fact.expires_at <= store.now())
    if gone and not include_deleted:
        raise NotFound(f"no fact with id {fact_id}")
    return fact


def forget(workspace: Workspace, chosen: FactRecord | PinnedFact) -> None:
    """Forget a fact (no later context holds it) or unpin a pin (not pinned again)."""
    from chatmem.memory.pins import PinnedFact, unpin

    if isinstance(chosen, PinnedFact):
        # Said as every other write to a read-only share is, before anything is tried (the
        # server's refusal was worded as a row security policy's).
        workspace.store.sessions.check_session_writable(chosen.session_id)
        unpin(workspace.store, chosen)
    else:
        workspace.store.facts.forget_fact(chosen.id)


def check_forgettable(workspace: Workspace, fact: FactRecord) -> None:
    """Raise unless this role may forget `fact` (what a dry run says before `forget`)."""
    workspace.store.facts.check_forgettable(fact)


def purge_mentions(workspace: Workspace, fact: FactRecord) -> list[Mentioned]:
    """What purging `fact` would erase beyond the fact: each message of its profile's
    sessions that mentions its value or an earlier one, with where."""
    from chatmem.privacy import purge as purging

    return purging.mentioned_messages(workspace.store, _purge_plan(workspace, fact))


def purge_preview(workspace: Workspace, fact: FactRecord) -> Redaction:
    """What purging `fact` would change beyond the fact, by place, changing nothing: the plan
    `purge` applies, so a dry run says what the purge then does."""
    from chatmem.privacy import purge as purging

    return purging.preview(workspace.store, fact)


def purge_left(workspace: Workspace, fact: FactRecord) -> list[LeftMentions]:
    """The mentions purging `fact` would leave: in sessions of its profile others own."""
    from chatmem.privacy import purge as purging

    return purging.mentions_left(workspace.store, _purge_plan(workspace, fact))


@dataclass(frozen=True)
class Purged:
    """What a purge did: the fact erased, where its values were replaced by [forgotten], and
    the sessions whose name still holds one (a purge changes what was said, not what a
    session is called: `sessions rename` does), which every front end must tell."""

    fact: FactRecord
    redaction: Redaction
    still_named: tuple[str, ...]
    left: tuple[LeftMentions, ...] = ()
    """Mentions in sessions others own and share with this role: theirs to erase."""
    spelled_otherwise: tuple[tuple[str, str], ...] = ()
    """(other, own) characters a search reads as the value's and the purge did not: the
    mentions written with them are kept, uncounted (privacy.near_mentions.spelled_otherwise)."""
    number_part: str | None = None
    """For a phone number the purge kept a form of as perhaps another number (555-0134): the
    last digits every form of it holds (0134), by which `logs -q` finds them, uncounted."""
    number_forms: frozenset[NumberForm] = frozenset()
    """How those kept forms are written: in part, with a country code, after more digits."""
    opening_named: tuple[str, ...] = ()
    """Those of `still_named` a digest of their first message names (a chat `serve` names
    by its opening): renamed, its client's next message stores its copy, the value with it,
    anew under that name; the chat must leave its client first."""


def purge(workspace: Workspace, fact: FactRecord) -> Purged:
    """Erase `fact` and replace its values by [forgotten] wherever they are mentioned, all or
    nothing (privacy.purge.purge_fact: the plan is made again under the write lock), then
    rewrite the history so no old page keeps them."""
    from chatmem.app.privacy import drop_vector_cache
    from chatmem.privacy import purge as purging
    from chatmem.privacy.near_mentions import spelled_otherwise

    # Read first: once erased, the fact's values are nowhere to look them up by.
    planned = _purge_plan(workspace, fact)
    named = purging.sessions_named_with(workspace.store, planned)
    by_opening = _named_by_opening(workspace, planned)
    named += [n for n in by_opening if n not in named]
    left = purging.mentions_left(workspace.store, planned)
    erased = purging.purge_fact(workspace.store, fact.id)
    drop_vector_cache()
    # Counting those mentions would read every message again, which a purge never does.
    return Purged(fact, erased.redaction, tuple(named), tuple(left),
                  tuple(spelled_otherwise(fact.value)),
                  _kept_part(fact.value) if erased.kept_numbers else None,
                  erased.kept_numbers, tuple(by_opening))


def _kept_part(value: str) -> str | None:
    """What `logs -q` finds the forms a purge kept by: a phone number's last digits, a
    date's year (7/5/2023 kept for May 7, 2023: a date read the other way round)."""
    from chatmem.privacy.date_forms import date_of
    from chatmem.privacy.phones import last_part

    if (part := last_part(value)) is not None:
        return part
    date = date_of(value)
    return None if date is None or date.year is None else str(date.year)


_OPENING_NAME = re.compile(r"(chat-[0-9a-f]{12})(?:-[0-9]+)?")


def _named_by_opening(workspace: Workspace, planned: Purge) -> list[str]:
    """The purge's sessions named by a digest of their first user message (a chat no id
    names, `compared_text.opening_name`) when that message mentions a value: the name is
    not erased with it, and confirms a guess of the value offline (the digest of "my phone
    is [the guess]" for each number tried: one of 10,000 in a fifth of a second)."""
    from chatmem.app.compared_text import opening_name
    from chatmem.privacy.mentions import all_spans

    history = workspace.store.history
    found = []
    for session_id, name in workspace.store.sessions.session_names(planned.session_ids).items():
        stem = _OPENING_NAME.fullmatch(name)
        if stem is None:
            continue
        first = [m for m in history.messages(session_id, 1, 1) if m.role == "user"][:1]
        if first and all_spans(first[0].content, planned.values, planned.keep) and (
                opening_name(first[0]) == stem[1]):
            found.append(name)
    return sorted(found)


def _purge_plan(workspace: Workspace, fact: FactRecord) -> Purge:
    """What purging `fact` searches: its profile's sessions, for its value and earlier ones."""
    from chatmem.privacy import purge as purging

    return purging.plan(workspace.store, fact)


def session_addresses(workspace: Workspace, ids: set[int]) -> dict[int, str]:
    """Session id → what names it to the user: `OWNER/NAME` for another's (their own may have
    its name), else its name."""
    return workspace.store.sessions.session_addresses(ids)


def session_address_of(workspace: Workspace, session_id: int) -> str:
    return workspace.store.sessions.address(session_id)


def live_facts(workspace: Workspace, session: SessionRecord) -> list[FactRecord]:
    """The facts a session may use: its own, and its user's profile facts (but those it has
    its own value for)."""
    from chatmem.memory.state import SessionState

    return SessionState(workspace.store, session.id, session.user).live_facts()


def session_pins(workspace: Workspace, session: SessionRecord) -> list[PinnedFact]:
    """The details the drift guard pinned in a session."""
    from chatmem.memory.pins import pinned_facts

    return pinned_facts(workspace.store.memory, session.id,
                        drift_guard=workspace.settings.summary.drift_guard)
