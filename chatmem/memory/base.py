"""The memory core: what a strategy is given, and what it gives back.

A strategy is a pure decision: given a view of the history, its own derived
state, the new input, a budget and a token counter, it returns a `Context`,
an ordered list of `Part`s, each with the messages it contributes, their
token count and a one-line reason. Same inputs, same context: that is what
makes `inspect` and `replay` trustworthy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

from chatmem.activity import QUIET, Activity
from chatmem.errors import StrategyError
from chatmem.memory.params import Param, format_params
from chatmem.tokens import REPLY_PRIMING, TokenCounter

if TYPE_CHECKING:
    from chatmem.config import Settings
    from chatmem.embeddings import Embedder
    from chatmem.memory.state import SessionState
    from chatmem.providers.base import Provider

PartKind = Literal["system", "summary", "facts", "recalled", "history", "input"]
PART_ORDER: tuple[PartKind, ...] = ("system", "summary", "facts", "recalled", "history", "input")


@dataclass(frozen=True)
class Message:
    """One message. `id` is the stored id; None for text not (yet) stored."""

    role: str
    content: str
    tokens: int
    id: int | None = None
    turn: int | None = None

    @classmethod
    def counted(cls, role: str, content: str, counter: TokenCounter) -> Message:
        """A message not (yet) stored, with its tokens counted by `counter`."""
        return cls(role, content, counter.count_message(role, content))

    def as_chat(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class HistoryTurn:
    """A user message and what followed it up to the next user message."""

    number: int
    messages: tuple[Message, ...]

    @property
    def tokens(self) -> int:
        return sum(m.tokens for m in self.messages)


class HistoryView(Protocol):
    """Read access to a session's committed turns, oldest turn is number 1."""

    def turn_count(self) -> int: ...

    def newest_first(self) -> Iterator[HistoryTurn]:
        """Turns from the newest back; lazy so a strategy reads only what it uses."""
        ...

    def turns(self, first: int, last: int) -> list[HistoryTurn]:
        """Turns numbered first..last inclusive, in order."""
        ...


class ListHistory:
    """A HistoryView over turns held in memory (replays, tests)."""

    def __init__(self, turns: Sequence[HistoryTurn] = ()) -> None:
        self._turns = list(turns)

    @classmethod
    def from_messages(cls, messages: Iterable[Message]) -> ListHistory:
        return cls(group_turns(messages))

    def turn_count(self) -> int:
        return len(self._turns)

    def newest_first(self) -> Iterator[HistoryTurn]:
        return reversed(self._turns)

    def turns(self, first: int, last: int) -> list[HistoryTurn]:
        return self._turns[max(first, 1) - 1 : max(last, 0)]


def group_turns(messages: Iterable[Message], first_number: int = 1) -> list[HistoryTurn]:
    """Group messages into turns; anything before the first user message is turn 1."""
    turns: list[list[Message]] = []
    for message in messages:
        if message.role == "user" or not turns:
            turns.append([])
        turns[-1].append(message)
    return [HistoryTurn(first_number + i, tuple(ms)) for i, ms in enumerate(turns)]


@dataclass(frozen=True)
class Part:
    kind: PartKind
    messages: tuple[Message, ...]
    reason: str
    scores: tuple[tuple[int, float], ...] = field(default=(), compare=False)
    """For recalled parts: (turn, relevance score) of each turn, so a shared budget
    can let the least relevant go first. Not recorded with the context."""

    @property
    def tokens(self) -> int:
        return sum(m.tokens for m in self.messages)


