"""Replay and eval: run one conversation under several strategies and measure each.

Every strategy gets its own session (in memory unless saved) and sees the same
user turns in the same order. With recorded replies kept, no chat model is
needed; summaries and facts still go to the helper model, through a counting
proxy, so the model calls a strategy makes are measured, not guessed.

At each probe the context the strategy would send for the probe is built (not
sent, not stored) and scored:

- id recall: share of `expect_ids` whose message is in the context verbatim;
- text recall: share of `expect_text` strings found, case-insensitively, in
  the memory parts of the context (summary, facts, recalled, history). The
  system prompt and the probe itself do not count: the question must not
  answer itself.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatmem.engine import Engine
from chatmem.errors import StrategyError
from chatmem.memory.base import Context, Strategy
from chatmem.providers.base import ChatMessages, Provider, ReplyStream
from chatmem.store import Store
from chatmem.tokens import TokenCounter
from chatmem.transcript import Probe, Transcript, TranscriptMessage

MEMORY_PARTS = ("summary", "facts", "recalled", "history")

Progress = Callable[[str, int, int], None]
"""(strategy label, steps done, steps total)."""


# -- strategy specs -----------------------------------------------------------


@dataclass(frozen=True)
class StrategySpec:
    """A strategy as typed on the command line: `window` or `window:k=2,other=3`."""

    name: str
    params: dict[str, str]

    @property
    def label(self) -> str:
        return " ".join([self.name, *(f"{k}={v}" for k, v in self.params.items())])

    @property
    def slug(self) -> str:
        return re.sub(r"[^\w+.]+", "-", self.label).strip("-")

    def create(self) -> Strategy:
        from chatmem.memory import create_strategy

        return create_strategy(self.name, self.params)


def parse_spec(text: str, shared: dict[str, str] | None = None) -> StrategySpec:
    """`window:k=2` → StrategySpec; `shared` (--param) fills keys the spec leaves out."""
    name, _, rest = text.partition(":")
    params = dict(shared or {})
    for pair in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise StrategyError(
                f"strategy {text!r}: parameters must be key=value, e.g. window:k=2"
            )
        params[key.strip()] = value.strip()
    spec = StrategySpec(name.strip(), params)
    spec.create()  # validate now, before any work is done
    return spec


# -- the counting proxy ----------------------------------------------------------


class CountingProvider:
    """A Provider that counts the calls made through it, by purpose."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.calls: dict[str, int] = {}

    def _count(self, purpose: str) -> None:
        self.calls[purpose] = self.calls.get(purpose, 0) + 1

    def stream(self, messages: ChatMessages) -> ReplyStream:
        self._count("chat")
        return self.inner.stream(messages)

    def complete(self, messages: ChatMessages, *, purpose: str = "chat") -> str:
        self._count(purpose)
        return self.inner.complete(messages, purpose=purpose)

    def token_counter(self) -> TokenCounter:
        return self.inner.token_counter()

    def close(self) -> None:
        pass  # the inner provider is shared and closed by its owner


# -- results -------------------------------------------------------------------


@dataclass
class ProbeResult:
    question: str
    after_turn: int
    expect_ids: list[str]
    found_ids: list[str]
    expect_text: list[str]
    found_text: list[str]
    tokens: int
    answer: str | None = None
    answer_found: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class StrategyRun:
    label: str
    strategy: str
    params: dict[str, Any]
    prompt_tokens: list[int] = field(default_factory=list)
    strategy_calls: dict[str, int] = field(default_factory=dict)
    chat_calls: int = 0
    summary_versions: int = 0
    facts: int = 0
    notices: list[str] = field(default_factory=list)
    probes: list[ProbeResult] = field(default_factory=list)
    session: str | None = None

    @property
    def turns(self) -> int:
        return len(self.prompt_tokens)

    @property
    def total_tokens(self) -> int:
        return sum(self.prompt_tokens)

    @property
    def model_calls(self) -> int:
        return sum(self.strategy_calls.values())

    def id_recall(self) -> float | None:
        return _share(sum(len(p.found_ids) for p in self.probes),
                      sum(len(p.expect_ids) for p in self.probes))

    def text_recall(self) -> float | None:
        return _share(sum(len(p.found_text) for p in self.probes),
                      sum(len(p.expect_text) for p in self.probes))

    def answer_recall(self) -> float | None:
        answered = [p for p in self.probes if p.answer_found is not None]
        return _share(sum(len(p.answer_found or []) for p in answered),
                      sum(len(p.expect_text) for p in answered)) if answered else None

    def recall(self) -> float | None:
        """The lower of id and text recall: what --min-recall checks."""
        values = [v for v in (self.id_recall(), self.text_recall()) if v is not None]
        return min(values) if values else None

    def probe_tokens(self) -> tuple[float | None, int | None]:
        tokens = [p.tokens for p in self.probes]
        return (statistics.fmean(tokens), max(tokens)) if tokens else (None, None)

    def to_json(self) -> dict[str, Any]:
        mean_probe, max_probe = self.probe_tokens()
        return {
            "strategy": self.label,
            "name": self.strategy,
            "params": self.params,
            "session": self.session,
            "turns": self.turns,
            "prompt_tokens": {
                "total": self.total_tokens,
                "mean": round(statistics.fmean(self.prompt_tokens), 1) if self.turns else None,
                "max": max(self.prompt_tokens, default=None),
                "per_turn": self.prompt_tokens,
            },
            "strategy_model_calls": self.model_calls,
            "strategy_model_calls_by_purpose": self.strategy_calls,
            "chat_model_calls": self.chat_calls,
            "summary_versions": self.summary_versions,
            "facts": self.facts,
            "notices": self.notices,
            "eval": {
                "probes": len(self.probes),
                "id_recall": self.id_recall(),
                "text_recall": self.text_recall(),
                "answer_recall": self.answer_recall(),
                "context_tokens": {
                    "mean": None if mean_probe is None else round(mean_probe, 1),
                    "max": max_probe,
                },
                "per_probe": [p.to_json() for p in self.probes],
            },
        }


