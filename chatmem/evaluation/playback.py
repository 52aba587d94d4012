"""Playing one step of a replay (evaluation.steps) into a strategy's session: turns sent
or stored, probes scored, and what each measures noted on the strategy's run."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import tzinfo
from typing import Any

from chatmem.attachments import Attachment
from chatmem.context_warnings import EmbeddingFailed
from chatmem.embeddings.base import Embedder
from chatmem.engine import Engine
from chatmem.engine.said import Said, transcript_time
from chatmem.errors import ProviderError
from chatmem.evaluation.counting_provider import CountingProvider
from chatmem.evaluation.scoring import ProbeResult, StrategyRun, score_probe
from chatmem.evaluation.steps import Replaced, Step, StepKind
from chatmem.indexing_notices import IndexingNotice
from chatmem.memory.context import Context
from chatmem.memory.reasons import Merged, PartReason, Recalled
from chatmem.memory.registry import StrategyRegistry
from chatmem.notices import FileLeft, FilesNotReplayed, Notice
from chatmem.providers.base import Provider, Purpose, image_rule
from chatmem.store.protocols import TurnStore
from chatmem.transcripts.format import Probe, TranscriptMessage, message_dicts


@dataclass(frozen=True)
class RunOptions:
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


@dataclass
class Stored:
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


def play(engine: Engine[TurnStore], step: Step, run: StrategyRun, stored: Stored,
         options: RunOptions) -> None:
    """Play `step` into `engine`'s session, noting on `run` what it measures."""
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
           stored: Stored) -> None:
    """Store `messages` as they are, then update the memory as after a turn."""
    ids = engine.store.history.import_messages(engine.session.id, message_dicts(messages))
    stored.ids.update({m.id: i for m, i in zip(messages, ids, strict=True) if m.id})
    stored.add_messages(len(ids))
    _note(run, engine.update_memory())


def _turn(engine: Engine[TurnStore], step: Step, run: StrategyRun, stored: Stored,
          options: RunOptions) -> None:
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
        _measure_turn(run, result.context)
    _note(run, result.notices)
    if result.record.user_message_id:
        stored.add_messages(2)
    if step.message.id and result.record.user_message_id:
        stored.ids[step.message.id] = result.record.user_message_id
    if step.reply is not None and step.reply.id and result.record.assistant_message_id:
        stored.ids[step.reply.id] = result.record.assistant_message_id


def _turn_apart(engine: Engine[TurnStore], step: Step, run: StrategyRun,
                stored: Stored, options: RunOptions) -> None:
    """A user message whose recorded reply comes after a system message or a probe: each
    stored in its place, as `sessions import` stores them, and the context the user
    message would have been sent with measured as a turn's."""
    assert step.message is not None and step.reply is not None
    if not options.probes_only:
        context = engine.build_context(step.message.content, _files(engine, step.message, run),
                                       said_at=transcript_time(step.message.ts, engine.zone),
                                       speaker=step.message.speaker)
        _measure_turn(run, context)
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


def _probe(engine: Engine[TurnStore], probe: Probe, stored: Stored, options: RunOptions,
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


def _measure_turn(run: StrategyRun, context: Context) -> None:
    """The context a user message is sent with, counted as its turn's prompt."""
    run.prompt_tokens.append(context.tokens)
    run.contexts.append((context.tokens, context.budget))
    _note_failed_embedding(run, context)


def _note_failed_embedding(run: StrategyRun, context: Context) -> None:
    run.embedding_failures.extend(w for w in context.warnings
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
            notice = replace(notice, in_replay=True)
            if notice in run.indexing_said:
                continue
            run.indexing_said.add(notice)
        run.notices.append(notice)
