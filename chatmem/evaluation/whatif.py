"""What-if: the context another strategy would send at a turn of a stored session.

A strategy that keeps no derived state (window, tokens, buffer, retrieval and
their combinations) builds straight from the stored history, capped at the
turn: it reads what it always reads, the newest turns and the best matches,
so a what-if costs what a turn costs at any length. A strategy that keeps
summaries or facts has them rebuilt in a scratch store: the history is copied
in pages, then caught up in bounded batches (one model call each), every step
shown by the caller's `Activity`. The session's own state is never read or
changed, and no other session's facts are (a user's profile facts only when
given).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any

from chatmem.activity import QUIET, Activity, ActivityStep, Work
from chatmem.engine.opening import engine_over
from chatmem.engine.said import Said, said_time
from chatmem.evaluation.counting_provider import CountingProvider
from chatmem.evaluation.replay import seed_user_facts
from chatmem.history import StoredHistory
from chatmem.memory.base import BaseStrategy, ContextRequest, Strategy
from chatmem.memory.combined import CombinedStrategy
from chatmem.memory.context import Context, Message
from chatmem.memory.guards import PLUGIN_BUILDS, build_guarded
from chatmem.memory.state import SessionState
from chatmem.notices import Notice, SummaryUpdated
from chatmem.session_notices import Waited, built_slowly
from chatmem.store import SessionRecord, Store
from chatmem.store.protocols import HistoryRepository, TurnStore
from chatmem.timezones import system_zone

if TYPE_CHECKING:
    from chatmem.embeddings import Embedder
    from chatmem.engine import Engine
    from chatmem.providers.base import Provider
    from chatmem.store import FactRecord
    from chatmem.tokens import TokenCounter

COPY_TURNS = 2000
"""Turns copied into the scratch store per page: memory stays bounded at any length."""


@dataclass(frozen=True)
class WhatIf:
    context: Context
    replayed: int
    """Turns whose derived state was rebuilt, in one catch-up: replay and eval update it
    after each turn, so a summary here can differ from theirs at the same turn (0: built
    from the stored history, as they build it)."""
    model_calls: int
    """Calls the strategy made to rebuild it (summaries, fact extraction)."""
    left_out: dict[int, str]
    """What recall's candidates left out of the context said, by their id in `context`."""
    notices: tuple[Notice, ...] = ()
    """What rebuilding the state said that the context alone does not show: an update
    that failed (the context then rests on state never written), a helper too small."""
    external_ids: dict[int, str] = field(default_factory=dict)
    """The transcript ids of the context's messages, by their id in `context`."""


def what_if(
    store: TurnStore,
    session: SessionRecord,
    strategy: Strategy,
    text: str,
    *,
    history_turns: int,
    system: str | None,
    chat_provider: Provider,
    budget: int | None = None,
    user: str | None = None,
    user_facts: Sequence[FactRecord] = (),
    embedder: Embedder | None = None,
    activity: Activity = QUIET,
    zone: tzinfo | None = None,
    said_at: datetime | None = None,
    attached: Sequence[Message] = (),
    speaker: str | None = None,
) -> WhatIf:
    """The context `strategy` would send for `text` after the session's first
    `history_turns` turns, with `system` as its system prompt, `text` said at `said_at`
    (chatmem.engine.said; None: when the newest message stored was), and the files
    `attached` to it (a recorded turn's `files` part: they were sent whatever the strategy,
    and every strategy's budget makes room for them), by `speaker` (a group chat's, whose
    label `text` opens with; ContextRequest.speaker)."""
    counter = chat_provider.token_counter()
    files = tuple(_recounted(m, counter) for m in attached)
    if not strategy.keeps_state:
        zone = zone or system_zone()
        request = ContextRequest(
            history=StoredHistory(store, session.id, counter, upto=history_turns),
            input=Message.counted("user", text, counter),
            counter=counter,
            attached=files,
            system=system,
            state=SessionState(store, session.id, session.user),
            budget=budget,
            embedder=embedder if strategy.needs_embedder else None,
            zone=zone,
            said_at=said_time(Said.AS_NEWEST if said_at is None else said_at, store,
                              session.id, zone),
            speaker=speaker,
        )
        context, slow = shown_build(strategy, request, session.name)
        return WhatIf(context, 0, 0, left_out_texts(store.history, session.id, context),
                      slow, external_ids(store.history, session.id, context))
    with Store(":memory:") as scratch:
        seed_user_facts(scratch, user, user_facts)
        copy = scratch.sessions.create_session(
            "what-if", strategy.name, dict(strategy.params), provider=chat_provider.name,
            model=chat_provider.model, system=system, user=user,
            tokenizer=chat_provider.token_counter().key)
        helper = CountingProvider(chat_provider)
        # Copying and rebuilding are one task to whoever shows the activity.
        with activity.series():
            copy_history(store.history, session.id, scratch.history, copy.id, history_turns,
                         activity)
            engine = engine_over(scratch, copy, CountingProvider(chat_provider), strategy,
                                 budget=budget, helper=helper, embedder=embedder,
                                 activity=activity, zone=zone)
            # Each summary version of the rebuild is progress, which `replayed` counts.
            said = tuple(n for n in engine.catch_up() if not isinstance(n, SummaryUpdated))
        request = engine.request(text, said_at=Said.AS_NEWEST if said_at is None else said_at,
                                 speaker=speaker)
        context, slow = shown_build(strategy, replace(request, attached=files), session.name)
        # Built from the scratch store's rows: named by the session's own before it closes.
        context = _named_as_stored(context, scratch.history, copy.id, store.history,
                                   session.id)
    return WhatIf(context, history_turns, sum(helper.calls.values()),
                  left_out_texts(store.history, session.id, context), said + slow,
                  external_ids(store.history, session.id, context))


