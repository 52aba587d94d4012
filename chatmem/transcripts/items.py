"""One transcript line read as what it holds (a message, a system prompt or a probe), each
refusal naming where it stands."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from chatmem import expected_text
from chatmem.errors import TranscriptError
from chatmem.speakers import speaker_of, with_speaker
from chatmem.text import valid_text
from chatmem.timestamps import is_time
from chatmem.transcripts.format import ROLES, Item, Probe, SystemPrompt, TranscriptMessage

MAX_MESSAGE_CHARACTERS = 1_000_000
"""A longer message (a pasted file) would make every later request huge: refused at import."""
PROBE_KEYS = ("probe", "expect_ids", "expect_text")
MESSAGE_KEYS = ("role", "content", "system_prompt")


def read_item(data: Mapping[str, Any], where: str, number: int, seen_ids: set[str]) -> Item:
    """A probe or a message; `seen_ids` collects message ids, which probes may name."""
    if "probe" in data:
        return _read_probe(data, where, number, seen_ids)
    if "role" not in data and any(key in data for key in PROBE_KEYS):
        # Read as a message, it was blamed for its missing role.
        raise TranscriptError(f"{where}: a probe line needs \"probe\", the question to ask")
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
    if role in ("tool", "function") or data.get("tool_calls"):
        # As serve refuses them: a call and its result are no exchange with the user.
        raise TranscriptError(f"{where}: tool calls are not taken as chatmem turns; leave"
                              " the tool messages and tool_calls out to import the rest")
    if role == "developer":
        role = "system"  # OpenAI's newer name for it, as serve takes it
    if role not in ROLES:
        shown = "missing" if role is None else repr(role)
        raise TranscriptError(f"{where}: role must be user, assistant, system or developer"
                              f" (got {shown})")
    if "content" not in data or data["content"] is None:
        raise TranscriptError(f"{where}: message has no content")
    speaker = speaker_of(data.get("name"), f"{where}: name", TranscriptError, role)
    content = with_speaker(role, _content_text(data["content"], where), speaker)
    message_id = data.get("id")
    if message_id is not None and not isinstance(message_id, str | int):
        raise TranscriptError(f"{where}: id must be a string")
    ts = data.get("ts")
    if ts is not None and not isinstance(ts, str):
        raise TranscriptError(f"{where}: ts must be an ISO-8601 string")
    if ts is not None and not is_time(ts):
        raise TranscriptError(f"{where}: ts {valid_text(ts)!r} is not an ISO-8601 date and time"
                              " (e.g. 2024-05-01T09:30:00Z)")
    return TranscriptMessage(role, content,
                             None if message_id is None else valid_text(str(message_id)),
                             None if ts is None else valid_text(ts), number,
                             speaker if role == "user" else None)


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
    _check_probe_keys(data, where)
    question = data["probe"]
    if not isinstance(question, str) or not question.strip():
        raise TranscriptError(f"{where}: probe must be a non-empty question")
    lists: dict[str, tuple[str, ...]] = {}
    for key in ("expect_ids", "expect_text"):
        value = data.get(key, [])
        # bool is an int to Python: `true` is no id or text anyone expects.
        if not isinstance(value, list) or not all(
                isinstance(v, str | int) and not isinstance(v, bool) for v in value):
            raise TranscriptError(f"{where}: {key} must be a list of strings")
        lists[key] = tuple(str(v) for v in value)
        _check_expected(key, lists[key], where)
    for expected in lists["expect_ids"]:
        if expected not in seen:
            raise TranscriptError(
                f"{where}: expect_ids {expected!r} names no message before this probe"
            )
    if not lists["expect_ids"] and not lists["expect_text"]:
        raise TranscriptError(f"{where}: probe needs expect_ids or expect_text")
    return Probe(question, lists["expect_ids"], lists["expect_text"], number)


def _check_probe_keys(data: Mapping[str, Any], where: str) -> None:
    """Refuse a key a probe would silently go without: a misspelled expect_text
    (`expected_text`) left the probe scoring nothing of it, and a message's keys on a probe
    line lost the message. Other keys are the writer's own labels, kept out of scoring
    (the LoCoMo set's `category`, benchmarks/recall_data.py's `kind` and `lang`)."""
    for key in data:
        if key in PROBE_KEYS:
            continue
        if key in MESSAGE_KEYS:
            raise TranscriptError(f"{where}: a line is a probe or a message, not both (it has"
                                  f" 'probe' and {key!r}); give the probe a line of its own")
        near = difflib.get_close_matches(str(key).casefold(), PROBE_KEYS, n=1, cutoff=0.75)
        if near or str(key).casefold().startswith(("expect", "probe")):
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise TranscriptError(f"{where}: unknown probe key {valid_text(key)!r} (a probe"
                                  f" takes probe, expect_ids and expect_text){hint}")


def _check_expected(key: str, values: tuple[str, ...], where: str) -> None:
    """Refuse what scoring would count wrongly: expected text is compared as
    expected_text.compared makes it, so blanks and repeats are judged in that form too."""
    as_scored = (lambda v: expected_text.compared(v).strip()) if key == "expect_text" else str.strip
    forms = [as_scored(v) for v in values]
    blank = next((v for v, form in zip(values, forms, strict=True) if not form), None)
    if blank is not None:
        # "" is in every context: it would count as recalled with nothing remembered.
        if blank.strip():
            # !a: all of it is invisible, so it is shown as escapes ('\u0301').
            raise TranscriptError(f"{where}: {key} holds {blank!a}, nothing once folded"
                                  " (zero-width characters and accents are not compared)")
        raise TranscriptError(f"{where}: {key} holds an empty string {blank!r}")
    # Each looked up among those before it by set and dict: compared with a slice of them, a
    # probe of 40,000 expected texts (a 1 MB line) took a minute, growing with its square.
    named: set[str] = set()
    first_of: dict[str, str] = {}
    for value, form in zip(values, forms, strict=True):
        if value in named:
            raise TranscriptError(f"{where}: {key} names {value!r} twice (it would count twice)")
        if form in first_of:
            raise TranscriptError(f"{where}: {key} names {first_of[form]!r} and {value!r}, the "
                                  "same once case, width and accents are folded (it would "
                                  "count twice)")
        named.add(value)
        first_of[form] = value
