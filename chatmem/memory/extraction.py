"""Fact extraction: ONE structured call per update turns user messages into fact changes.

The model gets the current facts and only the user's messages of the turns not
yet processed (as JSON data) and answers with JSON that sets or retracts facts.
Output that is not valid is rejected whole: the turn stands, nothing is written,
and the same turns are sent again (batched with newer ones) after the next turn;
after MAX_REJECTIONS rejected answers the turns of the first are passed over. A fact
too long to keep is dropped from a valid answer, not the answer with it.

Facts belong to the session they were stated in; only a user who opts in
(`user_facts = true` in the config, or `/remember --user`) puts them in the
user profile that follows them across sessions. The extractor says when a new
key names a fact already kept under another key or language ("same_as":
名字 is name): one key per fact, the newer value wins, the older one stays in
the fact's history (chatmem.memory.fact_writes writes an answer's facts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from chatmem.activity import ActivityStep, Work
from chatmem.errors import ProviderResponseError
from chatmem.memory.base import MemoryEnv, catching_up
from chatmem.memory.extraction_answer import (
    MAX_KEY_CHARS,
    MAX_VALUE_CHARS,
    Extraction,
    only_said,
    parse_extraction,
)
from chatmem.memory.extraction_request import extraction_messages
from chatmem.memory.fact_keys import key_identity
from chatmem.memory.fact_writes import apply_extraction
from chatmem.memory.history_view import HistoryTurn, HistoryView
from chatmem.memory.later_facts import LaterFacts
from chatmem.memory.sensitive_turns import guard_for, noted, remember
from chatmem.notices import (
    DerivedMemory,
    ErasedWhileUpdating,
    FactsBehind,
    FactsFailed,
    FactsForgotten,
    FactsNotSaid,
    FactsTooLong,
    Notice,
    SensitiveNotRemembered,
)
from chatmem.privacy import sensitive
from chatmem.privacy.mentions import only_markers
from chatmem.privacy.secret_guard import SecretGuard
from chatmem.providers.base import Purpose

if TYPE_CHECKING:
    from chatmem.memory.state import SessionState
    from chatmem.providers.base import Provider

STATE_KEY = "facts"
"""Strategy-state namespace of the extraction marker, shared by every fact-using strategy."""
MAX_BATCH_TURNS = 20
MAX_REJECTIONS = 3
"""Answers rejected for the same turns before they are passed over. As a provider's request
is tried three times (max_retries 2): a sampled model's malformed answer seldom comes three
times running, one it always gives (a local model at temperature 0, an answer shape it
keeps) came every turn, each a helper call, and no later turn's fact was ever read."""

@dataclass(frozen=True)
class Failed:
    """Why a batch's extraction failed; `rejected`: the model answered, and the answer was
    not valid (the same turns may well get the same answer again)."""

    error: str
    rejected: bool = False


def update_facts(env: MemoryEnv) -> list[Notice]:
    """Extract facts from the user messages of turns not yet processed; returns notices.

    One batch of at most MAX_BATCH_TURNS turns per update; a catch-up runs batches
    until every turn is processed (or one fails), each call shown by env.activity.
    """
    notices: list[Notice] = []
    # Each batch reads the erasure count before its input and checks it as it stores.
    with env.state.checking_itself():
        while True:
            step, more = _extract_batch(env)
            notices += step
            if not (env.catch_up and more):
                return notices


def _extract_batch(env: MemoryEnv) -> tuple[list[Notice], bool]:
    """One extraction call over the next batch; (notices, whether turns remain to do)."""
    state = env.state
    if env.model is None:
        return [], False
    seen = state.erasures()  # before the marker, the turns and the facts are read
    marker = state.get(STATE_KEY)
    done = int(marker.get("done_turn", 0))
    if state.shared_by() is not None:
        # A write share's grantee keeps his own marker (store.writer_state.PER_WRITER) and
        # goes on from the owner's when hers is further: he never reads her turns again.
        done = max(done, _int(state.store.memory.owners_state_value(
            state.session_id, STATE_KEY, "done_turn")))
    # A batch read at last forgets the rejections before it (written only after one).
    cleared = dict.fromkeys(("rejections", "rejected_through")) if marker.get("rejections") \
        else {}
    total = env.history.turn_count()
    if done >= total:
        return [], False
    last, turns = _next_batch(env.history, done, total)
    asked = [t.number for t in turns if any(m.role == "user" for m in t.messages)]
    # The step is the whole batch: in a long catch-up the secret guard over its messages
    # and writing the facts take about as long as the call itself.
    step = ActivityStep(Work.EXTRACTING_FACTS, asked[0], asked[-1],
                        of=catching_up(env, total)) if asked else None

    def done_through() -> None:
        state.set_covering(STATE_KEY, last, done_turn=last, behind=total - last,
                           last_error=None, **cleared)

    with env.activity.doing(step) if step else nullcontext():
        notices, failed = _extract(env, env.model, turns, seen, done_through)
    if failed is not None and failed.rejected:
        return _rejected(env, marker, (done, last, total), failed.error)
    if failed is not None:
        state.set_covering(STATE_KEY, done, done_turn=done, behind=total - done,
                           last_error=failed.error)
        return [FactsFailed(failed.error, done + 1, total)], False
    if any(isinstance(n, ErasedWhileUpdating) for n in notices):
        return notices, False  # the marker stays: these turns are read again next turn
    return _behind(env, notices, last, total)


