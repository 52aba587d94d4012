"""Transcripts: the JSON Lines format of replay, eval, export and import (DESIGN §7).

A transcript is an optional header line ``{"chatmem": 1, "title": ..., "system": ...}``
(export also writes ``strategy``, ``params``, what it was recorded with:
``provider``, ``model``, ``tokenizer``, and whose it is: ``user``, the profile, and
``retention_days``, 0 for kept for good; a reader skips keys it does not know, so
keys are only ever added, optional), then message lines
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chatmem.attachments import Attachment
    from chatmem.store import MessageRecord, SessionRecord, Store

FORMAT_VERSION = 1
ROLES = ("user", "assistant", "system")
HEADER_KEYS = ("title", "system", "strategy", "params", "provider", "model", "tokenizer", "user",
               "retention_days")


@dataclass(frozen=True)
class TranscriptMessage:
    role: str
    content: str
    id: str | None = None
    ts: str | None = None
    line: int = 0
    speaker: str | None = None
    """Its `name` in the transcript, whose label `content` opens with (chatmem.speakers):
    a replayed input's recall leaves it out of what it searches."""
    files: tuple[Attachment, ...] = ()
    """The files a stored turn sent with this input (a stored session replayed): a replay
    sends them again, or its strategies are measured on other prompts than the chat's."""
    files_gone: tuple[str, ...] = ()
    """Images that turn sent whose bytes the session no longer holds: not sent again."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.id is not None:
            data["id"] = self.id
        if self.ts is not None:
            data["ts"] = self.ts
        if self.speaker is not None:
            data["name"] = self.speaker
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
    user: str | None = None
    """The user profile the session was kept under (None: the importer's)."""
    retention_days: int | None = None
    """The session's own retention (0: kept for good; None: the configured default)."""

    @property
    def messages(self) -> list[TranscriptMessage]:
        return [i for i in self.items if isinstance(i, TranscriptMessage)]

    def undated(self) -> TranscriptMessage | None:
        """The first message whose time is at the calendar's edge (year 1 or 9999: an
        exporter's zero time, a "never"), or None. Such a time is kept as written, so a
        history's export imports again, and read as undated (timestamps.dated_time): moved
        into a zone west or east of it, it would leave the calendar."""
        from chatmem.timestamps import dated_time, is_time

        return next((m for m in self.messages
                     if m.ts and is_time(m.ts) and dated_time(m.ts) is None), None)

    def dated_back(self) -> TranscriptMessage | None:
        """The first message dated before one above it (a file of chats pasted one after
        another, not in time order), or None. Recall by a named time ("last May") reads a
        conversation as told in time order, so such a file is worth a warning.

        A date alone (`2026-03-07`) names a day, not a time of it: against it only the days
        are compared (its day as written in a time's own offset), so `2026-03-07` then
        `2026-03-07T09:00:00Z` is in order, and `2026-03-08` then `2026-03-07T23:00Z` not."""
        from chatmem.timestamps import dated_time, is_date, parse_time

        latest = None  # the latest time of day above: times are compared as instants
        latest_day = latest_dated_day = None  # of any message above; of a date alone
        for message in self.messages:
            try:
                moment = parse_time(message.ts) if message.ts else None
                day = _written_day(message.ts) if message.ts else None
            except ValueError:
                continue
            if moment is None or day is None or message.ts is None or not dated_time(message.ts):
                continue  # undated (Transcript.undated): no order to keep
            if is_date(message.ts):
                if latest_day is not None and day < latest_day:
                    return message
                latest_dated_day = max(day, latest_dated_day or day)
            elif ((latest is not None and moment < latest)
                  or (latest_dated_day is not None and day < latest_dated_day)):
                return message
            else:
                latest = moment
            latest_day = max(day, latest_day or day)
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

    def probe_positions(self) -> list[tuple[int, Probe, bool]]:
        """Each probe with the number of messages before it (its position once stored)
        and whether a system_prompt line follows it before the next message: it was
        asked under the prompt that line replaces."""
        out: list[tuple[int, Probe, bool]] = []
        waiting: list[tuple[int, Probe]] = []
        seen = 0
        for item in self.items:
            if isinstance(item, TranscriptMessage):
                seen += 1
                out.extend((position, probe, False) for position, probe in waiting)
                waiting = []
            elif isinstance(item, Probe):
                waiting.append((seen, item))
            else:
                out.extend((position, probe, True) for position, probe in waiting)
                waiting = []
        return out + [(position, probe, False) for position, probe in waiting]


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
    user: str | None = None,
    retention_days: int | None = None,
    speakers: Mapping[int, str] | None = None,
) -> Transcript:
    """A transcript of stored messages, their external ids and times kept, and who of a
    group chat said each (`speakers`: message id → name), as its `name`.

    `prompts` are (first turn, system prompt): turn 1's becomes the header's
    `system`, later ones a system_prompt line before their turn. `probes` are
    stored probes, each placed after the message at its `after_position`, before or
    after the prompt change of the turn that follows as `before_prompt` says.
    """
    changes = dict(prompts)
    first_system = changes.pop(1, system) if changes else system
    pending = sorted(probes, key=lambda p: p["after_position"])
    items: list[Item] = []

    def probes_until(position: int, *, before_prompt_only: bool = False) -> None:
        nonlocal pending
        due = [p for p in pending if p["after_position"] <= position
               and (p.get("before_prompt") or not before_prompt_only)]
        pending = [p for p in pending if not any(p is d for d in due)]
        items.extend(Probe(p["question"], tuple(p["expect_ids"]), tuple(p["expect_text"]))
                     for p in due)

    # A probe sees the prompt in force where its line was, so it goes on the same side
    # of the next turn's system_prompt line as import read it.
    last_turn = 0
    for r in records:
        if r.turn != last_turn and r.turn in changes:
            probes_until(r.position - 1, before_prompt_only=True)
            items.append(SystemPrompt(changes.pop(r.turn)))
        probes_until(r.position - 1)
        last_turn = r.turn
        items.append(TranscriptMessage(r.role, r.content, r.external_id, r.created_at,
                                       speaker=(speakers or {}).get(r.id)))
    if changes:
        # A prompt set after the last turn holds for the next one.
        probes_until(10**12, before_prompt_only=True)
        items.extend(SystemPrompt(text) for _, text in sorted(changes.items()))
    probes_until(10**12)
    return Transcript(items, title, first_system, strategy, dict(params or {}), model, title,
                      provider, tokenizer, user=user, retention_days=retention_days)


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
                        prompts=prompts, probes=probes, user=session.user,
                        retention_days=session.retention_days,
                        speakers=store.history.speakers(
                            session.id, [m.id for m in messages if m.role == "user"]))


