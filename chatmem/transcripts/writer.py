"""Writing transcripts: JSON Lines (it imports back), one JSON document, or Markdown."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import timedelta, tzinfo
from pathlib import Path
from typing import Any

from chatmem.errors import UsageError
from chatmem.privacy.files import open_private
from chatmem.text import escaped_controls, json_safe
from chatmem.timestamps import dated_time, is_date
from chatmem.transcripts.format import FORMAT_VERSION, HEADER_KEYS, Probe, SystemPrompt, Transcript


def _header(transcript: Transcript) -> dict[str, Any]:
    header: dict[str, Any] = {"chatmem": FORMAT_VERSION}
    for key in HEADER_KEYS:
        value = getattr(transcript, key)
        if value not in (None, {}):
            header[key] = value
    return header


def to_jsonl(transcript: Transcript) -> str:
    lines = [_header(transcript), *(item.to_json() for item in transcript.items)]
    return "".join(json_safe(json.dumps(line, ensure_ascii=False)) + "\n" for line in lines)


def to_json_document(transcript: Transcript) -> str:
    """One JSON object, the header's keys beside "messages" (OpenAI style); it imports back
    whole: probes and system prompt changes go in "messages" as they go in JSON Lines."""
    document = {**_header(transcript), "messages": [item.to_json() for item in transcript.items]}
    return json_safe(json.dumps(document, ensure_ascii=False, indent=2)) + "\n"


def to_markdown(transcript: Transcript, zone: tzinfo | None = None) -> str:
    """A readable export (not read back): one section per message, its time in `zone` (the
    timezone setting's; None: the system's) as the tables show one, with its UTC offset: a
    document is read where the zone is not known. Control characters are written as
    `\\u001b`: a file people read (or `cat`) must not drive a terminal."""
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
        stamp = f" · {_local_time(item.ts, zone)}" if item.ts else ""
        ident = f" · `{item.id}`" if item.id else ""
        content = _reply(item.content) if item.role == "assistant" else _as_text(item.content)
        out.append(f"### {item.role}{ident}{stamp}\n\n{content}\n")
    return escaped_controls("\n".join(out))


_HEADING = re.compile(r"^( {0,3})(#{1,6})(?=[ \t]|$)")
_OPENING = re.compile(r"^ {0,3}(?:(`{3,})[^`]*|(~{3,}).*)$")
"""A line that opens a code block, as CommonMark reads one: three or more backticks whose
info string holds no backtick (```` ```x` ```` opens nothing), or three or more tildes."""


def _as_text(content: str) -> str:
    """`content` with each line Markdown reads as a heading, outside a code block, escaped
    (`\\### user`): a message's own `### user · …` line read as one more turn. A code block
    it leaves open (a reply cut at its cap mid-code) is closed at its end: every heading after
    it, the next messages' own, was read as code."""
    lines: list[str] = []
    fence = ""  # the open block's fence, as it was opened
    for line in content.split("\n"):
        if fence:
            # Closed by the same character, as many or more, and nothing after but spaces.
            stripped = line.strip(" ")
            if (len(line) - len(line.lstrip(" ")) <= 3 and len(stripped) >= len(fence)
                    and stripped == fence[0] * len(stripped)):
                fence = ""
        elif m := _OPENING.match(line):
            fence = m.group(1) or m.group(2)
        else:
            line = _HEADING.sub(r"\1\\\2", line)
        lines.append(line)
    if fence:
        lines.append(fence)
    return "\n".join(lines)


def _reply(content: str) -> str:
    """A reply, the reasoning it opens with quoted apart: its tags are HTML to a Markdown
    viewer, which drops them and runs the reasoning into the answer."""
    from chatmem.reasoning import reasoning_and_reply

    thought, said = reasoning_and_reply(content)
    if not thought:
        return _as_text(content)
    quoted = "\n".join(f"> {line}".rstrip() for line in _as_text(thought).split("\n"))
    return f"> *reasoning:*\n>\n{quoted}\n\n{_as_text(said)}"


def _local_time(ts: str, zone: tzinfo | None) -> str:
    """`2026-05-04 14:05 +05:45`; a time without a zone (an imported transcript's) is UTC,
    as chatmem reads it everywhere else, so it is placed as the times beside it are. A date
    alone (that day in every zone), and a time not ISO 8601 or at the calendar's edge (year
    1 or 9999, where no zone can move it), as the transcript gave it."""
    moment = None if is_date(ts) else dated_time(ts)
    if moment is None:
        return ts
    moment = moment.astimezone(zone)
    offset = int((moment.utcoffset() or timedelta()).total_seconds()) // 60
    sign = "-" if offset < 0 else "+"
    hours, minutes = divmod(abs(offset), 60)
    return f"{moment:%Y-%m-%d %H:%M} {sign}{hours:02d}:{minutes:02d}"


EXPORT_FORMATS: dict[str, Callable[[Transcript], str]] = {
    "jsonl": to_jsonl, "json": to_json_document, "markdown": to_markdown}


def transcript_text(transcript: Transcript, fmt: str, zone: tzinfo | None = None) -> str:
    """`transcript` in format `fmt`; `zone` places the Markdown's times (JSON keeps UTC)."""
    if fmt == "markdown":
        return to_markdown(transcript, zone)
    return EXPORT_FORMATS[fmt](transcript)
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


def write_transcript(transcript: Transcript, path: Path, fmt: str, *, force: bool = False,
                     zone: tzinfo | None = None) -> None:
    """Write `transcript` to a new file; an existing one is replaced only with `force`."""
    text = transcript_text(transcript, fmt, zone)
    try:
        with open_private(path, replace=force) as out:
            out.write(text)
    except FileExistsError:
        raise UsageError(f"{path} already exists; add --force to overwrite it") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot write: {e.strerror}") from None