def _behind(env: MemoryEnv, notices: list[Notice], last: int, total: int
            ) -> tuple[list[Notice], bool]:
    if last < total and not env.catch_up:
        notices.append(FactsBehind(total - last))
    return notices, last < total


def _rejected(env: MemoryEnv, marker: Mapping[str, object], batch: tuple[int, int, int],
              error: str) -> tuple[list[Notice], bool]:
    """The answer for the batch after `done` (through `last`, of `total` turns) was rejected:
    the batch is sent again next turn, or at the MAX_REJECTIONS-th answer rejected since the
    marker last moved, the turns the first rejected batch held are passed over. Only they
    were in every rejected batch: a newer turn's facts are read in the next one.

    Only a rejected answer counts: a refused request or a server that does not answer says
    nothing of these turns (a setting, a server down), and is tried again every turn."""
    done, last, total = batch
    times = _int(marker.get("rejections")) + 1
    through = _int(marker.get("rejected_through"))
    if not done < through <= last:  # the first rejection, or a marker moved meanwhile
        times, through = 1, last
    if times < MAX_REJECTIONS:
        env.state.set_covering(STATE_KEY, done, done_turn=done, behind=total - done,
                               last_error=error, rejections=times, rejected_through=through)
        return [FactsFailed(error, done + 1, total)], False
    env.state.set_covering(STATE_KEY, through, done_turn=through, behind=total - through,
                           last_error=error, rejections=None, rejected_through=None)
    return _behind(env, [FactsFailed(error, done + 1, through, passed_over=times)], through,
                   total)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _next_batch(history: HistoryView, done: int, total: int) -> tuple[int, list[HistoryTurn]]:
    """The turn number the next batch after `done` ends at, and its stored turns: at most
    MAX_BATCH_TURNS numbers from the first stored one on. Numbers no turn holds (a gap an
    older chatmem left, a row written by hand far ahead) are passed over in ever wider
    steps, never batch by batch: one turn stored at 10^12 took 5·10^10 empty batches."""
    span = MAX_BATCH_TURNS
    while True:
        last = min(total, done + span)
        turns = history.turns(done + 1, last)
        if turns or last >= total:
            break
        span *= 2
    if span > MAX_BATCH_TURNS and turns:
        last = min(last, turns[0].number + MAX_BATCH_TURNS - 1)
        turns = [t for t in turns if t.number <= last]
    return last, turns


