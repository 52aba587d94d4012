"""Looking at contexts: a recorded turn's, what the next turn would send, and what another
strategy would have sent (a what-if). Reading only: the history is left byte-identical."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from chatmem.activity import QUIET, Activity
from chatmem.app.recorded_turns import (
    HistoryTurn,
    history_before,
    speaker_of_turn,
    time_or_none,
    turn_or_history,
    turn_said_at,
)
from chatmem.store.records import AccessLevel, FactScope

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.engine import Engine
    from chatmem.evaluation.recording import Tokenizer
    from chatmem.memory.base import BaseStrategy, Strategy
    from chatmem.memory.context import Context
    from chatmem.memory.spec import StrategySpec
    from chatmem.notices import Notice
    from chatmem.store import SessionRecord, Store, TurnRecord


class InspectMode(StrEnum):
    TURN = "turn"
    """A recorded turn, as it was sent."""
    NEXT = "next"
    """What the session's strategy would send for a new input now (no model call)."""
    WHAT_IF = "what-if"
    """What another strategy (or other parameters) would have sent at a turn."""


@dataclass(frozen=True)
class Replayed:
    """How a what-if got its context: the turns its state was rebuilt from in one catch-up
    (not turn by turn, as replay and eval update it: summaries can differ from theirs) and
    the strategy's own model calls (0 turns: a strategy without summaries or facts builds
    from the stored history, exactly as a replay would)."""

    turns: int
    strategy_model_calls: int


@dataclass(frozen=True)
class Inspection:
    """One context and what it belongs to."""

    session: SessionRecord
    mode: InspectMode
    context: Context
    text: str
    """The user input the context ends with."""
    strategy: str
    params: dict[str, Any]
    tokenizer: Tokenizer
    """What the context's counts were counted with."""
    turn: TurnRecord | None = None
    """The recorded turn (TURN), or the turn a what-if is asked at."""
    history_turn: int | None = None
    """The history turn a what-if is asked at when none was recorded for it (imported or
    forked: `turn` is None)."""
    replayed: Replayed | None = None
    left_out: Mapping[int, str] = field(default_factory=dict)
    """What recall's candidates left out of the context said, by message id."""
    notices: tuple[Notice, ...] = ()
    """What building it said besides the context (a what-if's failed memory update)."""
    address: str = ""
    """What names the session to the user: `OWNER/NAME` when shared with them (their own
    may have its name); empty: its name."""
    external_ids: Mapping[int, str] = field(default_factory=dict)
    """The transcript ids of the context's messages that have one, by message id (a
    probe's expect_ids and eval's found_ids name messages by them)."""
    speaker: str | None = None
    """The group chat member who said `text` (store.history.speakers), when one did."""

    @property
    def approximate(self) -> bool:
        return not self.tokenizer.exact

    @property
    def recall_texts(self) -> dict[int, str]:
        """What each of recall's candidates said, by message id: sent or left out."""
        return {**self.left_out, **{m.id: m.content for p in self.context.parts
                                    for m in p.messages if m.id is not None}}


def inspect_turn(workspace: Workspace, session: str, number: int | None = None, *,
                 request: int | None = None) -> Inspection:
    """Turn `number` of `session` (default: the last) as it was sent; or its `request`-th
    request (TurnRecord.number), which reaches an attempt a later one replaced or retried."""
    from chatmem.errors import TurnNotRecorded
    from chatmem.evaluation.recording import Tokenizer, stand_in_note
    from chatmem.evaluation.whatif import external_ids, left_out_texts
    from chatmem.memory.context import Context

    store = workspace.store
    record = store.sessions.session(session)
    turn = (store.turns.turn(record.id, request, shown=True) if request is not None
            else turn_or_history(store, record, number))
    if isinstance(turn, HistoryTurn):
        raise TurnNotRecorded(record.name, turn.number)
    context = Context.from_json(turn.context).with_images(
        lambda digest: store.images.image_bytes(record.id, digest))
    approximate = bool(turn.context.get("approximate", False))
    key = turn.tokenizer or "unknown"
    return Inspection(record, InspectMode.TURN, context, turn.input, turn.strategy,
                      turn.params,
                      Tokenizer(key, not approximate, turn.tokenizer,
                                stand_in_note(key, turn.model) if approximate else None),
                      turn=turn, left_out=left_out_texts(store.history, record.id, context),
                      address=store.sessions.address(record.id),
                      external_ids=external_ids(store.history, record.id, context),
                      speaker=speaker_of_turn(store, record, turn.user_message_id))


