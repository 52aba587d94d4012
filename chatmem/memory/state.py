"""Derived memory state of one session (summaries, facts, prune boundaries), in the store.

Strategies read it while building a context and write it only in `update`,
after a turn has committed.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from chatmem.errors import StateRefused, StoreError, StoreFailure
from chatmem.memory.fact_keys import key_identity
from chatmem.memory.message_counts import MessageCounts
from chatmem.memory.state_values import rekeyed, unstorable
from chatmem.store import FactRecord, FactScope
from chatmem.store.protocols import MemoryStore
from chatmem.store.records import AccessLevel
from chatmem.tokens import TokenCounter


@dataclass
class UpdateRun:
    """One strategy's update under way (`SessionState.updating`)."""

    through: int
    """The history's last turn it was given."""
    seen: int | None
    """`sessions.erasures` when it began, before it read anything."""
    checked: bool = True
    """Whether its writes are checked against `seen` (a built-in checks its own)."""
    dropped: bool = False
    """Whether a write was dropped: text left the session's memory since `seen`."""
    owner: str | None = None
    """The plugin strategy whose update this is, whose code writes no other name's state (a
    member of `notes+entity` writing `entity`'s would make it the other's; `_store`); None
    for chatmem's own. The names chatmem's code writes for whatever strategy runs it
    (BOOKKEEPING) stay open: a plugin may run a built-in's update (a subclass of entity)."""
    refused: StateRefused | None = None
    """The write the owner was refused, said even when its update caught it (`_store`)."""


def _owned_by(name: str, owner: str) -> bool:
    """Whether a state stored under `name` is `owner`'s to write: its own name, a name of
    its own beneath it (`keeps-count`, `notes.index`: a separator after its name, so `sum`
    owns no `summary`), or chatmem's BOOKKEEPING."""
    return (name == owner or name in BOOKKEEPING
            or (name.startswith(owner) and not name[len(owner)].isalnum()))


BOOKKEEPING = frozenset({"facts", "sensitive"})
"""The names chatmem's own memory code writes under for any strategy that runs it (entity's
extraction: memory.extraction.STATE_KEY; the turns holding a secret: memory.sensitive_turns.
SENSITIVE_KEY): a plugin subclassing EntityStrategy writes them under its own update."""


ERASED_WHILE_UPDATING = ("text left this session's memory while the update ran (a purge, or a"
                         " turn replaced by another chat): what it made was not stored; it"
                         " runs again on the text as it is now next turn")