@dataclass(frozen=True)
class Context:
    """What one request sends: parts in PART_ORDER, plus what was left out."""

    parts: tuple[Part, ...]
    budget: int | None = None
    dropped: str | None = None
    warnings: tuple[str, ...] = ()
    priming: int = REPLY_PRIMING
    """The counter's tokens beyond the messages (see TokenCounter.priming)."""
    recall: tuple[dict[str, Any], ...] = ()
    """How recall ranked the candidates it kept and the best it dropped: id, turn, role,
    bm25, words, dense, fused, tokens, kept, why (see chatmem.memory.ranking)."""

    @property
    def tokens(self) -> int:
        """Total counted tokens, chat-format overhead and reply priming included."""
        return self.priming + sum(p.tokens for p in self.parts)

    @property
    def over_budget(self) -> bool:
        return self.budget is not None and self.tokens > self.budget

    def messages(self) -> list[dict[str, str]]:
        return [m.as_chat() for p in self.parts for m in p.messages]

    def part(self, kind: PartKind) -> Part | None:
        return next((p for p in self.parts if p.kind == kind), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "budget": self.budget,
            "dropped": self.dropped,
            "warnings": list(self.warnings),
            "priming": self.priming,
            "parts": [
                {
                    "kind": p.kind,
                    "reason": p.reason,
                    "tokens": p.tokens,
                    "messages": [
                        {"role": m.role, "content": m.content, "tokens": m.tokens, "id": m.id,
                         "turn": m.turn}
                        for m in p.messages
                    ],
                }
                for p in self.parts
            ],
            **({"recall": list(self.recall)} if self.recall else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Context:
        parts = tuple(
            Part(
                kind=p["kind"],
                reason=p["reason"],
                messages=tuple(
                    Message(m["role"], m["content"], m["tokens"], m.get("id"), m.get("turn"))
                    for m in p["messages"]
                ),
            )
            for p in data["parts"]
        )
        return cls(parts, data.get("budget"), data.get("dropped"), tuple(data.get("warnings", ())),
                   data.get("priming", REPLY_PRIMING), tuple(data.get("recall", ())))


@dataclass
class ContextRequest:
    """Everything a strategy may look at to build a context."""

    history: HistoryView
    input: Message
    counter: TokenCounter
    system: str | None = None
    state: SessionState | None = None
    """Derived-state reader (summaries, facts, recall index); None for stateless strategies."""
    budget: int | None = None
    """The configured context budget, used when the strategy has none of its own."""
    embedder: Embedder | None = None
    """Turns text into vectors for recall by meaning; None: recall ranks by words."""
    cap: int | None = None
    """A combination's shared budget: members with a budget of their own stay within it."""

    def capped(self, cap: int | None) -> ContextRequest:
        """The same request for a member of a combination sharing `cap` tokens."""
        shared = dataclasses.replace(self, cap=cap)
        shared.__dict__["system_message"] = self.system_message  # counted once, not per member
        return shared

    @cached_property
    def system_message(self) -> Message | None:
        """The system prompt as sent; counted once however many parts of a build ask."""
        if not self.system:
            return None
        return Message.counted("system", self.system, self.counter)


@runtime_checkable
class Strategy(Protocol):
    """Decides what one request sends, and keeps its own derived state."""

    @property
    def name(self) -> str: ...

    @property
    def params(self) -> Mapping[str, Any]: ...

    def build(self, request: ContextRequest) -> Context: ...

    def update(self, env: MemoryEnv) -> list[str]:
        """Bring derived state up to date after a committed turn; returns notices."""
        ...

    @property
    def needs_embedder(self) -> bool:
        """Whether builds use an embedder when one is configured."""
        ...

    @property
    def keeps_state(self) -> bool:
        """Whether builds read derived state that turns build up (summaries, facts): a
        what-if must then rebuild it; otherwise the stored history is all a build needs."""
        ...

    def describe_params(self, *, changed_only: bool = False) -> str: ...


@dataclass
class MemoryEnv:
    """What a strategy may use to update its derived state after a turn."""

    history: HistoryView
    counter: TokenCounter
    state: SessionState | None = None
    model: Provider | None = None
    """Provider for summaries and fact extraction; None when none is configured."""
    settings: Settings | None = None
    """chatmem Settings, for options from the config (e.g. [summary] prompt, drift_guard)."""
    system: str | None = None
    """The session's system prompt, as the next request will send it."""
    embedder: Embedder | None = None
    """For recall: messages are embedded after the turn commits."""
    activity: Activity = QUIET
    """Where a model call says what it is doing (`with env.activity.doing(...)`)."""
    catch_up: bool = False
    """Bring the state fully up to date in bounded batches (an imported or long-unseen
    history), each call shown by `activity`; otherwise one bounded step, as after a turn."""


def catching_up(env: MemoryEnv, total: int) -> str:
    """" of 5,000 (catching up)" for an activity label during a catch-up, else ""."""
    return f" of {total:,} (catching up)" if env.catch_up else ""


class BaseStrategy:
    """Shared plumbing: parameter parsing, system and input parts, no derived state."""

    name: ClassVar[str]
    description: ClassVar[str]
    PARAMS: ClassVar[tuple[Param, ...]] = ()

    def __init__(self, **params: Any) -> None:
        self.params: Mapping[str, Any] = self.parse_params(params)

    @classmethod
    def parse_params(cls, raw: Mapping[str, Any]) -> dict[str, Any]:
        known = {p.name: p for p in cls.PARAMS}
        for key in raw:
            if key not in known:
                valid = ", ".join(known) or "none"
                raise StrategyError(
                    f"unknown parameter {key!r} for strategy {cls.name!r} (valid: {valid})"
                )
        return {
            name: p.parse(cls.name, raw[name]) if name in raw else p.default
            for name, p in known.items()
        }

    def build(self, request: ContextRequest) -> Context:
        raise NotImplementedError

    def update(self, env: MemoryEnv) -> list[str]:
        return []

    def budget(self, request: ContextRequest) -> int | None:
        return request.budget

    @property
    def needs_embedder(self) -> bool:
        """Whether builds use an embedder when one is configured (the engine opens it lazily)."""
        return False

    keeps_state: ClassVar[bool] = False

    def describe_params(self, *, changed_only: bool = False) -> str:
        """`k=3 max_tokens=600`, as a user would type the parameters.

        With `changed_only`, only those that differ from their defaults: the
        short form for the line printed after every turn.
        """
        defaults = {p.name: p.default for p in self.PARAMS}
        return format_params({
            k: v for k, v in self.params.items() if not changed_only or defaults.get(k) != v
        })


def system_part(request: ContextRequest) -> Part | None:
    message = request.system_message
    return Part("system", (message,), "system prompt") if message else None


def input_part(request: ContextRequest) -> Part:
    return Part("input", (request.input,), "the new user input (always sent)")


def assemble(
    request: ContextRequest,
    middle: Iterable[Part | None],
    *,
    budget: int | None = None,
    dropped: str | None = None,
    warnings: Iterable[str] = (),
    recall: Iterable[dict[str, Any]] = (),
) -> Context:
    """Put the parts in their fixed order and check the budget honestly."""
    parts = [p for p in (system_part(request), *middle, input_part(request)) if p is not None]
    parts.sort(key=lambda p: PART_ORDER.index(p.kind))
    notes = list(warnings)
    priming = request.counter.priming
    context = Context(tuple(parts), budget, dropped, priming=priming)
    if budget is not None and context.tokens > budget:
        fixed = sum(p.tokens for p in parts if p.kind in ("system", "input")) + priming
        if fixed > budget:
            notes.append(
                f"system prompt and input alone take {fixed:,} tokens,"
                f" over the budget of {budget:,}"
            )
        else:
            notes.append(f"context is {context.tokens:,} tokens, over the budget of {budget:,}")
    return Context(tuple(parts), budget, dropped, tuple(notes), priming, tuple(recall))


def span(numbers: Sequence[int]) -> str:
    """'turns 3–7' for a run of turn numbers."""
    if not numbers:
        return "no turns"
    if len(numbers) == 1:
        return f"turn {numbers[0]}"
    return f"turns {numbers[0]}–{numbers[-1]}"


def history_part(turns: Sequence[HistoryTurn], reason: str) -> Part | None:
    if not turns:
        return None
    return Part("history", tuple(m for t in turns for m in t.messages), reason)


def fixed_tokens(request: ContextRequest) -> int:
    """Tokens every context spends before any memory: system, input, priming."""
    system = request.system_message
    return request.counter.priming + request.input.tokens + (system.tokens if system else 0)


def fit_newest_turns(
    turns: Iterable[HistoryTurn], room: int | None, limit: int | None = None
) -> list[HistoryTurn]:
    """The newest whole turns (oldest first) that fit in `room` tokens, at most `limit`."""
    kept: list[HistoryTurn] = []
    used = 0
    for turn in turns:
        if limit is not None and len(kept) >= limit:
            break
        if room is not None and used + turn.tokens > room:
            break
        kept.append(turn)
        used += turn.tokens
    kept.reverse()
    return drop_leading_assistant(kept)


def drop_leading_assistant(turns: Sequence[HistoryTurn]) -> list[HistoryTurn]:
    """The turns from the first that opens with a user message."""
    # Turn 1 of an imported transcript can open with an assistant greeting:
    # a history must never start on an assistant message.
    start = 0
    while start < len(turns) and turns[start].messages[0].role == "assistant":
        start += 1
    return list(turns[start:])


def newest_turns_part(
    request: ContextRequest, label: str, *, room: int | None = None, limit: int | None = None,
    why_dropped: str = "",
) -> tuple[Part | None, str | None]:
    """The newest whole turns as a history part, and the note on what was dropped.

    The part's reason reads "<label>: turns 4–6; dropped turns 1–3<why_dropped>".
    """
    turns = fit_newest_turns(request.history.newest_first(), room=room, limit=limit)
    dropped = dropped_note(request.history.turn_count(), turns)
    reason = f"{label}: {span([t.number for t in turns])}"
    if dropped:
        reason += f"; {dropped}{why_dropped}"
    return history_part(turns, reason), dropped


def dropped_note(total: int, kept: Sequence[HistoryTurn]) -> str | None:
    if not total:
        return None
    first_kept = kept[0].number if kept else total + 1
    if first_kept <= 1:
        return None
    return f"dropped {span(range(1, first_kept))}"