def inspect_next(workspace: Workspace, session: str, text: str, *,
                 explicit: bool = False, catch_up: bool = False,
                 activity: Activity = QUIET) -> Inspection:
    """What the session's strategy would send for `text` now, counted with the tokenizer the
    session was recorded with unless `explicit` (a provider or model named on purpose);
    `catch_up` as inspect_on's."""
    return inspect_on(next_engine(workspace, session, explicit=explicit),
                      _as_sent(workspace, text), catch_up=catch_up, activity=activity)


def _as_sent(workspace: Workspace, text: str) -> str:
    """`text` with the credentials a turn masks in its input masked (Engine.run_turn): what
    a turn would send, which the inspection shows."""
    from chatmem.privacy.secrets import without_credentials
    return without_credentials(text, workspace.typed_secrets())[0]


def _memory_missing(engine: Engine[Store]) -> list[BaseStrategy]:
    """The members of the session's strategy that keep state but hold none of the memory
    they derive from its turns (a fork before the turns their state covered, an import, a
    strategy switched to): the next turn then starts with a catch-up, which a build alone
    leaves out (a plugin's notes, a summary shown as turns not yet summarized)."""
    from chatmem.evaluation.whatif import holds_memory

    store, session = engine.store, engine.session.id
    keeping = [m for m in engine.strategy.members if m.keeps_state]
    if not keeping or not store.history.turn_count(session):
        return []
    return [m for m in keeping if not holds_memory(store, session, m)]


def _after_catch_up(engine: Engine[Store], missing: list[BaseStrategy], text: str,
                    activity: Activity) -> Inspection:
    """inspect_on's answer for a session whose `missing` members hold no memory
    (`_memory_missing`): built after their catch-up in a scratch copy of its history, the
    session left unchanged."""
    from chatmem.evaluation.recording import describe_counter
    from chatmem.evaluation.whatif import members_rebuilt, what_if

    store = engine.store
    record = store.sessions.session_by_id(engine.session.id)
    keeping = sum(1 for m in engine.strategy.members if m.keeps_state)
    if len(missing) < keeping and not any(m.summarizes or m.sends_facts for m in missing):
        # The others go on from their own memory (the facts a fork copied, `entity`'s).
        result = members_rebuilt(engine, missing, text, activity)
    else:
        turns = store.history.turn_count(record.id)
        user = record.user
        facts = ([f for f in store.facts.facts(user=user) if f.scope == FactScope.USER]
                 if user else [])
        result = what_if(store, record, engine.strategy, text, history_turns=turns,
                         system=store.sessions.system_for_turn(record.id, turns + 1),
                         chat_provider=engine.provider, budget=engine.budget, user=user,
                         user_facts=facts, embedder=engine.embedder, activity=activity,
                         zone=engine.zone, said_at=time_or_none(store.now(), engine.zone))
    return Inspection(record, InspectMode.NEXT, result.context, text, engine.strategy.name,
                      dict(engine.strategy.params),
                      describe_counter(engine.counter, record.tokenizer),
                      replayed=Replayed(result.replayed, result.model_calls),
                      left_out=result.left_out, notices=result.notices,
                      address=store.sessions.address(record.id),
                      external_ids=result.external_ids)