def _share(found: int, expected: int) -> float | None:
    return round(found / expected, 4) if expected else None


# -- scoring ---------------------------------------------------------------------


def score_probe(
    probe: Probe, context: Context, stored_ids: dict[str, int], after_turn: int
) -> ProbeResult:
    in_context = {
        m.id: m.content for p in context.parts if p.kind in MEMORY_PARTS for m in p.messages
        if m.id is not None
    }
    found_ids = [i for i in probe.expect_ids if stored_ids.get(i) in in_context]
    memory_text = "\n".join(
        m.content for p in context.parts if p.kind in MEMORY_PARTS for m in p.messages
    ).casefold()
    found_text = [t for t in probe.expect_text if t.casefold() in memory_text]
    return ProbeResult(probe.question, after_turn, list(probe.expect_ids), found_ids,
                       list(probe.expect_text), found_text, context.tokens)


# -- replay ------------------------------------------------------------------------


@dataclass
class Step:
    """One unit of replay work: a user turn (with its recorded reply), extra messages, a probe."""

    kind: str  # "turn", "import" or "probe"
    message: TranscriptMessage | None = None
    reply: TranscriptMessage | None = None
    extra: list[TranscriptMessage] = field(default_factory=list)
    probe: Probe | None = None


def plan(transcript: Transcript, keep_replies: bool) -> list[Step]:
    """Group a transcript into replay steps.

    A user message and the assistant message after it are one turn. Messages
    that are not part of such a pair (an opening greeting, a mid-conversation
    system message, a second assistant message) are stored as they are, so
    every strategy sees the same history. Regenerating ignores recorded
    assistant messages.
    """
    steps: list[Step] = []
    for item in transcript.items:
        if isinstance(item, Probe):
            steps.append(Step("probe", probe=item))
        elif item.role == "user":
            steps.append(Step("turn", message=item))
        elif item.role == "assistant" and not keep_replies:
            continue
        elif (item.role == "assistant" and steps and steps[-1].kind == "turn"
              and steps[-1].reply is None and not steps[-1].extra):
            steps[-1].reply = item
        elif steps and steps[-1].kind in ("turn", "import"):
            steps[-1].extra.append(item)
        else:
            steps.append(Step("import", extra=[item]))
    return steps


def replay(
    transcript: Transcript,
    specs: Sequence[StrategySpec],
    *,
    chat_provider: Provider,
    helper_provider: Provider | None = None,
    store: Store | None = None,
    save_as: str | None = None,
    keep_replies: bool = True,
    budget: int | None = None,
    user: str | None = None,
    answer: bool = False,
    progress: Progress | None = None,
) -> list[StrategyRun]:
    """Run the transcript under each strategy; `store` and `save_as` keep the sessions."""
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels):
        raise StrategyError("each --strategy must differ (same name and parameters given twice)")
    if not specs:
        raise StrategyError("give at least one --strategy")
    if save_as and store is None:
        raise StrategyError("--save-as needs a history file")
    if save_as:
        names = [_session_name(save_as, s, len(specs)) for s in specs]
        taken = [n for n in names if store is not None and store.find_session(n)]
        if taken:
            from chatmem.errors import StoreError

            raise StoreError(f"a session named {taken[0]!r} already exists; pick another --save-as")
    steps = plan(transcript, keep_replies)
    runs = []
    for spec in specs:
        if save_as and store is not None:
            runs.append(_run_one(transcript, spec, steps, store,
                                 _session_name(save_as, spec, len(specs)), chat_provider,
                                 helper_provider, keep_replies, budget, user, answer, progress))
        else:
            with Store(":memory:") as scratch:
                runs.append(_run_one(transcript, spec, steps, scratch, None, chat_provider,
                                     helper_provider, keep_replies, budget, user, answer,
                                     progress))
    return runs


def _session_name(save_as: str, spec: StrategySpec, count: int) -> str:
    return save_as if count == 1 else f"{save_as}-{spec.slug}"


