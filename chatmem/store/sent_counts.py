"""What a purge keeps of the turns that sent a message it rewrites: the count sent.

A stored context refers to the session's messages by position and reads their token counts
from the `token_counts` cache (store.contexts). A purge rewrites a message's text and drops
its cached counts, which were of the text as sent: each earlier turn's context then read the
message as 0 tokens, and `inspect` put the gap in a "chat template" row. Before the counts
go, each reference to such a message in a turn of its session becomes one of its own with
the count the turn sent (`{"from": 7, "to": 7, "tokens": 11}`), as a recalled message's
line is (`said_on`). The text shown is the purged one; the count is what was sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chatmem.store.backend import Backend
from chatmem.store.connection import fetch_rows
from chatmem.store.contexts import FORMAT
from chatmem.store.postgres_writers import trusted_count
from chatmem.store.stored_values import json_text

CHUNK = 500
"""Rows read or written a statement (a purge's batch: redaction.REWRITTEN_TOGETHER)."""


@dataclass
class Counted:
    """The cached counts of one session's messages a purge rewrites."""

    first: int
    """The least id of those messages: a turn whose input was stored before it cannot have
    sent it."""
    counts: dict[int, dict[str, int]] = field(default_factory=dict)
    """Message position → tokenizer → the cached count."""


def cached_counts(db: Backend, message_ids: Iterable[int]) -> dict[int, Counted]:
    """The cached counts of `message_ids`, by session, read before they go."""
    ids = sorted(set(message_ids))
    counted: dict[int, Counted] = {}
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start:start + CHUNK]
        for row in fetch_rows(
                db, "SELECT m.id, m.session_id, m.position, c.tokenizer, c.tokens"
                " FROM messages m JOIN token_counts c ON c.message_id = m.id"
                f"{trusted_count(db.kind, 'c')}"
                f" WHERE m.id IN ({', '.join('?' for _ in chunk)})", chunk):
            session = counted.setdefault(row["session_id"], Counted(row["id"]))
            session.first = min(session.first, row["id"])
            session.counts.setdefault(row["position"], {})[row["tokenizer"]] = row["tokens"]
    return counted


def keep_sent_counts(db: Backend, counted: dict[int, Counted]) -> None:
    """Give each turn's reference to a message of `counted` the count it was sent with."""
    pinned: list[list[Any]] = []
    for session_id, session in counted.items():
        for row in fetch_rows(
                db, "SELECT id, tokenizer, context FROM turns WHERE session_id = ?"
                " AND tokenizer IS NOT NULL AND (user_message_id IS NULL"
                " OR user_message_id >= ?)", [session_id, session.first]):
            try:
                context = json.loads(row["context"])
            except (TypeError, ValueError, RecursionError):
                continue  # a row edited by hand: the purge's own rewrite named it, if at all
            if not isinstance(context, dict) or context.get("format") != FORMAT:
                continue
            counts = {p: c[row["tokenizer"]] for p, c in session.counts.items()
                      if row["tokenizer"] in c}
            if counts and _pin(context, counts):
                pinned.append([json_text(context), row["id"]])
    # In the purge's batches, not a statement a turn: a common word in a long session is
    # sent by most of its turns.
    for start in range(0, len(pinned), CHUNK):
        db.executemany("UPDATE turns SET context = ? WHERE id = ?", pinned[start:start + CHUNK])


def _pin(context: dict[str, Any], counts: dict[int, int]) -> bool:
    """Split `context`'s runs around the positions of `counts`, each with its count; whether
    any changed."""
    changed = False
    parts = context.get("parts")
    for part in parts if isinstance(parts, list) else ():
        items = part.get("messages") if isinstance(part, dict) else None
        if not isinstance(items, list):
            continue
        pinned: list[Any] = []
        for item in items:
            inside = [] if (not isinstance(item, dict) or "role" in item or "tokens" in item
                            or type(item.get("from")) is not int
                            or type(item.get("to")) is not int) \
                else sorted(p for p in counts if item["from"] <= p <= item["to"])
            if not inside:
                pinned.append(item)
                continue
            changed = True
            start = item["from"]
            for position in inside:
                if start < position:
                    pinned.append({"from": start, "to": position - 1})
                pinned.append({"from": position, "to": position, "tokens": counts[position]})
                start = position + 1
            if start <= item["to"]:
                pinned.append({"from": start, "to": item["to"]})
        part["messages"] = pinned
    return changed