def next_engine(workspace: Workspace, session: str, *, explicit: bool = False) -> Engine[Store]:
    """An engine over the session as `inspect_next` sees it: its strategy, and the model
    (tokenizer) it was recorded with unless `explicit`; it only builds, never sends."""
    from chatmem.engine import resolve_strategy
    from chatmem.engine.opening import engine_over

    store = workspace.store
    record = store.sessions.session(session)
    told: list[Notice] = []
    chosen = resolve_strategy(workspace.settings, None, {}, record,
                              workspace.registries.strategies, tell=told.append)
    for notice in told:
        workspace.tell(notice)  # a command's notices, shown when it ends
    llm = workspace.reproducing(record, explicit=explicit)
    # The engine's too: a server keeps it open and tells the request that opened it.
    engine = engine_over(store, record, llm, chosen, budget=workspace.settings.context_budget,
                         embedder=workspace.recall_embedder([chosen]), notices=told,
                         zone=workspace.settings.zone)
    # A build failing on a plugin's old state says how to drop it, as a chat's does.
    engine.drops_own_state = store.sessions.session_access(record.id).level is AccessLevel.OWN
    return engine


def inspect_on(engine: Engine[Store], text: str, *, catch_up: bool = False,
               activity: Activity = QUIET) -> Inspection:
    """What `engine` (next_engine's, perhaps kept open by a server) would send for `text`.
    With `catch_up`, a session that holds none of its strategy's memory yet has it rebuilt in
    memory first, as the next turn's catch-up will (it may ask the model for summaries)."""
    from chatmem.evaluation.recording import describe_counter
    from chatmem.evaluation.whatif import external_ids, left_out_texts
    from chatmem.memory.guards import PLUGIN_BUILDS
    from chatmem.session_notices import Waited

    if catch_up and (missing := _memory_missing(engine)):
        return _after_catch_up(engine, missing, text, activity)
    engine.state.caches.pop(PLUGIN_BUILDS, None)
    context = engine.build_context(text)  # a plugin's slow build said once, as a turn's is
    slow = engine.slow_build(engine.state.caches.pop(PLUGIN_BUILDS, None) or {},
                             waited=Waited.SHOWN)
    record = engine.store.sessions.session_by_id(engine.session.id)  # as stored now
    strategy = engine.strategy
    return Inspection(record, InspectMode.NEXT, context, text, strategy.name,
                      dict(strategy.params), describe_counter(engine.counter, record.tokenizer),
                      left_out=left_out_texts(engine.store.history, record.id, context),
                      notices=tuple(slow),
                      address=engine.store.sessions.address(record.id),
                      external_ids=external_ids(engine.store.history, record.id, context))


