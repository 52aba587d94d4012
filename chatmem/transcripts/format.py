"""Transcripts: the JSON Lines format of replay, eval, export and import (DESIGN §7).

A transcript is an optional header line ``{"chatmem": 1, "title": ..., "system": ...}``
(export also writes ``strategy``, ``params``, and what it was recorded with:
``provider``, ``model``, ``tokenizer``), then message lines
``{"role": ..., "content": ..., "id": ..., "ts": ...}``, probe lines
``{"probe": ..., "expect_ids": [...], "expect_text": [...]}`` evaluated at their
position, and ``{"system_prompt": ...}`` lines: the system prompt from the next
turn on (a mid-session `/system`; the header's ``system`` is turn 1's). An
OpenAI-style ``{"messages": [...]}`` object and a plain JSON list of
messages are read too (chatmem.transcripts.reader, every error naming the file and
the line); chatmem.transcripts.writer writes JSON Lines, one JSON document or Markdown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chatmem.store import MessageRecord, SessionRecord, Store

FORMAT_VERSION = 1
ROLES = ("user", "assistant", "system")
HEADER_KEYS = ("title", "system", "strategy", "params", "provider", "model", "tokenizer")


@dataclass(frozen=True)
class TranscriptMessage:
    role: str
    content: str
    id: str | None = None
    ts: str | None = None
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.id is not None:
            data["id"] = self.id
        if self.ts is not None:
            data["ts"] = self.ts
        return data


@dataclass(frozen=True)
class Probe:
    """A question asked at this point of the transcript, with what a good memory keeps."""

    question: str
    expect_ids: tuple[str, ...] = ()
    expect_text: tuple[str, ...] = ()
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"probe": self.question, "expect_ids": list(self.expect_ids),
                "expect_text": list(self.expect_text)}


@dataclass(frozen=True)
class SystemPrompt:
    """The system prompt from the next turn on (None: no system prompt)."""

    system: str | None
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"system_prompt": self.system}


Item = TranscriptMessage | Probe | SystemPrompt


@dataclass
class Transcript:
    items: list[Item] = field(default_factory=list)
    title: str | None = None
    system: str | None = None
    strategy: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    source: str = "<transcript>"
    provider: str | None = None
    tokenizer: str | None = None
    header_at: str | None = None
    """Where the header was read (`file:1`): errors about its values name it."""

    @property
    def messages(self) -> list[TranscriptMessage]:
        return [i for i in self.items if isinstance(i, TranscriptMessage)]

    def dated_back(self) -> TranscriptMessage | None:
        """The first message dated before one above it (a file of chats pasted one after
        another, not in time order), or None. Recall by a named time ("last May") reads a
        conversation as told in time order, so such a file is worth a warning."""
        from chatmem.timestamps import parse_time

        latest = None
        for message in self.messages:
            try:
                moment = parse_time(message.ts) if message.ts else None
            except ValueError:
                continue
            if moment is None:
                continue
            if latest is not None and moment < latest:
                return message
            latest = moment
        return None

    def on_its_clock(self) -> list[Item]:
        """The items as they are stored or replayed: in a transcript that dates its messages,
        one without `ts` takes the time of the message before it (the first ones: of the
        first dated one), so the conversation keeps its own clock. Stamped when stored
        instead, a 2024 conversation's undated last reply would be dated today, and "last
        May" read in today's year. A transcript that dates none is stamped when stored."""
        times = [m.ts for m in self.messages]
        last = next((t for t in times if t is not None), None)
        if last is None:
            return list(self.items)
        items: list[Item] = []
        for item in self.items:
            if isinstance(item, TranscriptMessage):
                if item.ts is None:
                    item = dataclasses.replace(item, ts=last)
                last = item.ts
            items.append(item)
        return items

    @property
    def probes(self) -> list[Probe]:
        return [i for i in self.items if isinstance(i, Probe)]

    def has_replies(self) -> bool:
        return any(m.role == "assistant" for m in self.messages)

    def user_turns(self) -> int:
        return sum(1 for m in self.messages if m.role == "user")

    def system_prompts(self) -> list[tuple[int, str | None]]:
        """(first turn, system prompt) for turn 1 and every change, as the store numbers turns."""
        prompts: list[tuple[int, str | None]] = [(1, self.system)]
        turn = 0
        for item in self.items:
            if isinstance(item, SystemPrompt):
                prompts = [p for p in prompts if p[0] != turn + 1] + [(turn + 1, item.system)]
            elif isinstance(item, TranscriptMessage) and (item.role == "user" or turn == 0):
                turn += 1
        return prompts

    def probe_positions(self) -> list[tuple[int, Probe]]:
        """Each probe with the number of messages before it (its position once stored)."""
        out, seen = [], 0
        for item in self.items:
            if isinstance(item, TranscriptMessage):
                seen += 1
            elif isinstance(item, Probe):
                out.append((seen, item))
        return out


def from_records(
    title: str,
    records: Iterable[MessageRecord],
    *,
    system: str | None = None,
    strategy: str | None = None,
    params: Mapping[str, Any] | None = None,
    model: str | None = None,
    provider: str | None = None,
    tokenizer: str | None = None,
    prompts: Sequence[tuple[int, str | None]] = (),
    probes: Sequence[Mapping[str, Any]] = (),
) -> Transcript:
    """A transcript of stored messages, their external ids and times kept.

    `prompts` are (first turn, system prompt): turn 1's becomes the header's
    `system`, later ones a system_prompt line before their turn. `probes` are
    stored probes, each placed after the message at its `after_position`.
    """
    changes = dict(prompts)
    first_system = changes.pop(1, system) if changes else system
    pending = sorted(probes, key=lambda p: p["after_position"])
    items: list[Item] = []

    def probes_until(position: int) -> None:
        while pending and pending[0]["after_position"] <= position:
            p = pending.pop(0)
            items.append(Probe(p["question"], tuple(p["expect_ids"]), tuple(p["expect_text"])))

    last_turn = 0
    for r in records:
        probes_until(r.position - 1)
        if r.turn != last_turn and r.turn in changes:
            items.append(SystemPrompt(changes.pop(r.turn)))
        last_turn = r.turn
        items.append(TranscriptMessage(r.role, r.content, r.external_id, r.created_at))
    probes_until(10**12)
    # A prompt set after the last turn holds for the next one.
    items.extend(SystemPrompt(text) for _, text in sorted(changes.items()))
    return Transcript(items, title, first_system, strategy, dict(params or {}), model, title,
                      provider, tokenizer)


def stored_transcript(store: Store, session: SessionRecord,
                      last_turn: int | None = None) -> Transcript:
    """A stored session (to `last_turn`) as a transcript: strategy, recording, prompts, probes."""
    messages = store.history.messages(session.id, 1, last_turn)
    prompts = store.sessions.system_prompts(session.id)
    probes = store.sessions.probes(session.id)
    if last_turn is not None:
        prompts = [p for p in prompts if p[0] <= last_turn + 1]
        end = max((m.position for m in messages), default=0)
        probes = [p for p in probes if p["after_position"] <= end]
    return from_records(session.name, messages, system=session.system,
                        strategy=session.strategy, params=session.params, model=session.model,
                        provider=session.provider, tokenizer=session.tokenizer,
                        prompts=prompts, probes=probes)


def message_dicts(messages: Sequence[TranscriptMessage]) -> list[dict[str, Any]]:
    """Messages as the store's import_messages takes them."""
    return [m.to_json() for m in messages]
