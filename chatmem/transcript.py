"""Transcripts: the JSON Lines format of replay, eval, export and import (DESIGN §7).

A transcript is an optional header line ``{"chatmem": 1, "title": ..., "system": ...}``
(export also writes ``strategy``, ``params``, and what it was recorded with:
``provider``, ``model``, ``tokenizer``), then message lines
``{"role": ..., "content": ..., "id": ..., "ts": ...}``, probe lines
``{"probe": ..., "expect_ids": [...], "expect_text": [...]}`` evaluated at their
position, and ``{"system_prompt": ...}`` lines: the system prompt from the next
turn on (a mid-session `/system`; the header's ``system`` is turn 1's). An
OpenAI-style ``{"messages": [...]}`` object and a plain JSON list of
messages are read too. Every error names the file and the line.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chatmem.errors import TranscriptError, UsageError
from chatmem.text import valid_text

if TYPE_CHECKING:
    from chatmem.store import MessageRecord

FORMAT_VERSION = 1
ROLES = ("user", "assistant", "system")
HEADER_KEYS = ("title", "system", "strategy", "params", "provider", "model", "tokenizer")

MAX_MESSAGE_CHARACTERS = 1_000_000
"""A longer message (a pasted file) would make every later request huge: refused at import."""
MAX_LINE_CHARACTERS = 4 * MAX_MESSAGE_CHARACTERS
"""JSON escapes can quadruple a message; a longer line is not parsed at all."""


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

    @property
    def messages(self) -> list[TranscriptMessage]:
        return [i for i in self.items if isinstance(i, TranscriptMessage)]

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


# -- reading ------------------------------------------------------------------


def read_transcript(path: Path) -> Transcript:
    """Read a transcript file in any of the three formats."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TranscriptError(f"{path}: no such transcript file") from None
    except UnicodeDecodeError:
        raise TranscriptError(f"{path}: not UTF-8 text") from None
    except OSError as e:
        raise TranscriptError(f"{path}: cannot read transcript: {e.strerror}") from None
    return parse_transcript(text, str(path))


def parse_transcript(text: str, source: str = "<transcript>") -> Transcript:
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        try:
            whole = json.loads(text)
        except json.JSONDecodeError as e:
            if stripped.startswith("["):
                raise TranscriptError(f"{source}:{e.lineno}: not valid JSON ({e.msg})") from None
            whole = None  # JSON Lines: more than one object
        except (RecursionError, ValueError) as e:
            if stripped.startswith("["):
                raise TranscriptError(f"{source}: not readable JSON ({_why(e)})") from None
            whole = None  # JSON Lines: the line-by-line reading names the line
        if isinstance(whole, list) or (isinstance(whole, dict) and "messages" in whole):
            return _parse_json_document(text, whole, source)
    return _parse_jsonl(text, source)


def _parse_jsonl(text: str, source: str) -> Transcript:
    transcript = Transcript(source=source)
    seen_ids: set[str] = set()
    first = True
    # Only \n ends a line: splitlines() would also split inside content at U+0085 or U+2028.
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        if len(line) > MAX_LINE_CHARACTERS:
            raise TranscriptError(f"{where}: line of {len(line):,} characters; at most"
                                  f" {MAX_LINE_CHARACTERS:,} are read")
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            raise TranscriptError(f"{where}: not valid JSON ({e.msg})") from None
        except (RecursionError, ValueError) as e:
            raise TranscriptError(f"{where}: not readable JSON ({_why(e)})") from None
        if not isinstance(data, dict):
            raise TranscriptError(f"{where}: expected a JSON object")
        if "chatmem" in data:
            if not first:
                raise TranscriptError(f"{where}: the chatmem header must be the first line")
            _read_header(transcript, data, where)
        else:
            transcript.items.append(_read_item(data, where, number, seen_ids))
        first = False
    return transcript


