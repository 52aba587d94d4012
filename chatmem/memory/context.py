"""What one request sends: messages, grouped into parts that each say why they are there.

A `Context` is an ordered list of `Part`s (in PART_ORDER), each with the messages it
contributes, their token count and why it is sent (a value, see chatmem.memory.reasons);
it is stored with every turn (to_json/from_json), which is what `inspect` shows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from functools import cached_property
from typing import Any, Literal

from chatmem.context_warnings import ContextWarning, warning_from_json, warning_json
from chatmem.images import ImageData, ImageRef
from chatmem.memory.reason_storage import (
    dropped_from_json,
    dropped_json,
    reason_from_json,
    reason_json,
)
from chatmem.memory.reasons import DroppedNote, NewInput, PartReason
from chatmem.tokens import REPLY_PRIMING, TokenCounter

PartKind = Literal["system", "summary", "facts", "recalled", "history", "files", "input"]
PART_ORDER: tuple[PartKind, ...] = ("system", "summary", "facts", "recalled", "history", "files",
                                    "input")
FIXED_KINDS: tuple[PartKind, ...] = ("system", "files", "input")
"""Parts every context sends whatever the strategy: no memory can make room by dropping them."""
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
"""In English whatever the conversation's language or the machine's locale: ISO dates and
these names read one way everywhere."""


def said_line(day: date) -> str:
    """The line sent before a recalled message said on an earlier `day`: `[2026-05-04 Monday]`,
    so "next Friday" in what follows can be read as of that day."""
    return f"[{day.isoformat()} {WEEKDAYS[day.weekday()]}]"


@dataclass(frozen=True)
class Message:
    """One message. `id` is the stored id; None for text not (yet) stored."""

    role: str
    content: str
    tokens: int
    id: int | None = None
    turn: int | None = None
    image: ImageRef | None = None
    """An image sent with the text (an attachment), kept by its hash; its tokens are in
    `tokens`, counted by the endpoint's rule."""
    image_url: str | None = field(default=None, compare=False, repr=False)
    """The image's bytes as a data: URL, while it is being sent; never stored."""
    said_on: date | None = None
    """For a recalled message that opens a run said on an earlier day: that day, sent as
    `said_line` above the text (`sent`), its tokens in `tokens`; `content` stays the stored
    text."""

    @classmethod
    def counted(cls, role: str, content: str, counter: TokenCounter) -> Message:
        """A message not (yet) stored, with its tokens counted by `counter`."""
        return cls(role, content, counter.count_message(role, content))

    @property
    def sent(self) -> str:
        """The text as the model gets it: the day it was said above a recalled one's."""
        if self.said_on is None:
            return self.content
        return f"{said_line(self.said_on)}\n{self.content}"

    def as_chat(self) -> dict[str, Any]:
        if self.image_url is None:
            # `sent` inline for the undated: no call a message (some seventy a turn).
            return {"role": self.role,
                    "content": self.content if self.said_on is None else self.sent}
        return {"role": self.role, "content": [
            {"type": "text", "text": self.sent},
            {"type": "image_url", "image_url": {"url": self.image_url}}]}


@dataclass(frozen=True)
class SaidDays:
    """When recall's messages were said: `times` by message id (those whose time reads)
    and `today`, the day the input is said (`ContextRequest.said_at`). A combination works the
    days' lines out again with them once merging and its shared budget changed what is
    recalled (chatmem.memory.recall_days), the times of what other members recalled added."""

    today: date
    times: Mapping[int, datetime]


@dataclass(frozen=True)
class Part:
    kind: PartKind
    messages: tuple[Message, ...]
    reason: PartReason
    scores: tuple[tuple[int, float], ...] = field(default=(), compare=False)
    """For recalled parts: (turn, relevance score) of each turn, so a shared budget
    can let the least relevant go first. Not recorded with the context."""
    fact_ids: tuple[int, ...] = field(default=(), compare=False)
    """For a facts part: the ids of the stored facts it sends (pinned details have none)."""
    said: SaidDays | None = field(default=None, compare=False, repr=False)
    """For a recalled part whose lines name the days its messages were said (dates on):
    when each was said. Not recorded with the context."""

    @cached_property
    def tokens(self) -> int:
        # Once: a turn asks a context's total six times (estimate, budget checks, record),
        # and its messages (a frozen tuple of frozen messages) never change.
        return sum([m.tokens for m in self.messages])


