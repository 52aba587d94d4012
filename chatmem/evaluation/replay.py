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
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import TYPE_CHECKING, Any

from chatmem.attachments import Attachment
from chatmem.context_warnings import EmbeddingFailed
from chatmem.embeddings.base import Embedder
from chatmem.engine import Engine
from chatmem.engine.opening import engine_over
from chatmem.engine.said import Said, transcript_time
from chatmem.errors import ProviderError, RepeatedStrategy, StoreError, StrategyError
from chatmem.evaluation.counting_provider import CountingProvider
from chatmem.evaluation.scoring import ProbeResult, StrategyRun, score_probe
from chatmem.evaluation.steps import Replaced, Step, StepKind, plan
from chatmem.memory.context import Context
from chatmem.memory.reasons import Merged, PartReason, Recalled
from chatmem.memory.registry import StrategyRegistry
from chatmem.memory.spec import StrategySpec
from chatmem.notices import FileLeft, FilesNotReplayed, IndexingNotice, Notice
from chatmem.plugins import load_registries
from chatmem.providers.base import Provider, Purpose, image_rule
from chatmem.store import FactScope, Store, check_session_name, session_name_from, unfinished
from chatmem.store.protocols import MemoryStore, TurnStore
from chatmem.transcripts.format import Probe, Transcript, TranscriptMessage, message_dicts

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
        raise StoreError(f"a session named {taken[0]!r} already exists; pick another --save-as")
    options = _Options(chat_provider, helper_provider, keep_replies, budget, user, answer,
                       strategies, embedder, probes_only,
                       provider_per_run, zone)
    steps = plan(transcript, keep_replies)
    runs = []
    saved: list[tuple[str, int]] = []
    if save_as and store is not None:
        unfinished.remove_leftovers(store)
    for spec, name in zip(specs, names, strict=True):
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
            with Store(":memory:") as scratch:
                seed_user_facts(scratch, user, user_facts)
                runs.append(_run_one(transcript, spec, steps, scratch, None, options, progress))
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


@dataclass(frozen=True)
class _Options:
    """What every strategy of one replay shares."""

    chat_provider: Provider
    helper_provider: Provider | None
    keep_replies: bool
    budget: int | None
    user: str | None
    answer: bool
    strategies: StrategyRegistry
    embedder: Embedder | None = None
    probes_only: bool = False
    provider_per_run: Callable[[], Provider] | None = None
    zone: tzinfo | None = None


def _session_name(save_as: str, spec: StrategySpec, count: int) -> str:
    return save_as if count == 1 else f"{save_as}-{spec.slug}"