def _parse_json_document(text: str, whole: list[Any] | dict[str, Any], source: str) -> Transcript:
    transcript = Transcript(source=source)
    if isinstance(whole, dict):
        messages = whole["messages"]
        if not isinstance(messages, list):
            raise TranscriptError(f"{source}: \"messages\" must be a list")
        start = re.search(r'"messages"\s*:\s*\[', text)
        offset = start.end() - 1 if start else 0
        if "chatmem" in whole:
            # chatmem's own .json export: the JSON Lines header's keys, beside the messages.
            _read_header(transcript, whole, source)
        else:
            for key in ("title", "system"):
                if isinstance(whole.get(key), str):
                    setattr(transcript, key, whole[key])
    else:
        messages, offset = whole, text.index("[")
    lines = _element_lines(text, offset, len(messages))
    seen_ids: set[str] = set()
    for element, number in zip(messages, lines, strict=True):
        where = f"{source}:{number}"
        if not isinstance(element, dict):
            raise TranscriptError(f"{where}: expected a message object")
        transcript.items.append(_read_item(element, where, number, seen_ids))
    # OpenAI style puts the system prompt first, as a message.
    first = transcript.items[0] if transcript.items else None
    if (transcript.system is None and isinstance(first, TranscriptMessage)
            and first.role == "system"):
        transcript.system = first.content
        transcript.items.pop(0)
    return transcript


def _element_lines(text: str, array_start: int, count: int) -> list[int]:
    """The line each element of the JSON array at `array_start` begins on."""
    decoder = json.JSONDecoder()
    lines = []
    index = array_start + 1
    for _ in range(count):
        while text[index] in " \t\r\n,":
            index += 1
        lines.append(text.count("\n", 0, index) + 1)
        _, index = decoder.raw_decode(text, index)
    return lines


def _read_header(transcript: Transcript, data: Mapping[str, Any], where: str) -> None:
    if data["chatmem"] != FORMAT_VERSION:
        raise TranscriptError(
            f"{where}: transcript format {data['chatmem']!r} is not supported (expected 1)"
        )
    for key in HEADER_KEYS:
        value = data.get(key)
        if value is None:
            continue
        wanted = dict if key == "params" else str
        if not isinstance(value, wanted):
            word = "an object" if wanted is dict else "a string"
            raise TranscriptError(f"{where}: header {key!r} must be {word}")
        setattr(transcript, key, value)


def _read_item(data: Mapping[str, Any], where: str, number: int, seen_ids: set[str]) -> Item:
    """A probe or a message; `seen_ids` collects message ids, which probes may name."""
    if "probe" in data:
        return _read_probe(data, where, number, seen_ids)
    if "system_prompt" in data and "role" not in data:
        value = data["system_prompt"]
        if value is not None and not isinstance(value, str):
            raise TranscriptError(f"{where}: system_prompt must be a string or null")
        return SystemPrompt(value, number)
    message = _read_message(data, where, number)
    _remember_id(message, seen_ids, where)
    return message


def _read_message(data: Mapping[str, Any], where: str, number: int) -> TranscriptMessage:
    role = data.get("role")
    if role not in ROLES:
        shown = "missing" if role is None else repr(role)
        raise TranscriptError(f"{where}: role must be user, assistant or system (got {shown})")
    if "content" not in data or data["content"] is None:
        raise TranscriptError(f"{where}: message has no content")
    content = _content_text(data["content"], where)
    message_id = data.get("id")
    if message_id is not None and not isinstance(message_id, str | int):
        raise TranscriptError(f"{where}: id must be a string")
    ts = data.get("ts")
    if ts is not None and not isinstance(ts, str):
        raise TranscriptError(f"{where}: ts must be an ISO-8601 string")
    return TranscriptMessage(role, content,
                             None if message_id is None else valid_text(str(message_id)),
                             None if ts is None else valid_text(ts), number)


def _why(error: Exception) -> str:
    if isinstance(error, RecursionError):
        return "nested too deeply"
    return "a number too long" if "digits" in str(error) else str(error).split(":")[0]


def _content_text(content: Any, where: str) -> str:
    text = _content_parts(content, where)
    if len(text) > MAX_MESSAGE_CHARACTERS:
        raise TranscriptError(f"{where}: a message of {len(text):,} characters; at most"
                              f" {MAX_MESSAGE_CHARACTERS:,} are imported")
    # "\ud800" is valid JSON but no text: SQLite and terminals cannot take it.
    return valid_text(text)


def _content_parts(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    # OpenAI content parts: keep the text ones, in order.
    if isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        for p in content
    ):
        return "".join(p["text"] for p in content)
    raise TranscriptError(f"{where}: content must be a string")