def _extract(env: MemoryEnv, model: Provider, turns: Sequence[HistoryTurn],
             seen: int | None, done: Callable[[], None]) -> tuple[list[Notice], Failed | None]:
    """Extract and store the facts of `turns`, and call `done` (the marker moves past them)
    in the same transaction: (notices, why the call failed or None). Nothing is stored when
    text left the session's memory since the erasure count was `seen` (before `turns` and
    the facts were read): a value from a purged message would come back as a new fact."""
    state = env.state
    # Every message of the batch is read (a secret the assistant said first, a value
    # answering a label), and values earlier turns found are followed into these.
    note = noted(state)
    guard, masked = guard_for(state, turns, note)
    remember(state, guard, turns, note)
    said = [(t.number, m.content, text) for t, m, text in zip(
        [t for t in turns for _ in t.messages], [m for t in turns for m in t.messages], masked,
        strict=True) if m.role == "user"]
    pending = [(turn, text) for turn, text, _ in said]
    sources = _first_user_messages(turns)
    asked, speakers = _asked_here(state, sources) if pending else (set(), {})
    notices: list[Notice] = []
    extraction, refused, unsaid, forgot = Extraction(), list[str](), list[str](), list[str]()
    if pending:
        current = state.live_facts()
        try:
            answer = model.complete(extraction_messages(
                current, pending, guard.mask, speakers, state.stated_by_others(current)),
                purpose=Purpose.FACTS)
        except ProviderResponseError as e:
            return [], Failed(str(e))
        try:
            extraction = parse_extraction(answer, [n for n, _ in pending], {
                (key_identity(f.key), guard.mask(f.value)) for f in current})
        except ProviderResponseError as e:
            return [], Failed(str(e), rejected=True)
        extraction, refused = without_sensitive(without_erased(extraction), guard)
        extraction, unsaid = only_said(extraction, [t for _, text, shown in said
                                                    for t in (text, shown)])
    with state.store.write():
        # Without a user message (or a stored turn, numbers passed over) nothing is read
        # that a purge could have erased: only the marker moves.
        if pending and state.erased_since(seen):
            return [ErasedWhileUpdating(DerivedMemory.FACTS, turns[0].number,
                                        turns[-1].number)], None
        if pending:
            forgot = apply_extraction(state, extraction, sources,
                             user_scope=bool(env.settings and env.settings.user_facts),
                             later=LaterFacts(state, turns), asked=asked,
                             asked_said=[t for n, text, shown in said if n in asked
                                         for t in (text, shown)],
                             members_said=_said_by_members(said, speakers), speakers=speakers)
        done()
    found = [kind for _, text, shown in said for kind in sensitive.kinds_between(text, shown)]
    if found or refused:
        notices.append(SensitiveNotRemembered(tuple(dict.fromkeys([*found, *refused]))))
    if extraction.too_long:
        notices.append(FactsTooLong(tuple(extraction.too_long), MAX_KEY_CHARS, MAX_VALUE_CHARS))
    if unsaid:
        notices.append(FactsNotSaid(tuple(dict.fromkeys(unsaid))))
    if forgot:
        # A helper that misreads a question ("what is my name?") as a retraction erased a
        # fact without a word: said, the user can say it again.
        notices.append(FactsForgotten(tuple(forgot)))
    return notices, None


def without_erased(extraction: Extraction) -> Extraction:
    """The extraction minus values with nothing left but a purge's marker ([forgotten]):
    read from a purged message, such a value is the erasure, not a fact (a purge deletes a
    fact left so, `privacy.purge`)."""
    return replace(extraction, set=[c for c in extraction.set if not only_markers(c.value)])


def without_sensitive(
    extraction: Extraction, guard: SecretGuard | None = None
) -> tuple[Extraction, list[str]]:
    """The extraction minus facts holding a sensitive detail, and the kinds refused.

    The request already carries markers instead of the details; this catches a model
    that copies a marker, or a detail the markers missed but the key names ("pin": …),
    or a value `guard` follows (said sensitive in another turn).
    """
    kept, refused = [], []
    for change in extraction.set:
        kind = sensitive.fact_kind(change.key, change.value)
        if kind is None and guard is not None:
            kind = next((f.kind for f in guard.findings(change.value)), None)
        if kind is None:
            kept.append(change)
        elif kind != sensitive.REDACTED:
            refused.append(kind)
    return replace(extraction, set=kept), refused


def _said_by_members(said: Sequence[tuple[int, str, str]], speakers: Mapping[int, str]
                     ) -> dict[str, list[str]]:
    """Group chat member → what he said in the batch (each message as stored and as shown)."""
    by: dict[str, list[str]] = {}
    for number, text, shown in said:
        if number in speakers:
            by.setdefault(speakers[number], []).extend((text, shown))
    return by


def _first_user_messages(turns: Sequence[HistoryTurn]) -> dict[int, int | None]:
    return {
        t.number: next((m.id for m in t.messages if m.role == "user"), None) for t in turns
    }


def _asked_here(state: SessionState, sources: Mapping[int, int | None]
                ) -> tuple[set[int], dict[int, str]]:
    """The turns of `sources` whose user message the user asked in a request of this session
    (typed, asked, sent through serve or MCP): not an imported transcript's, a fork's copy or
    a client's history adopted whole, whose "user" may be anyone, nor a group chat member's
    (a served message's `name`); and turn → that member, for those."""
    ids = [i for i in sources.values() if i]
    asked = state.store.history.asked(state.session_id, ids)
    # Not only of asked ones: a client's earlier named messages are stored without a turn.
    said_by = state.store.history.speakers(state.session_id, ids)
    speakers = {turn: said_by[m] for turn, m in sources.items() if m in said_by}
    return {turn for turn, m in sources.items() if m in asked and m not in said_by}, speakers
