"""Replay and eval: run one conversation under several strategies and measure each.

Every strategy gets its own session (in memory unless saved) and sees the same
user turns in the same order. With recorded replies kept, no chat model is
needed; summaries and facts still go to the helper model, through a counting
proxy, so the model calls a strategy makes are measured, not guessed.

At each probe the context the strategy would send for the probe is built (not
sent, not stored) and scored (see chatmem.evaluation.scoring). With `probes_only`,
a turn with a recorded reply is stored as imported messages are and the memory
updated after it as after a turn, so every probe scores the same while such a
turn builds no context (for retrieval, no query embedding); a turn without one
still goes to the model, as it must for a reply. No prompt tokens per turn are
reported then.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from datetime import tzinfo
from typing import TYPE_CHECKING

from chatmem.embeddings.base import Embedder
from chatmem.engine import Engine
from chatmem.engine.opening import engine_over
from chatmem.errors import RepeatedStrategy, StoreError, StrategyError, StrategyFailed
from chatmem.evaluation.counting_provider import CountingProvider
from chatmem.evaluation.playback import RunOptions, Stored, play
from chatmem.evaluation.scoring import FailedRun, StrategyRun
from chatmem.evaluation.steps import Step, StepKind, plan
from chatmem.memory.registry import StrategyRegistry
from chatmem.memory.spec import StrategySpec
from chatmem.notices import never_retried
from chatmem.plugins import load_registries
from chatmem.providers.base import Provider, Purpose
from chatmem.store import FactScope, Store, check_session_name, session_name_from, unfinished
from chatmem.store.protocols import MemoryStore, TurnStore
from chatmem.transcripts.format import Transcript

if TYPE_CHECKING:
    from chatmem.store import FactRecord

Progress = Callable[[str, int, int], None]
"""(strategy label, steps done, steps total)."""


def replay(
    transcript: Transcript,
    specs: Sequence[StrategySpec],
    *,
    chat_provider: Provider,
    provider_per_run: Callable[[], Provider] | None = None,
    helper_provider: Provider | None = None,
    store: TurnStore | None = None,
    save_as: str | None = None,
    keep_replies: bool = True,
    budget: int | None = None,
    user: str | None = None,
    user_facts: Sequence[FactRecord] = (),
    answer: bool = False,
    progress: Progress | None = None,
    embedder: Embedder | None = None,
    strategies: StrategyRegistry | None = None,
    probes_only: bool = False,
    zone: tzinfo | None = None,
    failed: list[FailedRun] | None = None,
    cut: list[str] | None = None,
) -> list[StrategyRun]:
    """Run the transcript under each strategy; `store` and `save_as` keep the sessions,
    each message with its transcript id and the probes where they were asked, as `sessions
    import` keeps them (`chatmem eval SAVED` runs on one, and its found_ids are the
    external ids inspect shows).

    Isolated unless `user` is given: no strategy reads facts of other sessions.
    With `user`, a saved replay reads that profile's facts in `store`, and an
    in-memory one gets `user_facts` copied in, so both see the same facts.
    With `provider_per_run`, each strategy runs on a model it makes (closed after the
    run) in place of `chat_provider`: a model that keeps state between calls (the
    scripted one answers from its reply file in the order it is asked) then gives
    every strategy the same replies whatever order the strategies are given in.
    With `failed`, a run in memory whose strategy's own code fails (StrategyFailed) is
    noted there and the others run on; a saved one still stops them all (nothing of a
    replay that does not stand is kept).
    With `cut`, Ctrl-C in a run in memory after another has finished (or failed, noted in
    `failed`) ends the replay there: the finished runs are returned and the labels of the
    run stopped and of those not started go in `cut` (else their results were lost with it).
    """
    strategies = strategies or load_registries().strategies
    check_distinct(specs, strategies)
    if not specs:
        raise StrategyError("give at least one --strategy")
    if save_as and store is None:
        raise StrategyError("--save-as needs a history file")
    names = [_session_name(save_as, s, len(specs)) if save_as else None for s in specs]
    for name in names:
        if name:
            check_session_name(name)  # before any work is done
    taken = [n for n in names if n and store is not None and store.sessions.find_session(n)]
    if taken:
        raise _taken(taken[0])
    options = RunOptions(chat_provider, helper_provider, keep_replies, budget, user, answer,
                         strategies, embedder, probes_only, provider_per_run, zone)
    steps = plan(transcript, keep_replies)
    runs = []
    saved: list[tuple[str, int]] = []
    if save_as and store is not None:
        unfinished.remove_leftovers(store)
    for at, (spec, name) in enumerate(zip(specs, names, strict=True)):
        if name and store is not None:
            try:
                # Saved under an unfinished name: a run stopped halfway must not look finished
                # in a listing, nor keep its name from the next run (store.unfinished).
                run = _run_one(transcript, spec, steps, store,
                               unfinished.unfinished_name("replay"), options, progress, saved)
                run.session = name
                runs.append(run)
            except BaseException:
                # Ctrl-C, SIGTERM or an error: what was saved is what was printed, nothing, so
                # none of it stays (after kill -9 the next run removes it).
                unfinished.discard(store, saved)
                raise
        else:
            try:
                with Store(":memory:") as scratch:
                    seed_user_facts(scratch, user, user_facts)
                    runs.append(_run_one(transcript, spec, steps, scratch, None, options,
                                         progress))
            except StrategyFailed as e:
                if failed is None:
                    raise
                failed.append(FailedRun(spec.label, e))
            except KeyboardInterrupt:
                if cut is None or not (runs or failed):  # a failure noted is a result too
                    raise
                cut.extend(s.label for s in specs[at:])
                break
    if saved and store is not None:
        try:
            unfinished.publish(store, saved, [run.session or "" for run in runs], _taken)
        except BaseException:
            unfinished.discard(store, saved)
            raise
    return runs


def _taken(name: str) -> StoreError:
    return StoreError(f"a session named {name!r} already exists; pick another --save-as")


def check_distinct(specs: Sequence[StrategySpec], strategies: StrategyRegistry) -> None:
    """Refuse a strategy given twice: as it is built, so `window:k=03` is `window:k=3` and
    `window:k=5` is `window` (labels name what was typed, and told them apart)."""
    seen: dict[str, str] = {}
    for spec in specs:
        made = strategies.create(spec)
        key = json.dumps([made.name, dict(made.params)], sort_keys=True, default=str)
        if key in seen:
            raise RepeatedStrategy(spec.label, seen[key])
        seen[key] = spec.label


def seed_user_facts(store: MemoryStore, user: str | None, facts: Sequence[FactRecord]) -> None:
    if user is None:
        return
    for fact in facts:
        store.facts.upsert_fact(fact.key, fact.value, scope=FactScope.USER, user=user,
                                source_turn=fact.source_turn)


def _session_name(save_as: str, spec: StrategySpec, count: int) -> str:
    return save_as if count == 1 else f"{save_as}-{spec.slug}"


def _run_one(
    transcript: Transcript,
    spec: StrategySpec,
    steps: list[Step],
    store: TurnStore,
    name: str | None,
    options: RunOptions,
    progress: Progress | None,
    saved: list[tuple[str, int]] | None = None,
) -> StrategyRun:
    """`saved`: where the session this run makes is noted (name, id), once it exists."""
    own = options.provider_per_run() if options.provider_per_run else None
    try:
        engine, run, stored = _start(transcript, spec, store, name, options,
                                     own or options.chat_provider)
        if saved is not None and name:
            saved.append((name, engine.session.id))
        last = 0  # where the notices of the last step storing a turn start
        try:
            for step in _with_progress(steps, spec.label, progress):
                if step.kind is StepKind.TURN or step.extra:
                    last = len(run.notices)
                play(engine, step, run, stored, options)
        except BaseException:
            engine.indexing.abandon()  # what it has not stored is of a run that does not stand
            raise
        if saved is not None and stored.probes:
            # As `sessions import` keeps them: `chatmem eval SAVED` asks them again.
            engine.store.sessions.add_probes(engine.session.id, stored.probes)
        if name is None:
            # Kept in memory: no turn follows its last, whose "next turn" would never come
            # (a saved session's next turn, when it is continued, does retry).
            run.notices[last:] = never_retried(run.notices[last:])
        _finish(engine, run, options.user)
    finally:
        if own is not None:
            own.close()
    return run


def _start(
    transcript: Transcript, spec: StrategySpec, store: TurnStore, name: str | None,
    options: RunOptions, chat_provider: Provider,
) -> tuple[Engine[TurnStore], StrategyRun, Stored]:
    strategy = options.strategies.create(spec)
    helper = CountingProvider(options.helper_provider or chat_provider)
    chat = CountingProvider(chat_provider)
    session = store.sessions.create_session(
        name or session_name_from(f"replay-{spec.slug}"), strategy.name, dict(strategy.params),
        provider=chat_provider.name, model=chat_provider.model, system=transcript.system,
        user=options.user, tokenizer=chat.token_counter().key,
        unfinished=name is not None and unfinished.is_unfinished(name),
    )
    engine = engine_over(store, session, chat, strategy, budget=options.budget, helper=helper,
                         embedder=options.embedder, zone=options.zone)
    run = StrategyRun(spec.label, strategy.name, dict(strategy.params), session=name,
                      probes_only=options.probes_only)
    return engine, run, Stored()


def _finish(engine: Engine[TurnStore], run: StrategyRun, user: str | None) -> None:
    for folded in (run.over_budget(), run.by_words_alone(), run.without_vectors(),
                   run.replies_replaced()):
        if folded is not None:
            run.notices.append(folded)  # what inspect warns of at each, said once
    store, session_id = engine.store, engine.session.id
    assert isinstance(engine.helper, CountingProvider)
    assert isinstance(engine.provider, CountingProvider)
    run.strategy_calls = dict(engine.helper.calls)
    run.chat_calls = engine.provider.calls.get(Purpose.CHAT, 0)
    summaries = store.memory.summaries(session_id)
    run.summary_versions = len(summaries)
    run.dropped_anchors = len({a for s in summaries for a in s.dropped_anchors})
    own = {m.id for m in store.history.messages(session_id)}
    run.facts = len([f for f in store.facts.facts(user=user, session_id=session_id)
                     if f.session_id == session_id or f.source_message_id in own])
    from chatmem.memory.pins import pinned_facts

    run.pinned = len(pinned_facts(store.memory, session_id))


def _with_progress(steps: list[Step], label: str, progress: Progress | None) -> Iterator[Step]:
    for done, step in enumerate(steps, 1):
        yield step
        if progress:
            progress(label, done, len(steps))