def _remember_id(message: TranscriptMessage, seen: set[str], where: str) -> None:
    if message.id is None:
        return
    if message.id in seen:
        raise TranscriptError(f"{where}: id {message.id!r} is used twice")
    seen.add(message.id)


def _read_probe(data: Mapping[str, Any], where: str, number: int, seen: set[str]) -> Probe:
    question = data["probe"]
    if not isinstance(question, str) or not question.strip():
        raise TranscriptError(f"{where}: probe must be a non-empty question")
    lists: dict[str, tuple[str, ...]] = {}
    for key in ("expect_ids", "expect_text"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str | int) for v in value):
            raise TranscriptError(f"{where}: {key} must be a list of strings")
        lists[key] = tuple(str(v) for v in value)
    for expected in lists["expect_ids"]:
        if expected not in seen:
            raise TranscriptError(
                f"{where}: expect_ids {expected!r} names no message before this probe"
            )
    if not lists["expect_ids"] and not lists["expect_text"]:
        raise TranscriptError(f"{where}: probe needs expect_ids or expect_text")
    return Probe(question, lists["expect_ids"], lists["expect_text"], number)


# -- writing ------------------------------------------------------------------


def _header(transcript: Transcript) -> dict[str, Any]:
    header: dict[str, Any] = {"chatmem": FORMAT_VERSION}
    for key in HEADER_KEYS:
        value = getattr(transcript, key)
        if value not in (None, {}):
            header[key] = value
    return header


def to_jsonl(transcript: Transcript) -> str:
    lines = [_header(transcript), *(item.to_json() for item in transcript.items)]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def to_json_document(transcript: Transcript) -> str:
    """One JSON object, the header's keys beside "messages" (OpenAI style); it imports back."""
    document = {**_header(transcript), "messages": [m.to_json() for m in transcript.messages]}
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def to_markdown(transcript: Transcript) -> str:
    """A readable export (not read back): one section per message."""
    out = [f"# {transcript.title or 'chatmem transcript'}\n"]
    if transcript.system:
        out.append(f"**system prompt:** {transcript.system}\n")
    for item in transcript.items:
        if isinstance(item, Probe):
            out.append(f"> **probe:** {item.question}\n")
            continue
        if isinstance(item, SystemPrompt):
            out.append(f"**system prompt from here on:** {item.system or '(none)'}\n")
            continue
        stamp = f" · {item.ts}" if item.ts else ""
        ident = f" · `{item.id}`" if item.id else ""
        out.append(f"### {item.role}{ident}{stamp}\n\n{item.content}\n")
    return "\n".join(out)


EXPORT_FORMATS = {"jsonl": to_jsonl, "json": to_json_document, "markdown": to_markdown}
EXTENSIONS = {".jsonl": "jsonl", ".json": "json", ".md": "markdown", ".markdown": "markdown"}


def export_format(path: Path, chosen: str | None = None) -> str:
    """The format a file's extension names; `chosen` (--format) must agree with it."""
    named = EXTENSIONS.get(path.suffix.lower())
    if chosen is not None:
        if chosen not in EXPORT_FORMATS:
            raise UsageError(f"--format must be one of {', '.join(EXPORT_FORMATS)}, "
                             f"got {chosen!r}")
        if named is not None and named != chosen:
            raise UsageError(f"{path} names the {named} format, not {chosen}; "
                             f"drop --format or change the extension")
        return chosen
    if named is None:
        raise UsageError(f"{path}: the extension does not name a format; "
                         "use .jsonl (imports back), .json or .md")
    return named


def write_transcript(transcript: Transcript, path: Path, fmt: str, *, force: bool = False) -> None:
    """Write `transcript` to a new file; an existing one is replaced only with `force`."""
    text = EXPORT_FORMATS[fmt](transcript)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    try:
        # 0600: an export holds the whole conversation.
        with os.fdopen(os.open(path, flags, 0o600), "w", encoding="utf-8") as out:
            out.write(text)
    except FileExistsError:
        raise UsageError(f"{path} already exists; add --force to overwrite it") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot write: {e.strerror}") from None


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


def message_dicts(messages: Sequence[TranscriptMessage]) -> list[dict[str, Any]]:
    """Messages as the store's import_messages takes them."""
    return [m.to_json() for m in messages]