def inspect_what_if(workspace: Workspace, session: str, strategy: StrategySpec | None,
                    params: Mapping[str, Any] | None = None, *, number: int | None = None,
                    text: str | None = None, explicit: bool = False,
                    with_user_facts: bool = False, activity: Activity = QUIET) -> Inspection:
    """What `strategy` would have sent at turn `number` (default: the last), or for `text`
    after the whole session; without a strategy, the session's with `params` (and no
    other parameters). `strategy` is as the user gave it: the config's [strategies.NAME]
    fills what it leaves out, so the what-if shows what `chat -s` would send.
    Strategies that keep summaries or facts have them rebuilt in memory;
    the session is never changed, and the user's profile facts are read only
    `with_user_facts`."""
    from chatmem.engine.opening import engine_over, with_config_table
    from chatmem.evaluation.recording import describe_counter
    from chatmem.evaluation.whatif import external_ids, left_out_texts, sent_with, what_if
    from chatmem.memory.context import Context

    text = None if text is None else _as_sent(workspace, text)

    store = workspace.store
    record = store.sessions.session(session)
    strategies = workspace.registries.strategies
    spec = (with_config_table(strategy, workspace.settings, strategies) if strategy
            else strategies.parse(record.strategy, params))
    chosen = strategies.create(spec)  # bad names or params fail before any work
    turn = None
    history_turn = None
    sent: Context | None = None
    speaker = None
    after_all = text is not None
    if text is None:
        found = turn_or_history(store, record, number)
        # Who asked, in a group chat: recall left their label out of what it searched.
        speaker = speaker_of_turn(store, record, found.user_message_id)
        if isinstance(found, HistoryTurn):
            history_turn, text, history_turns = found.number, found.input, found.number - 1
            said_at = time_or_none(found.said_at, workspace.settings.zone)
        else:
            turn, text = found, found.input
            sent = Context.from_json(found.context)
            history_turns = history_before(found)
            said_at = turn_said_at(store, found, workspace.settings.zone)
    else:
        history_turns = store.history.turn_count(record.id)
        said_at = time_or_none(store.now(), workspace.settings.zone)  # said now
    # The system prompt the turn was sent with (for --next, the one in effect now), and the
    # files that went with its input whatever the strategy.
    system = store.sessions.system_for_turn(record.id, history_turns + 1)
    system, files = sent_with(sent, system) if sent is not None else (system, ())
    user = record.user if with_user_facts else None
    llm = workspace.reproducing(record, explicit=explicit)
    embedder = workspace.recall_embedder([chosen])
    replayed = None
    notices: tuple[Notice, ...] = ()
    if after_all and _runs_as_session(workspace, record, chosen):
        # The session already keeps this strategy's state: use it as it is.
        engine = engine_over(store, record, llm, chosen,
                             budget=workspace.settings.context_budget, embedder=embedder,
                             zone=workspace.settings.zone)
        context = engine.build_context(text)
        left_out = left_out_texts(store.history, record.id, context)
        outside = external_ids(store.history, record.id, context)
    else:
        facts = ([f for f in store.facts.facts(user=user) if f.scope == FactScope.USER]
                 if user else [])
        result = what_if(store, record, chosen, text, history_turns=history_turns,
                         system=system, chat_provider=llm,
                         budget=workspace.settings.context_budget, user=user,
                         user_facts=facts, embedder=embedder, activity=activity,
                         zone=workspace.settings.zone, said_at=said_at, attached=files,
                         speaker=speaker)
        context, left_out, notices = result.context, result.left_out, result.notices
        context = context.with_images(lambda digest: store.images.image_bytes(record.id, digest))
        outside = result.external_ids
        replayed = Replayed(result.replayed, result.model_calls)
    return Inspection(record, InspectMode.WHAT_IF, context, text, chosen.name,
                      dict(chosen.params), describe_counter(llm.token_counter(),
                                                            record.tokenizer),
                      turn=turn, history_turn=history_turn, replayed=replayed,
                      left_out=left_out, notices=notices,
                      address=store.sessions.address(record.id), external_ids=outside,
                      speaker=speaker)


def _runs_as_session(workspace: Workspace, record: SessionRecord, chosen: Strategy) -> bool:
    """Whether `chosen` is the strategy the session runs, parameters and all: only then was
    its stored state (a summary, facts, a plugin's) built as `chosen` would build it. Same
    name with other parameters (`summary:summary_max_tokens=30`) gets it rebuilt."""
    from chatmem.engine.opening import resolve_strategy
    from chatmem.errors import ChatmemError

    if chosen.name != record.strategy:
        return False
    try:
        # As a resumed session builds it: its saved parameters, none from the config.
        running = resolve_strategy(workspace.settings, None, {}, record,
                                   workspace.registries.strategies)
    except ChatmemError:
        return False  # it no longer builds from what is saved: nothing to compare with
    return _state_params(running) == _state_params(chosen)


def _state_params(strategy: Strategy) -> dict[str, Any]:
    """The parameters its stored state was built under: those of its members that keep
    state (a combination's `window.k` changes what is sent, not the facts kept)."""
    from chatmem.memory.combined import CombinedStrategy

    if not isinstance(strategy, CombinedStrategy):
        return dict(strategy.params)
    return {f"{m.name}.{key}": value for m in strategy.members if m.keeps_state
            for key, value in m.params.items()}