@dataclass(frozen=True)
class Context:
    """What one request sends: parts in PART_ORDER, plus what was left out."""

    parts: tuple[Part, ...]
    budget: int | None = None
    dropped: tuple[DroppedNote, ...] = ()
    """What was left out, in the order the strategy noted it (empty when nothing was)."""
    warnings: tuple[ContextWarning, ...] = ()
    priming: int = REPLY_PRIMING
    """The counter's tokens beyond the messages (see TokenCounter.priming)."""
    recall: tuple[dict[str, Any], ...] = ()
    """How recall ranked the candidates it kept and the best it dropped: id, turn, role,
    bm25, words, dense, fused, tokens, kept, why (see chatmem.memory.ranking)."""

    @cached_property
    def tokens(self) -> int:
        """Total counted tokens, chat-format overhead and reply priming included (worked
        out once, as `Part.tokens`)."""
        return self.priming + sum(p.tokens for p in self.parts)

    @property
    def over_budget(self) -> bool:
        return self.budget is not None and self.tokens > self.budget

    @property
    def fixed(self) -> dict[PartKind, int]:
        """Tokens of the parts no memory can make room by dropping (system, files, input)."""
        return {p.kind: p.tokens for p in self.parts if p.kind in FIXED_KINDS}

    @property
    def fixed_tokens(self) -> int:
        """What the context costs before any memory: the fixed parts and the chat format."""
        return sum(self.fixed.values()) + self.priming

    @property
    def fact_ids(self) -> tuple[int, ...]:
        """The ids of the stored facts this context sends."""
        return tuple(i for p in self.parts for i in p.fact_ids)

    @property
    def input_tokens(self) -> int | None:
        """The new input's count, as counted to build this context."""
        sent = self.part("input")
        return sent.messages[0].tokens if sent is not None and sent.messages else None

    def messages(self) -> list[dict[str, Any]]:
        return [m.as_chat() for p in self.parts for m in p.messages]

    def with_images(self, image_bytes: Callable[[str], bytes | None]) -> Context:
        """This context with each image's bytes (`image_bytes` by sha256) as the data: URL it
        was sent as, so `messages()` is the request again: a recorded context keeps its images
        by hash only. An image whose bytes are gone stays out (its text says one went)."""
        def sent(m: Message) -> Message:
            data = image_bytes(m.image.digest) if m.image is not None else None
            if m.image is None or data is None:
                return m
            return replace(m, image_url=ImageData(m.image.mime, m.image.width, m.image.height,
                                                  data).data_url)

        if not any(m.image for p in self.parts for m in p.messages):
            return self
        return replace(self, parts=tuple(replace(p, messages=tuple(sent(m) for m in p.messages))
                                         for p in self.parts))

    def part(self, kind: PartKind) -> Part | None:
        return next((p for p in self.parts if p.kind == kind), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "budget": self.budget,
            "dropped": dropped_json(self.dropped),
            "warnings": [warning_json(w) for w in self.warnings],
            "priming": self.priming,
            "parts": [
                {
                    "kind": p.kind,
                    "reason": reason_json(p.reason),
                    "tokens": p.tokens,
                    "messages": [
                        {"role": m.role, "content": m.content, "tokens": m.tokens, "id": m.id,
                         "turn": m.turn, **({"image": m.image.to_json()} if m.image else {}),
                         **({"said_on": m.said_on.isoformat()} if m.said_on else {})}
                        for m in p.messages
                    ],
                    **({"fact_ids": list(p.fact_ids)} if p.fact_ids else {}),
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
                reason=reason_from_json(p["reason"]),
                messages=tuple(
                    Message(m["role"], m["content"], m["tokens"], m.get("id"), m.get("turn"),
                            ImageRef.from_json(m["image"]) if m.get("image") else None,
                            said_on=_said_on(m.get("said_on")))
                    for m in p["messages"]
                ),
                fact_ids=tuple(p.get("fact_ids", ())),
            )
            for p in data.get("parts", ())  # a turn recorded with no context: `{}`
        )
        warnings = tuple(warning_from_json(w) for w in data.get("warnings", ()))
        return cls(parts, data.get("budget"), dropped_from_json(data.get("dropped")),
                   warnings,
                   data.get("priming", REPLY_PRIMING), tuple(data.get("recall", ())))


def _said_on(value: Any) -> date | None:
    """A stored `said_on` back as a day; None when absent (or not a day this version reads)."""
    if not isinstance(value, str):
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def with_reply_begun(context: Context, reply: Message) -> Context:
    """`context` with `reply`, the assistant's cut short, sent after the input for the model
    to go on with (OpenAI-compatible servers continue a last assistant message: llama.cpp,
    vLLM, Ollama), in the input part, so that what is recorded and inspected is what was
    sent. The build counted it (ContextRequest.reply_begun), so it is within the budget."""
    sent = context.parts[-1]
    return replace(context, parts=(*context.parts[:-1], replace(
        sent, messages=(*sent.messages, reply), reason=NewInput(continued=True))))