def holds_memory(store: TurnStore, session_id: int, member: Strategy) -> bool:
    """Whether `member` holds memory of its own in the session, which its catch-up goes on
    from: its state, the summaries of one that summarizes, the facts of one that sends them.
    Facts /remember put in a fork, or another strategy's summaries, are no plugin's notes."""
    from chatmem.store.state_coverage import FACTS_OWNER

    return bool(store.memory.strategy_state(session_id, member.name)
                or (member.summarizes and store.memory.summaries(session_id, member.name))
                or (member.sends_facts and (store.memory.strategy_state(session_id, FACTS_OWNER)
                                            or store.facts.facts(session_id=session_id))))


def members_rebuilt(engine: Engine[Any], members: Sequence[BaseStrategy], text: str,
                    activity: Activity = QUIET) -> WhatIf:
    """What `engine`'s next turn sends for `text` when `members` of its combination hold no
    state (a fork before the turns theirs covered) and the others hold their memory: theirs
    are rebuilt as the turn's catch-up does, in a scratch copy of the history, and the build
    reads them beside the others' own (whose ids, a fact's, are the session's)."""
    store, session = engine.store, engine.session
    strategy: Strategy = members[0] if len(members) == 1 else CombinedStrategy(members)
    turns = store.history.turn_count(session.id)
    provider = engine.provider
    with Store(":memory:") as scratch:
        copy = scratch.sessions.create_session(
            "what-if", strategy.name, dict(strategy.params), provider=provider.name,
            model=provider.model, system=session.system, user=session.user,
            tokenizer=provider.token_counter().key)
        helper = CountingProvider(provider)
        with activity.series():
            copy_history(store.history, session.id, scratch.history, copy.id, turns, activity)
            rebuilding = engine_over(scratch, copy, CountingProvider(provider), strategy,
                                     budget=None, helper=helper, embedder=engine.embedder,
                                     activity=activity, zone=engine.zone)
            said = tuple(n for n in rebuilding.catch_up() if not isinstance(n, SummaryUpdated))
        states = {m.name: scratch.memory.strategy_state(copy.id, m.name) for m in members}
    request = engine.request(text)
    context, slow = shown_build(engine.strategy, replace(
        request, state=_WithRebuilt(request.state, states)), engine.address)
    return WhatIf(context, turns, sum(helper.calls.values()),
                  left_out_texts(store.history, session.id, context), said + slow,
                  external_ids(store.history, session.id, context))


def shown_build(strategy: Strategy, request: ContextRequest,
                session: str) -> tuple[Context, tuple[Notice, ...]]:
    """`strategy`'s context for `request`, built to be shown (a what-if, the context a
    server's client asks for), and BuildSlow when plugins' builds took SLOW_BUILD seconds:
    a turn says it, and a what-if said nothing of a strategy every turn would wait for."""
    request.state.caches.pop(PLUGIN_BUILDS, None)
    context = build_guarded(strategy, request)
    return context, tuple(built_slowly(session, request.state.caches.pop(PLUGIN_BUILDS, None),
                                       waited=Waited.SHOWN))