def _run_one(
    transcript: Transcript,
    spec: StrategySpec,
    steps: list[Step],
    store: TurnStore,
    name: str | None,
    options: _Options,
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
        try:
            for step in _with_progress(steps, spec.label, progress):
                _play(engine, step, run, stored, options)
        except BaseException:
            engine.indexing.abandon()  # what it has not stored is of a run that does not stand
            raise
        if saved is not None and stored.probes:
            # As `sessions import` keeps them: `chatmem eval SAVED` asks them again.
            engine.store.sessions.add_probes(engine.session.id, stored.probes)
        _finish(engine, run, options.user)
    finally:
        if own is not None:
            own.close()
    return run


def _start(
    transcript: Transcript, spec: StrategySpec, store: TurnStore, name: str | None,
    options: _Options, chat_provider: Provider,
) -> tuple[Engine[TurnStore], StrategyRun, _Stored]:
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
    return engine, run, _Stored()


@dataclass
class _Stored:
    """What a run stored of the transcript: each message's row id by its transcript id (a
    probe's expect_ids name them), how many messages the session holds, and the probes met,
    placed as `sessions import` places them (Transcript.probe_positions)."""

    ids: dict[str, int] = field(default_factory=dict)
    messages: int = 0
    probes: list[dict[str, Any]] = field(default_factory=list)
    waiting: int = 0
    """Probes met since the last message stored."""

    def add_messages(self, count: int) -> None:
        self.messages += count
        self.waiting = 0

    def add_probe(self, probe: Probe) -> None:
        self.probes.append({"after_position": self.messages, "question": probe.question,
                            "expect_ids": probe.expect_ids, "expect_text": probe.expect_text,
                            "before_prompt": False})
        self.waiting += 1

    def prompt_changed(self) -> None:
        """The probes met since the last message were asked under the prompt replaced."""
        for waiting in self.probes[len(self.probes) - self.waiting:]:
            waiting["before_prompt"] = True
        self.waiting = 0


def _play(engine: Engine[TurnStore], step: Step, run: StrategyRun, stored: _Stored,
          options: _Options) -> None:
    if step.kind is StepKind.PROBE and step.probe is not None:
        run.probes.append(_probe(engine, step.probe, stored, options, run, step.replaced))
        return
    if step.kind is StepKind.SYSTEM and step.system is not None:
        engine.session = engine.store.sessions.update_session(engine.session.id,
                                                              system=step.system.system)
        stored.prompt_changed()
        return
    if step.kind is StepKind.TURN and step.message is not None:
        if step.between:
            _turn_apart(engine, step, run, stored, options)
        elif options.probes_only and step.reply is not None:
            _store(engine, [step.message, step.reply], run, stored)
        else:
            _turn(engine, step, run, stored, options)
        run.turn_count += 1
    if step.extra:
        _store(engine, step.extra, run, stored)


def _store(engine: Engine[TurnStore], messages: list[TranscriptMessage], run: StrategyRun,
           stored: _Stored) -> None:
    """Store `messages` as they are, then update the memory as after a turn."""
    ids = engine.store.history.import_messages(engine.session.id, message_dicts(messages))
    stored.ids.update({m.id: i for m, i in zip(messages, ids, strict=True) if m.id})
    stored.add_messages(len(ids))
    _note(run, engine.update_memory())


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


def _turn(engine: Engine[TurnStore], step: Step, run: StrategyRun, stored: _Stored,
          options: _Options) -> None:
    assert step.message is not None
    if options.keep_replies and step.reply is not None:
        result = engine.replay_turn(step.message.content, step.reply.content,
                                    times=(step.message.ts, step.reply.ts),
                                    ids=(step.message.id, step.reply.id),
                                    said_at=transcript_time(step.message.ts, engine.zone),
                                    speaker=step.message.speaker,
                                    attachments=_files(engine, step.message, run))
    else:
        result = engine.run_turn(step.message.content, external_id=step.message.id,
                                 speaker=step.message.speaker,
                                 attachments=_files(engine, step.message, run))
    if not options.probes_only:
        run.prompt_tokens.append(result.context.tokens)
        run.contexts.append((result.context.tokens, result.context.budget))
        _note_failed_embedding(run, result.context)
    _note(run, result.notices)
    if result.record.user_message_id:
        stored.add_messages(2)
    if step.message.id and result.record.user_message_id:
        stored.ids[step.message.id] = result.record.user_message_id
    if step.reply is not None and step.reply.id and result.record.assistant_message_id:
        stored.ids[step.reply.id] = result.record.assistant_message_id


def _turn_apart(engine: Engine[TurnStore], step: Step, run: StrategyRun,
                stored: _Stored, options: _Options) -> None:
    """A user message whose recorded reply comes after a system message or a probe: each
    stored in its place, as `sessions import` stores them, and the context the user
    message would have been sent with measured as a turn's."""
    assert step.message is not None and step.reply is not None
    if not options.probes_only:
        context = engine.build_context(step.message.content, _files(engine, step.message, run),
                                       said_at=transcript_time(step.message.ts, engine.zone),
                                       speaker=step.message.speaker)
        run.prompt_tokens.append(context.tokens)
        run.contexts.append((context.tokens, context.budget))
        _note_failed_embedding(run, context)
    waiting = [step.message]
    for item in step.between:
        if isinstance(item, Probe):
            if waiting:
                _store(engine, waiting, run, stored)
                waiting = []
            run.probes.append(_probe(engine, item, stored, options, run))
        elif isinstance(item, TranscriptMessage):
            waiting.append(item)
    _store(engine, [*waiting, step.reply], run, stored)


def _files(engine: Engine[TurnStore], message: TranscriptMessage,
           run: StrategyRun) -> tuple[Attachment, ...]:
    """The files `message`'s stored turn sent, sent again; to a model that cannot see images
    (a chat would refuse one), an image as its description alone: the replay goes on, the
    image's tokens left out of what it measures. What is not sent as the turn sent it is
    said (FilesNotReplayed), for the turn `run` plays next."""
    turn = run.turn_count + 1
    if message.files_gone:
        _note(run, [FilesNotReplayed(turn, message.files_gone, FileLeft.GONE)])
    images = [f.name for f in message.files if f.image]
    if not images or image_rule(engine.provider) is not None:
        return message.files
    _note(run, [FilesNotReplayed(turn, tuple(images), FileLeft.UNSEEN)])
    return tuple(Attachment(f.name, f.text) if f.image else f for f in message.files)


def _probe(engine: Engine[TurnStore], probe: Probe, stored: _Stored, options: _Options,
           run: StrategyRun, replaced: Replaced | None = None) -> ProbeResult:
    stored.add_probe(probe)
    context = engine.build_context(probe.question, said_at=Said.AS_NEWEST)
    run.contexts.append((context.tokens, context.budget))
    _note_failed_embedding(run, context)
    result = score_probe(probe, context, stored.ids, engine.history().turn_count(), replaced)
    if options.answer:
        # Straight to the run's model, not through the counting proxy: probe answers
        # are part of the measurement, not calls the strategy made.
        assert isinstance(engine.provider, CountingProvider)
        try:
            answer = engine.provider.inner.complete(context.messages(), purpose=Purpose.CHAT)
        except ProviderError as e:
            # One answer failing (an error mid-reply) threw away every answer already paid
            # for and asked no later probe: it is kept as its error, the run goes on.
            result.answer_error = str(e)
        else:
            result.score_answer(answer)
    return result


def _note_failed_embedding(run: StrategyRun, context: Context) -> None:
    run.embedding_failures.extend(w.error for w in context.warnings
                                  if isinstance(w, EmbeddingFailed))
    if any(isinstance(r, Recalled) and r.embedded is not None for r in _reasons(context)):
        run.partly_unembedded += 1


def _reasons(context: Context) -> Iterator[PartReason]:
    """The reasons of `context`'s parts, those of a combination's members one by one."""
    for part in context.parts:
        if isinstance(part.reason, Merged):
            yield from part.reason.reasons
        else:
            yield part.reason


def _note(run: StrategyRun, notices: Sequence[Notice]) -> None:
    """A turn's notices; the vector backlog's failure said once per run, not once per turn
    ("will retry next turn" at every one of a replay's turns while the embedder is down)."""
    for notice in notices:
        if isinstance(notice, IndexingNotice):
            if notice in run.indexing_said:
                continue
            run.indexing_said.add(notice)
        run.notices.append(notice)
