"""Reading transcripts: JSON Lines, an OpenAI-style {"messages": [...]} object or a plain
JSON list of messages; every error names the file and the line."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from chatmem.errors import TranscriptError
from chatmem.text import profile_name, valid_text
from chatmem.text_files import NotUtf8, Oversized, read_stream_within, read_within, utf8_text
from chatmem.timestamps import LONGEST_DAYS
from chatmem.transcripts.foreign import READ, foreign_export
from chatmem.transcripts.format import (
    FORMAT_VERSION,
    HEADER_KEYS,
    Transcript,
    TranscriptMessage,
)
from chatmem.transcripts.items import MAX_MESSAGE_CHARACTERS, read_item
from chatmem.transcripts.json_positions import element_lines, top_level_value

MOST_TRANSCRIPT_BYTES = 64 * 2**20
"""A larger transcript is not read (/dev/zero grew until out of memory), as an export
archive's member is not (privacy.restore.MOST_MEMBER_BYTES is this)."""
MAX_LINE_CHARACTERS = 4 * MAX_MESSAGE_CHARACTERS
"""JSON escapes can quadruple a message; a longer line is not parsed at all."""


_LONE_CR = re.compile("\r(?!\n)")

STDIN = "standard input"
"""What names a transcript piped in (`-` for FILE) in its errors."""


def read_transcript(path: Path) -> Transcript:
    """Read a transcript file in any of the three formats."""
    try:
        data = read_within(path, MOST_TRANSCRIPT_BYTES)
    except FileNotFoundError:
        raise TranscriptError(f"{path}: no such transcript file") from None
    except OSError as e:
        raise TranscriptError(f"{path}: cannot read transcript: {e.strerror}") from None
    return transcript_from_bytes(data, str(path))


def read_piped_transcript(stream: BinaryIO) -> Transcript:
    """The transcript piped in (`-` as FILE), read no further than MOST_TRANSCRIPT_BYTES."""
    return transcript_from_bytes(read_stream_within(stream, MOST_TRANSCRIPT_BYTES), STDIN)


def transcript_from_bytes(data: bytes | Oversized, source: str) -> Transcript:
    """A transcript read whole (a file's bytes, or what was piped in), named `source`."""
    if isinstance(data, Oversized):
        raise TranscriptError(f"{source}: {data.amount()}; a transcript of at most "
                              f"{MOST_TRANSCRIPT_BYTES:,} bytes is read")
    text = utf8_text(data)
    if isinstance(text, NotUtf8):
        raise TranscriptError(text.said(source, "transcript"))
    transcript = parse_transcript(text, source)
    if not transcript.messages:
        # Imported, it would be an empty session; replayed, nothing: both look like success.
        raise TranscriptError(f"{source}: no messages in the transcript (the file is empty"
                              " or holds only a header)")
    return transcript


def parse_transcript(text: str, source: str = "<transcript>") -> Transcript:
    text = text.removeprefix("\ufeff")  # a byte-order mark, from a pipe as from a file
    if "\r" in text:
        # Lines ended by a lone CR (classic Mac OS, some exporters) were one line, "not
        # valid JSON (Extra data ...)". A raw CR can only be whitespace between JSON
        # values (inside a string JSON refuses it), so it ends a line as \n does.
        text = _LONE_CR.sub("\n", text)
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        try:
            whole = json.loads(text)
        except json.JSONDecodeError as e:
            if stripped.startswith("[") or not (_first_line_is_an_object(text)
                                                or _ran_into_the_next_record(text, e)):
                # One document (an array, or {"messages": [...]} over many lines): its parse
                # names the line; JSON Lines would blame the first line, `{"messages": [`.
                raise TranscriptError(
                    f"{source}:{e.lineno}: not valid JSON ({_json_error(e)})") from None
            whole = None  # JSON Lines: more than one object
        except (RecursionError, ValueError) as e:
            if stripped.startswith("["):
                raise TranscriptError(f"{source}: not readable JSON ({_why(e)})") from None
            whole = None  # JSON Lines: the line-by-line reading names the line
        _refuse_foreign(whole, source)
        if isinstance(whole, list) or (isinstance(whole, dict) and "messages" in whole):
            return _parse_json_document(text, whole, source)
    return _parse_jsonl(text, source)


def _refuse_foreign(data: Any, where: str) -> None:
    if (what := foreign_export(data)) is not None:
        raise TranscriptError(f"{where}: {what}, which chatmem does not read; {READ}")


def _first_line_is_an_object(text: str) -> bool:
    """Whether the first line that is not blank is a JSON object alone (JSON Lines)."""
    first = text.lstrip().split("\n", 1)[0]  # (not the whole file split into lines)
    try:
        return isinstance(json.loads(first), dict)
    except (RecursionError, ValueError):
        return False


def _ran_into_the_next_record(text: str, e: json.JSONDecodeError) -> bool:
    """Whether the document's parse failed right at the second line that is not blank, and
    that line alone is a JSON object: JSON Lines whose first line is broken (the parse read on
    into the next record), not one document, whose second line is rarely a whole object and
    never one the parse stumbles on at its start."""
    lines = text.split("\n")
    filled = [number for number, line in enumerate(lines, 1) if line.strip()]
    if len(filled) < 2 or e.lineno != filled[1]:
        return False
    second = lines[e.lineno - 1]
    if e.colno != len(second) - len(second.lstrip()) + 1:
        return False
    try:
        return isinstance(json.loads(second), dict)
    except (RecursionError, ValueError):
        return False