class _WithRebuilt(SessionState):
    """A session's state but for the members `rebuilt` names, read as their catch-up made
    them (members_rebuilt): for a build, which writes nothing."""

    def __init__(self, state: SessionState, rebuilt: Mapping[str, dict[str, Any]]) -> None:
        super().__init__(state.store, state.session_id, state.user)
        self.caches = state.caches
        self.rebuilt = rebuilt

    def get(self, strategy: str) -> dict[str, Any]:
        found = self.rebuilt.get(strategy)
        return dict(found) if found is not None else super().get(strategy)


def _named_as_stored(context: Context, scratch: HistoryRepository, copy_id: int,
                     history: HistoryRepository, session_id: int) -> Context:
    """`context`, built over a scratch copy of the session, with its messages and recall's
    rows named by the session's stored ids (the copy holds the same messages of the same
    turns in the same order): `inspect --json` says a message's `id` is the stored row's."""
    turns = ({m.turn for p in context.parts for m in p.messages
              if m.id is not None and m.turn is not None}
             | {t for row in context.recall if isinstance(t := row.get("turn"), int)})
    if not turns:
        return context
    stored = {copied.id: own.id for copied, own in zip(
        scratch.messages_in_turns(copy_id, turns), history.messages_in_turns(session_id, turns),
        strict=True)}

    def named(m: Message) -> Message:
        return m if m.id is None else replace(m, id=stored.get(m.id, m.id))

    parts = tuple(replace(p, messages=tuple(named(m) for m in p.messages))
                  for p in context.parts)
    recall = tuple({**row, "id": stored.get(row["id"], row["id"])}
                   if isinstance(row.get("id"), int) else row for row in context.recall)
    return replace(context, parts=parts, recall=recall)


def sent_with(recorded: Context, system: str | None) -> tuple[str | None, tuple[Message, ...]]:
    """The system prompt and the files a recorded context sent, which any strategy would have
    sent at its turn: a prompt given for one call (`ask --system`, a template, a serve
    request's) is not the session's. `system` stands for a context recorded empty."""
    if not recorded.parts:
        return system, ()
    given, files = recorded.part("system"), recorded.part("files")
    return (given.messages[0].content if given is not None and given.messages else None,
            files.messages if files is not None else ())


def _recounted(message: Message, counter: TokenCounter) -> Message:
    """A recorded file's message counted by `counter` (its image by the rule it was sent by)."""
    image = message.image.tokens if message.image is not None else 0
    return replace(message, tokens=counter.count_message(message.role, message.content) + image)


def left_out_texts(history: HistoryRepository, session_id: int,
                   context: Context) -> dict[int, str]:
    """What the recall candidates `context` did not send said (id → text), read from the
    history the context was built from: `inspect` shows them beside their scores."""
    sent = {m.id for p in context.parts for m in p.messages if m.id is not None}
    # A plugin's rows stored before they were checked may lack an id, or hold another kind.
    wanted = [found for row in context.recall
              if isinstance(found := row.get("id"), int) and found not in sent]
    return history.contents(session_id, wanted) if wanted else {}


def external_ids(history: HistoryRepository, session_id: int,
                 context: Context) -> dict[int, str]:
    """The transcript ids of the messages `context` sends (id → external id), read from the
    history it was built from: `inspect --json` shows them beside the row ids, as eval's
    found_ids name them."""
    sent = [m.id for p in context.parts for m in p.messages if m.id is not None]
    return history.external_ids(session_id, sent) if sent else {}


def copy_history(source: HistoryRepository, session_id: int, target: HistoryRepository,
                 target_id: int, turns: int, activity: Activity) -> None:
    """The first `turns` turns of a session into another store, a page at a time."""
    for first in range(1, turns + 1, COPY_TURNS):
        last = min(first + COPY_TURNS - 1, turns)
        with activity.doing(ActivityStep(Work.COPYING_TURNS, first, last, of=turns)):
            target.import_messages(target_id, [
                {"role": m.role, "content": m.content, "id": m.external_id, "ts": m.created_at}
                for m in source.messages(session_id, first, last)])