class SessionState:
    def __init__(self, store: MemoryStore, session_id: int, user: str | None = None,
                 *, drift_guard: bool = True) -> None:
        self.store = store
        self.session_id = session_id
        self.user = user
        self.drift_guard = drift_guard
        """The `[summary] drift_guard` setting: off, no pin is made, rebuilt ones included."""
        self.caches: dict[str, Any] = {}
        """What strategies read once and extend as turns commit (recall's timeline, vectors)."""
        self.shared: Hashable | None = None
        """What names the session's stored memory as its engine last saw it (the file, the
        session, how many times text left it: Engine.follow_erasures), for what several
        engines of this process may read once between them (recall_vectors.held_vectors):
        None, this state's caches are its own."""
        self.run: UpdateRun | None = None
        """The update under way (`updating`); None otherwise."""
        self.building: str | None = None
        """The strategy whose build runs (`built_by`): a build reads state, never writes it."""

    @property
    def through(self) -> int | None:
        """The history's last turn while an update runs; None otherwise."""
        return None if self.run is None else self.run.through

    def message_counts(self, counter: TokenCounter) -> MessageCounts:
        """Token counts of this session's messages under `counter`, kept for the process."""
        counts: MessageCounts = self.caches.setdefault(f"message_counts:{counter.key}",
                                                       MessageCounts(self.store, counter))
        return counts

    def get(self, strategy: str) -> dict[str, Any]:
        return self.store.memory.strategy_state(self.session_id, strategy)

    @contextmanager
    def updating(self, through: int, erasures: int | None = None,
                 owner: str | None = None) -> Iterator[UpdateRun]:
        """Around a strategy's update over a history of `through` turns (memory.guards.
        update_guarded): what it stores meanwhile is recorded as covering those turns, and
        is stored only if no text left the session's memory since it began: a plugin's
        update that read a message before a purge in another shell would otherwise bring
        the purged value back with its state (the run says it was `dropped`). `erasures`:
        the count as the caller last found it (a commit just checked it under the write
        lock), not read again: an older count can only drop more, never keep erased text.
        `owner`: the plugin strategy updating (UpdateRun.owner)."""
        before = self.run
        self.run = run = UpdateRun(through, self.erasures() if erasures is None else erasures,
                                   owner=owner)
        try:
            yield run
        finally:
            self.run = before

    @contextmanager
    def built_by(self, strategy: str) -> Iterator[None]:
        """Around `strategy`'s build (memory.guards.build_guarded): a `set` then is refused.
        Outside an update no owner is checked, so a plugin's build wrote any strategy's
        state, its partner's too, and with no turn to cover (`inspect --next` wrote it)."""
        before, self.building = self.building, strategy
        try:
            yield
        finally:
            self.building = before

    @contextmanager
    def checking_itself(self) -> Iterator[None]:
        """Around a built-in update that reads `erasures` before its input and checks
        `erased_since` under the write lock itself: its writes are not checked again
        against the update's start, which a purge after it began but before its own
        reading would fail (and a marker-only write, holding no text, would too)."""
        run = self.run
        if run is None:
            yield
            return
        before, run.checked = run.checked, False
        try:
            yield
        finally:
            run.checked = before

    def erasures(self) -> int | None:
        """`sessions.erasures` now, for an update to read before its input (the turns, the
        summary, the facts) and to give `erased_since` when it writes what it made."""
        return self.store.sessions.erasures(self.session_id)

    def erased_since(self, seen: int | None) -> bool:
        """Under the store's write lock: whether text left the session's memory (a purge,
        a replaced turn, here or in another process) since the count was `seen`; the
        session gone is SessionGone (no next turn to make it again). What an update made
        of the text it read then may hold the erased text: stored after the purge, it
        would bring back what the purge said was gone."""
        return self.store.sessions.erased_since(self.session_id, seen)

    def set(self, strategy: str, /, **values: Any) -> None:
        """Store the strategy's values, recorded as covering every turn the running update
        was given: a fork at an earlier turn (and /undo) rebuilds them rather than copy
        them, and the last turn they cover is not replaced (/retry, /edit-last). During an
        update, nothing is stored once text left the session's memory since it began
        (StoreError ERASED_MEANWHILE; `updating`)."""
        self._store(strategy, values, self.through)

    def set_covering(self, strategy: str, turn: int, /, **values: Any) -> None:
        """Store values derived from turns 1–`turn` alone, whatever the history holds beyond
        (a summary's boundary; 0 for bookkeeping that holds nothing a later turn made);
        checked as `set` is."""
        self._store(strategy, values, turn)

    def _store(self, strategy: str, values: dict[str, Any], covers_turn: int | None) -> None:
        if self.building is not None:
            raise StateRefused(self.building, (
                f"its build set the state of {strategy!r}: a build reads state "
                "(request.state.get), update writes it (README, \"Writing a plugin\")"))
        run = self.run
        if run is not None and run.owner is not None and not _owned_by(strategy, run.owner):
            # Another's state changed under it: `notes` reads its own keys as its own doing,
            # a fork copies them as covering turns `notes` never read.
            run.refused = StateRefused(run.owner, (
                f"it set the state of {strategy!r}: a strategy writes only its own, as"
                f" env.state.set(self.name, …) (README, \"Writing a plugin\")"),
                "could not update its memory")
            raise run.refused
        since = run.seen if run is not None and run.checked else None
        rekeying = rekeyed(values) if run is not None and run.owner is not None else None
        if run is not None and run.owner is not None and rekeying is not None:
            # A plugin's only: JSON would store it, and the next read would differ.
            run.refused = StateRefused(run.owner, f"its state's {rekeying}",
                                       "could not update its memory")
            raise run.refused
        try:
            # The store converts each value to JSON once, refusing what no other JSON reader
            # takes before anything is written (memory.state_values says which key).
            if self.store.memory.set_strategy_state(self.session_id, strategy, values,
                                                    covers_turn=covers_turn,
                                                    unless_erased_since=since):
                return
        except (ValueError, TypeError, RecursionError):
            wrong = unstorable(values)
            if wrong is None:
                raise
            refused = StateRefused(strategy if run is None or run.owner is None else run.owner,
                                   f"its state's {wrong}",
                                   "failed" if run is None else "could not update its memory")
            if run is not None:
                run.refused = refused
            raise refused from None
        assert run is not None  # (only a checked write is dropped)
        run.dropped = True
        raise StoreError(ERASED_WHILE_UPDATING, kind=StoreFailure.ERASED_MEANWHILE)

    # -- facts (entity) -------------------------------------------------------------

    def live_facts(self) -> list[FactRecord]:
        """Facts this session may use: its own, and its user's profile facts but those of a
        key the session has its own value for (remembered for this conversation only). A
        value a group chat member or a write share's grantee stated here is theirs, and one an
        imported or forked turn stated may be anyone's: it sits beside the profile's, never
        over it (`beside_profile`); each speaker's value of a key is his own, beside the
        others'. One key stored in two forms before keys were normalized (café composed and
        not) is one fact: the newer value, as the store keeps it once either is written
        again."""
        facts = self.store.facts.facts(user=self.user, session_id=self.session_id)
        newest: dict[tuple[FactScope, str, str | None], FactRecord] = {}
        for fact in sorted(facts, key=lambda f: (f.updated_at, f.id)):
            newest[fact.scope, key_identity(fact.key), fact.speaker] = fact
        live = [f for f in facts if newest[f.scope, key_identity(f.key), f.speaker] is f]
        profile = {key_identity(f.key) for f in live if f.scope == FactScope.USER}
        over = [f for f in live if f.scope == FactScope.SESSION and key_identity(f.key) in profile]
        beside = self.beside_profile(over)
        own = {key_identity(f.key) for f in over if f.id not in beside}
        return [f for f in live if f.scope == FactScope.SESSION or key_identity(f.key) not in own]

    def beside_profile(self, facts: list[FactRecord]) -> frozenset[int]:
        """Of this session's `facts`, those that sit beside the profile's value of their key
        and never hide it: another's (`stated_by_others`), and those a turn no request of
        this session asked stated (an imported transcript's or a fork's copied history,
        whose "user" may be anyone: store.history.asked). A /remember's is the user's own."""
        others = set(self.stated_by_others(facts))
        sourced = {m: f.id for f in facts if f.scope == FactScope.SESSION
                   and f.session_id == self.session_id and f.id not in others
                   and (m := f.source_message_id) is not None and f.source_turn is not None}
        asked = self.store.history.asked(self.session_id, sourced) if sourced else set()
        return frozenset(others | {fact for m, fact in sourced.items() if m not in asked})

    def stated_by_others(self, facts: list[FactRecord]) -> dict[int, str]:
        """Of this session's `facts`, those someone else stated (fact id → the group chat
        member, or the write share's grantee, whose message stated it; the name the request
        gave, store.history.speakers). In a session another role shares with this one, a
        value no speaker is named for is its owner's (her turns, her /remember): to the
        grantee's model it is hers, not "the user's", and it hides none of his profile. A
        fact that keeps its speaker is his; one stored before facts kept it, its turn's."""
        here = [f for f in facts if f.scope == FactScope.SESSION
                and f.session_id == self.session_id]
        others = {f.id: f.speaker for f in here if f.speaker is not None} \
            | self._said_by_turns(here)
        owner = self.shared_by() if here else None
        if owner is not None:
            others |= {f.id: owner for f in here if f.id not in others}
        return others

    def _said_by_turns(self, facts: list[FactRecord]) -> dict[int, str]:
        """Of this session's `facts` that keep no speaker, those a member's turn stated (fact
        id → the speaker store.history.speakers reads for its message)."""
        stated = [f for f in facts if f.speaker is None and f.source_message_id is not None
                  and f.source_turn is not None]
        said_by = self.store.history.speakers(
            self.session_id, {m for f in stated if (m := f.source_message_id) is not None}
        ) if stated else {}
        return {f.id: said_by[f.source_message_id] for f in stated
                if f.source_message_id in said_by}

    def keep_speakers(self) -> None:
        """Write into this session's live facts stored before facts kept their speaker the
        member whose turn stated them: their row reads NULL (the user's), and the user's next
        value of the key would replace his, his next one live beside it. Under the store's
        write lock, before an extraction writes."""
        mine = [f for f in self.live_facts() if f.scope == FactScope.SESSION
                and f.session_id == self.session_id and f.speaker is None]
        for fact_id, speaker in self._said_by_turns(mine).items():
            self.store.facts.keep_speaker(fact_id, speaker)

    def shared_by(self) -> str | None:
        """The role that owns this session when another role's run reads it (a share, on
        PostgreSQL); None for the user's own (always, in a file)."""
        if "shared_by" not in self.caches:
            access = self.store.sessions.session_access(self.session_id)
            self.caches["shared_by"] = (access.owner if access is not None
                                        and access.level is not AccessLevel.OWN else None)
        owner: str | None = self.caches["shared_by"]
        return owner

    def facts_a_turn_reads(self, asked: bool, speaker: str | None = None) -> list[FactRecord]:
        """The live facts a turn's change or retraction of a key reads: for a turn the user
        asked here, the user's own (a value a member, or an imported turn, stated beside the
        profile's is not hers to replace or forget); for a group chat member's (`speaker`),
        this session's values he stated; for another's, this session's values no member
        stated before the profile's."""
        live = self.live_facts()
        if asked:
            profile = {key_identity(f.key) for f in live if f.scope == FactScope.USER}
            beside = set(self.stated_by_others(live)) | self.beside_profile(
                [f for f in live if key_identity(f.key) in profile])
            return [f for f in live if f.id not in beside]
        said_by = self.stated_by_others(live)
        return sorted((f for f in live if said_by.get(f.id) == speaker
                       and (speaker is None or f.scope == FactScope.SESSION)),
                      key=lambda f: f.scope != FactScope.SESSION)

    def fact_origins(self, facts: list[FactRecord]) -> dict[int, str]:
        """Fact id → the other session it was stated in (user facts travel)."""
        names = self.store.sessions.session_addresses(
            {f.source_session_id for f in facts if f.source_session_id is not None})
        return {f.id: names[f.source_session_id] for f in facts
                if f.source_session_id is not None and f.source_session_id != self.session_id
                and f.source_session_id in names}