def _json_error(e: json.JSONDecodeError) -> str:
    """`Invalid control character at column 10`: json's message ("… at") and where."""
    return f"{e.msg} column {e.colno}" if e.msg.endswith(" at") else \
        f"{e.msg} at column {e.colno}"


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
            if first and _reads_as_markdown(source, line):
                raise TranscriptError(
                    f"{source}: a Markdown export is for reading; sessions import and replay "
                    "read .jsonl and .json exports (chatmem sessions export SESSION -o "
                    "FILE.jsonl)") from None
            raise TranscriptError(f"{where}: not valid JSON ({_json_error(e)})") from None
        except (RecursionError, ValueError) as e:
            raise TranscriptError(f"{where}: not readable JSON ({_why(e)})") from None
        if not isinstance(data, dict):
            raise TranscriptError(f"{where}: expected a JSON object")
        _refuse_foreign(data, where)
        if "messages" in data and "role" not in data:
            # OpenAI fine-tuning files hold one conversation per line; only a file that is
            # one such object is read, so this is said, not "role missing".
            raise TranscriptError(
                f"{where}: a whole {{\"messages\": [...]}} conversation on one line (OpenAI"
                " fine-tuning JSON Lines); chatmem reads one conversation per file: one"
                " message per line, or a single {\"messages\": [...]} document")
        if "chatmem" in data:
            if not first:
                raise TranscriptError(f"{where}: the chatmem header must be the first line")
            _read_header(transcript, data, where)
        else:
            transcript.items.append(read_item(data, where, number, seen_ids))
        first = False
    _take_leading_system(transcript)
    return transcript


def _reads_as_markdown(source: str, first_line: str) -> bool:
    """Whether a file that is not JSON is Markdown: named .md, or opening with a heading, as
    `sessions export -o FILE.md` writes it (piped in, only the heading tells)."""
    return (Path(source).suffix.lower() in (".md", ".markdown")
            or first_line.lstrip().startswith("# "))


def _parse_json_document(text: str, whole: list[Any] | dict[str, Any], source: str) -> Transcript:
    transcript = Transcript(source=source)
    try:
        if isinstance(whole, dict):
            messages = whole["messages"]
            if not isinstance(messages, list):
                raise TranscriptError(f"{source}: \"messages\" must be a list")
            offset = top_level_value(text, "messages")
            if "chatmem" in whole:
                # chatmem's own .json export: the JSON Lines header's keys, beside the messages.
                _read_header(transcript, whole, source)
            else:
                for key in ("title", "system"):
                    if isinstance(whole.get(key), str):
                        setattr(transcript, key, whole[key])
        else:
            messages, offset = whole, text.index("[")
        lines = element_lines(text, offset, len(messages))
    except (IndexError, ValueError, RecursionError) as e:
        # json.loads read the document already: a scan that disagrees is a bug of the scan,
        # still said in one line naming the file, never a traceback.
        raise TranscriptError(f"{source}: cannot locate the messages in the JSON document"
                              f" ({_why(e)})") from None
    seen_ids: set[str] = set()
    for element, number in zip(messages, lines, strict=True):
        where = f"{source}:{number}"
        if not isinstance(element, dict):
            raise TranscriptError(f"{where}: expected a message object")
        transcript.items.append(read_item(element, where, number, seen_ids))
    _take_leading_system(transcript)
    return transcript


def _take_leading_system(transcript: Transcript) -> None:
    """OpenAI style puts the system prompt first, as a message, in a JSON list or in JSON
    Lines alike; chatmem's own export says its prompt in the header, and a first system
    message there is a message (quoted as data), as it is after a document's own "system"."""
    first = transcript.items[0] if transcript.items else None
    if (transcript.system is None and transcript.header_at is None
            and isinstance(first, TranscriptMessage) and first.role == "system"):
        transcript.system = first.content
        transcript.items.pop(0)


def _read_header(transcript: Transcript, data: Mapping[str, Any], where: str) -> None:
    if data["chatmem"] != FORMAT_VERSION:
        raise TranscriptError(
            f"{where}: transcript format {data['chatmem']!r} is not supported (expected 1)"
        )
    transcript.header_at = where
    for key in HEADER_KEYS:
        value = data.get(key)
        if value is None:
            continue
        if key == "retention_days":
            # bool is an int to Python; `true` days is no retention anyone wrote.
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TranscriptError(f"{where}: header 'retention_days' must be a whole number"
                                      " of days, 0 or more (0: kept for good)")
            if value > LONGEST_DAYS:
                # As `sessions retention` refuses more than 1000y: a time past it is past
                # the calendar, and a bigger number overflows the store's integer.
                raise TranscriptError(f"{where}: header 'retention_days' must be at most"
                                      f" {LONGEST_DAYS} (1000 years), got {value}")
        elif not isinstance(value, dict if key == "params" else str):
            word = "an object" if key == "params" else "a string"
            raise TranscriptError(f"{where}: header {key!r} must be {word}")
        elif key == "user":
            value = _profile(str(value), where)
        setattr(transcript, key, value)


def _profile(user: str, where: str) -> str:
    if not user.strip():
        raise TranscriptError(f"{where}: header 'user' must name a profile")
    return profile_name(valid_text(user))


def _why(error: Exception) -> str:
    if isinstance(error, RecursionError):
        return "nested too deeply"
    return "a number too long" if "digits" in str(error) else str(error).split(":")[0]