def _run_one(
    transcript: Transcript,
    spec: StrategySpec,
    steps: list[Step],
    store: Store,
    name: str | None,
    chat_provider: Provider,
    helper_provider: Provider | None,
    keep_replies: bool,
    budget: int | None,
    user: str | None,
    answer: bool,
    progress: Progress | None,
) -> StrategyRun:
    engine, run, stored_ids = _start(transcript, spec, store, name, chat_provider,
                                     helper_provider, budget, user)
    for step in _with_progress(steps, spec.label, progress):
        _play(engine, step, run, stored_ids, keep_replies, chat_provider, answer)
    _finish(engine, run, user)
    return run


def _start(
    transcript: Transcript, spec: StrategySpec, store: Store, name: str | None,
    chat_provider: Provider, helper_provider: Provider | None, budget: int | None,
    user: str | None,
) -> tuple[Engine, StrategyRun, dict[str, int]]:
    strategy = spec.create()
    helper = CountingProvider(helper_provider or chat_provider)
    chat = CountingProvider(chat_provider)
    session = store.create_session(
        name or f"replay-{spec.slug}", strategy.name, dict(strategy.params),
        provider=chat_provider.name, model=chat_provider.model, system=transcript.system,
        user=user,
    )
    engine = Engine(store, session, chat, strategy, budget=budget, helper_model=helper)
    return engine, StrategyRun(spec.label, strategy.name, dict(strategy.params), session=name), {}


def _play(engine: Engine, step: Step, run: StrategyRun, stored_ids: dict[str, int],
          keep_replies: bool, chat_provider: Provider, answer: bool) -> None:
    if step.kind == "probe" and step.probe is not None:
        run.probes.append(_probe(engine, step.probe, stored_ids, chat_provider, answer))
        return
    if step.kind == "turn" and step.message is not None:
        _turn(engine, step, run, stored_ids, keep_replies)
    if step.extra:
        ids = engine.store.import_messages(engine.session.id, [m.to_json() for m in step.extra])
        stored_ids.update({m.id: i for m, i in zip(step.extra, ids, strict=True) if m.id})
        run.notices.extend(engine.update_memory())


def _finish(engine: Engine, run: StrategyRun, user: str | None) -> None:
    store, session_id = engine.store, engine.session.id
    assert isinstance(engine.helper_model, CountingProvider)
    assert isinstance(engine.provider, CountingProvider)
    run.strategy_calls = dict(engine.helper_model.calls)
    run.chat_calls = engine.provider.calls.get("chat", 0)
    run.summary_versions = len(store.summaries(session_id))
    own = {m.id for m in store.messages(session_id)}
    run.facts = len([f for f in store.facts(user=user, session_id=session_id)
                     if f.session_id == session_id or f.source_message_id in own])


def what_if(
    transcript: Transcript,
    spec: StrategySpec,
    text: str,
    *,
    chat_provider: Provider,
    helper_provider: Provider | None = None,
    budget: int | None = None,
    user: str | None = None,
) -> tuple[Context, StrategyRun]:
    """The context `spec` would send for `text` after the transcript.

    Derived state (summaries, facts) is computed on the fly by replaying the
    transcript, with its recorded replies, into an in-memory store.
    """
    with Store(":memory:") as scratch:
        engine, run, stored_ids = _start(transcript, spec, scratch, None, chat_provider,
                                         helper_provider, budget, user)
        for step in plan(transcript, keep_replies=True):
            if step.kind != "probe":
                _play(engine, step, run, stored_ids, True, chat_provider, False)
        _finish(engine, run, user)
        return engine.build_context(text), run


def _with_progress(steps: list[Step], label: str, progress: Progress | None) -> Iterator[Step]:
    for done, step in enumerate(steps, 1):
        yield step
        if progress:
            progress(label, done, len(steps))


def _turn(engine: Engine, step: Step, run: StrategyRun, stored_ids: dict[str, int],
          keep_replies: bool) -> None:
    assert step.message is not None
    if keep_replies and step.reply is not None:
        result = engine.replay_turn(step.message.content, step.reply.content)
    else:
        result = engine.run_turn(step.message.content)
    run.prompt_tokens.append(result.context.tokens)
    run.notices.extend(result.notices)
    if step.message.id and result.record.user_message_id:
        stored_ids[step.message.id] = result.record.user_message_id
    if step.reply is not None and step.reply.id and result.record.assistant_message_id:
        stored_ids[step.reply.id] = result.record.assistant_message_id


def _probe(engine: Engine, probe: Probe, stored_ids: dict[str, int], chat_provider: Provider,
           answer: bool) -> ProbeResult:
    context = engine.build_context(probe.question)
    result = score_probe(probe, context, stored_ids, engine.history().turn_count())
    if answer:
        reply = chat_provider.complete(context.messages(), purpose="chat")
        result.answer = reply
        folded = reply.casefold()
        result.answer_found = [t for t in probe.expect_text if t.casefold() in folded]
    return result