def transcript_masked(transcript: Transcript, mask: Callable[[str], str]) -> Transcript:
    """`transcript` with `mask` applied to every text it sends or stores: each message, each
    probe's question and expected texts, each system prompt and its header's (the user's own
    key pasted into a chat elsewhere: an eval replays and asks it, an import stores it)."""
    def item(one: Item) -> Item:
        if isinstance(one, TranscriptMessage):
            return replace(one, content=mask(one.content))
        if isinstance(one, Probe):
            return replace(one, question=mask(one.question),
                           expect_text=tuple(mask(text) for text in one.expect_text))
        return replace(one, system=None if one.system is None else mask(one.system))

    def text(value: str | None) -> str | None:
        return None if value is None else mask(value)

    # Its title names the session, its user the profile: stored, listed and exported too.
    return replace(transcript, items=[item(one) for one in transcript.items],
                   system=text(transcript.system), title=text(transcript.title),
                   user=text(transcript.user))


def message_dicts(messages: Sequence[TranscriptMessage]) -> list[dict[str, Any]]:
    """Messages as the store's import_messages takes them (a group chat's speaker kept)."""
    return [{**m.to_json(), "speaker": m.speaker} if m.speaker else m.to_json()
            for m in messages]


def _written_day(ts: str) -> date:
    """The day `ts` names as written (a time's in its own offset, as its writer said it)."""
    return datetime.fromisoformat(ts).date()
