"""Rendered prompts as stored: the template's text, and references to stored messages.

A local model's turn keeps the exact text the model read: its chat template
applied to the messages. Most of that text is history the file already holds,
so storing it whole would make a session grow with the square of its turns,
as contexts would (see chatmem.store.contexts). The stored form is a list of
pieces: strings (the template's own text, and whatever the turn synthesized)
and runs of consecutive stored messages,
`{"from": 12, "to": 40, "gaps": {"user assistant": "<|im_end|>\n<|im_start|>assistant\n"}}`,
each message's verbatim content followed, inside the run, by the template
text that separates its role from the next one's. So a turn's storage is
O(parts), whatever its history.

`expand` gives back exactly the text `compact` was given: compaction checks
it before anything is stored, and keeps the text whole otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chatmem.errors import StoreError, StoreFailure
from chatmem.store.backend import Statements
from chatmem.store.stored_values import json_text, stored_json

Piece = str | dict[str, Any]


@dataclass(frozen=True)
class Sent:
    """One message as the context sent it: its position when it is stored, by reference."""

    role: str
    content: str
    position: int | None


def compact(text: str, sent: Sequence[Sent],
            stored: Callable[[int], tuple[str, str] | None]) -> list[Piece] | None:
    """`text` as pieces, the stored messages of `sent` (in the order sent) by reference;
    None when nothing could be referenced. `stored(position)` is (role, content)."""
    pieces: list[Piece] = []
    run: dict[str, Any] | None = None
    last_role = ""
    cursor = 0
    for message in sent:
        at = text.find(message.content, cursor) if message.content else -1
        if at < 0:
            continue  # the template changed it, or left it out: it stays literal text
        between = text[cursor:at]
        if message.position is None:
            pieces.append(between + message.content)
            run = None
        elif (run is not None and run["to"] == message.position - 1
              and run["gaps"].setdefault(f"{last_role} {message.role}", between) == between):
            run["to"] = message.position
        else:
            run = {"from": message.position, "to": message.position, "gaps": {}}
            pieces += [between, run]
        cursor, last_role = at + len(message.content), message.role
    pieces.append(text[cursor:])
    merged = _merge_strings(pieces)
    if all(isinstance(p, str) for p in merged):
        return None
    if expand(merged, stored) != text:
        return None  # never store what would not read back exactly
    return merged


def expand(pieces: Sequence[Piece], stored: Callable[[int], tuple[str, str] | None]) -> str:
    """The text `pieces` stand for; `stored(position)` is that message's (role, content)."""
    out: list[str] = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(piece)
            continue
        previous: str | None = None
        for position in range(piece["from"], piece["to"] + 1):
            found = stored(position)
            role, content = found or ("", f"[message {position} is no longer stored]")
            if previous is not None:
                out.append(piece["gaps"].get(f"{previous} {role}", ""))
            out.append(content)
            previous = role
    return "".join(out)


def _merge_strings(pieces: list[Piece]) -> list[Piece]:
    merged: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, str) and merged and isinstance(merged[-1], str):
            merged[-1] += piece
        elif piece != "":
            merged.append(piece)
    return merged


# -- against a history file ------------------------------------------------------------


def sent_messages(db: Statements, session_id: int,
                  context: Mapping[str, Any]) -> tuple[list[Sent], dict[int, tuple[str, str]]]:
    """The messages a stored (compact) context sent, in order, and the stored ones' rows."""
    runs = [(item["from"], item["to"]) for part in context.get("parts", [])
            for item in part.get("messages", []) if "role" not in item]
    rows = read_positions(db, session_id, runs)
    sent: list[Sent] = []
    for part in context.get("parts", []):
        for item in part.get("messages", []):
            if "role" in item:
                sent.append(Sent(item["role"], item["content"], None))
                continue
            sent.extend(Sent(*rows[p], p) for p in range(item["from"], item["to"] + 1)
                        if p in rows)
    return sent, rows


def read_positions(db: Statements, session_id: int,
                   runs: Sequence[tuple[int, int]]) -> dict[int, tuple[str, str]]:
    """Position → (role, content) of the session's messages in `runs` (first, last)."""
    rows: dict[int, tuple[str, str]] = {}
    for first, last in runs:
        for position, role, content in db.execute(
                "SELECT position, role, content FROM messages WHERE session_id = ?"
                " AND position BETWEEN ? AND ?", [session_id, first, last]):
            rows[position] = (role, content)
    return rows


def compact_stored(db: Statements, session_id: int, context: Mapping[str, Any],
                   text: str) -> list[Piece] | None:
    """`text`, rendered from a stored (compact) context, as pieces; None: store it whole."""
    sent, rows = sent_messages(db, session_id, context)
    return compact(text, sent, rows.get)


def expand_stored(db: Statements, session_id: int, pieces: Sequence[Piece]) -> str:
    runs = [(p["from"], p["to"]) for p in pieces if isinstance(p, dict)]
    return expand(pieces, read_positions(db, session_id, runs).get)


def to_columns(db: Statements, session_id: int, context: Mapping[str, Any],
               text: str | None) -> tuple[str | None, str | None]:
    """A turn's (rendered_prompt, rendered) columns for `text`: by reference when it
    reads back exactly, whole otherwise."""
    pieces = compact_stored(db, session_id, context, text) if text else None
    return (text, None) if pieces is None else (None, json_text(pieces))


def from_columns(db: Statements, session_id: int, text: str | None,
                 pieces: str | None, what: str) -> str | None:
    """The rendered prompt a turn's (rendered_prompt, rendered) columns hold."""
    if not pieces:
        return text
    return expand_stored(db, session_id, readable_pieces(
        stored_json(pieces, f"{what}: rendered prompt"), f"{what}: rendered prompt"))


def readable_pieces(value: Any, what: str) -> list[Piece]:
    """`value` when it is pieces as `compact` makes them (strings, and runs of whole positions
    with string gaps); a row another role or a hand wrote otherwise (`"from": "1"`, `1.0`)
    is one clear error naming it, never a traceback in `expand`."""
    if isinstance(value, list) and all(isinstance(p, str) or _is_run(p) for p in value):
        return value
    raise StoreError(f"{what} is not stored as chatmem stores it (was it edited by hand?);"
                     " `chatmem sessions export` still reads the messages",
                     kind=StoreFailure.DAMAGED)


def _is_run(piece: Any) -> bool:
    if not isinstance(piece, dict):
        return False
    first, last, gaps = piece.get("from"), piece.get("to"), piece.get("gaps")
    # bool is an int to Python, never a position chatmem wrote.
    return (type(first) is int and type(last) is int and 1 <= first <= last
            and isinstance(gaps, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in gaps.items()))
