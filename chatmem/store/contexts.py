"""Turn contexts as stored: history by reference, only synthesized text inline.

A turn records exactly what was sent. Most of that is stored messages
(history, recalled turns) that the file already holds; storing their text
again in every turn would make a session's file grow with the square of its
turns. So a stored context keeps, per part, runs of the session's message
positions (`{"from": 12, "to": 21}`) and the full text only of what the
strategy synthesized: system prompt, summary, facts, pins and the input.
Token counts of referenced messages are the ones the history read from the
`token_counts` cache under the turn's tokenizer; compaction makes sure the
cache holds them (a purge that rewrites a message keeps its count as sent in
each turn's reference to it as the cache's goes: store.sent_counts). A recalled
message sent below the line naming the day it was said (`said_on`) is a
reference of its own, `{"from": 7, "to": 7, "said_on": "2026-05-04", "tokens":
31}`: its count is of the line and the text, so it is kept there and never
cached as the message's own.

`expand` gives back exactly the dict `compact` was given. A message becomes a
reference only when that is provably lossless: same role, text and turn as
the stored row, and its count equal to the cached one (or its day named with
its own count, as above). Anything else stays
inline. This is storage format 2 (`"format": 2`); a stored context without
that key is format 1, the full context, and is read as it is.

Recall's ranking notes (`recall`: a dict per candidate, kept or the best dropped, up to
hundreds a turn) were most of a stored turn's bytes, each row naming its eleven keys. They
are stored by column instead, `"recall_columns": {"id": [5, 11], "turn": [3, 6], ...}`,
when the rows' keys come in one order; a key only some rows hold (a TOP_K row's `top_k`)
is a column naming them, `"top_k": {"at": [1], "values": [3]}`. `expand` gives the rows
back as they were. A key of its own rather than a new `format`: a chatmem that does not
know it still reads the context (without the notes), and purges rewrite values, never a
context's keys, so the column names stay as written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chatmem.store.backend import Statements
from chatmem.store.postgres_writers import trusted_count

FORMAT = 2
_CHUNK = 500


def _trusted(db: Statements) -> str:
    """` AND` a condition true of a count (`c`) this reader trusts (p026: not another role's
    on PostgreSQL). A migration's SQLite connection has no `kind`: a file's."""
    return trusted_count(getattr(db, "kind", "sqlite"), "c")


def _fetch(db: Statements, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    return list(db.execute(sql, list(params)).fetchall())


def _stored(
    db: Statements, session_id: int, tokenizer: str, ids: Iterable[int]
) -> dict[int, list[Any]]:
    """id → [position, role, content, turn, cached tokens or None] of this session's messages."""
    wanted = list(dict.fromkeys(ids))
    found: dict[int, list[Any]] = {}
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start:start + _CHUNK]
        marks = ", ".join(["?"] * len(chunk))
        for row in _fetch(
            db,
            "SELECT m.id, m.position, m.role, m.content, m.turn, c.tokens FROM messages m"
            f" LEFT JOIN token_counts c ON c.message_id = m.id AND c.tokenizer = ?{_trusted(db)}"
            # "+": find the rows by id, never by reading the session through its index.
            f" WHERE m.id IN ({marks}) AND +m.session_id = ?",
            [tokenizer, *chunk, session_id],
        ):
            found[row[0]] = list(row[1:])
    return found


def compact(
    db: Statements, session_id: int, tokenizer: str | None, context: Mapping[str, Any],
    counted: Mapping[int, int] | None = None,
) -> dict[str, Any]:
    """The context as stored: stored messages as runs of positions, the rest inline.

    Runs inside the caller's transaction; caches the counts it relies on. `counted`: the
    counts under `tokenizer` of messages the caller has just inserted in it (a committed
    turn's two), cached with those in one statement rather than one of their own.
    """
    context = _recall_by_column(context)
    parts = context.get("parts", [])
    ids = [m["id"] for p in parts for m in p.get("messages", []) if m.get("id") is not None]
    if tokenizer is None or not ids:
        if tokenizer is not None and counted:
            save_token_counts(db, tokenizer, counted)
        return context
    stored = _stored(db, session_id, tokenizer, ids)
    newly_counted: dict[int, int] = {}
    compacted = []
    for part in parts:
        items: list[dict[str, Any]] = []
        for message in part.get("messages", []):
            row = stored.get(message.get("id"))
            if row is None or (row[1], row[2], row[3]) != (
                    message["role"], message["content"], message.get("turn")):
                items.append(message)
                continue
            if message.get("said_on") is not None:
                # Sent below its day's line: its count is of the two, never its own to cache.
                items.append({"from": row[0], "to": row[0], "said_on": message["said_on"],
                              "tokens": message["tokens"]})
                continue
            if row[4] not in (None, message["tokens"]):
                items.append(message)
                continue
            if row[4] is None:
                row[4] = newly_counted[message["id"]] = message["tokens"]
            position = row[0]
            last = items[-1] if items else None
            if (last is not None and "role" not in last and "said_on" not in last
                    and last["to"] == position - 1):
                last["to"] = position
            else:
                items.append({"from": position, "to": position})
        compacted.append({**part, "messages": items})
    if counted:
        # Under the caller's write lock: a count `stored` found missing is still missing,
        # so the new messages' upsert clause changes nothing for these.
        save_token_counts(db, tokenizer, {**newly_counted, **counted})
    elif newly_counted:
        # A count this reader does not trust (another role's: _trusted) reads as missing
        # and is replaced by its own.
        db.executemany(
            "INSERT INTO token_counts (message_id, tokenizer, tokens) VALUES (?, ?, ?)"
            " ON CONFLICT (message_id, tokenizer) DO UPDATE SET tokens = excluded.tokens",
            [(i, tokenizer, n) for i, n in newly_counted.items()],
        )
    return {**context, "parts": compacted, "format": FORMAT}


def save_token_counts(db: Statements, tokenizer: str, counts: Mapping[int, int]) -> None:
    """Store token counts (a count already stored is replaced), a chunk a statement: a
    turn's two and the counts its context caches, one (each statement of a turn's write is
    ~10 µs of its time)."""
    rows = list(counts.items())
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start:start + _CHUNK]
        db.execute(
            "INSERT INTO token_counts (message_id, tokenizer, tokens) VALUES "
            + ", ".join(["(?, ?, ?)"] * len(chunk))
            + " ON CONFLICT (message_id, tokenizer) DO UPDATE SET tokens = excluded.tokens",
            [v for message_id, tokens in chunk for v in (message_id, tokenizer, tokens)])


def expand(
    db: Statements, session_id: int, tokenizer: str | None, stored: Mapping[str, Any]
) -> dict[str, Any]:
    """The full context a stored one stands for (a format 1 context is returned as it is)."""
    stored = _recall_by_row(stored)
    if stored.get("format") != FORMAT:
        return stored
    parts = []
    for part in stored["parts"]:
        messages: list[dict[str, Any]] = []
        for item in part["messages"]:
            if "role" in item:
                messages.append(item)
                continue
            rows = _fetch(
                db,
                "SELECT m.id, m.role, m.content, m.turn, m.position, c.tokens FROM messages m"
                " LEFT JOIN token_counts c ON c.message_id = m.id AND c.tokenizer = ?"
                f"{_trusted(db)}"
                " WHERE m.session_id = ? AND m.position BETWEEN ? AND ? ORDER BY m.position",
                [tokenizer, session_id, item["from"], item["to"]],
            )
            by_position = {r[4]: r for r in rows}
            for position in range(item["from"], item["to"] + 1):
                row = by_position.get(position)
                if row is None:  # never written by chatmem; say so rather than fail
                    messages.append({"role": "system", "tokens": 0, "id": None, "turn": None,
                                     "content": f"[message {position} is no longer stored]"})
                    continue
                if "said_on" in item:
                    messages.append({"role": row[1], "content": row[2], "tokens": item["tokens"],
                                     "id": row[0], "turn": row[3], "said_on": item["said_on"]})
                    continue
                # A purge's rewrite of the message kept the count it was sent with here.
                tokens = item["tokens"] if "tokens" in item else row[5] or 0
                messages.append({"role": row[1], "content": row[2], "tokens": tokens,
                                 "id": row[0], "turn": row[3]})
        parts.append({**part, "messages": messages})
    return {k: (parts if k == "parts" else v) for k, v in stored.items() if k != "format"}


def inline(stored: Any) -> dict[str, Any]:
    """What running a chat reads of an earlier turn's stored context, without reading one
    message: its budget and tokenizer flag (`approximate`) as chatmem writes them, and per
    part the messages it holds inline (the files a turn attached, its synthesized text).
    Runs of stored messages are left out, whatever their number: a write-share grantee may
    store a context of his own (PostgreSQL's p018 checks only that it is an object), and
    20,000 runs of the whole history were expanded each time a chat started. A part or a
    message out of shape (no parts, a count as text) reads as sending nothing."""
    if not isinstance(stored, Mapping):
        return {"parts": []}
    lean: dict[str, Any] = {}
    budget = stored.get("budget")
    if budget is None or type(budget) is int:
        lean["budget"] = budget
    if type(stored.get("approximate")) is bool:
        lean["approximate"] = stored["approximate"]
    parts = stored.get("parts")
    lean["parts"] = [
        {**part, "messages": [m for m in part["messages"]
                              if isinstance(m, Mapping) and isinstance(m.get("role"), str)
                              and isinstance(m.get("content"), str)
                              and isinstance(m.get("image", {}), Mapping)]}
        for part in (parts if isinstance(parts, list) else ())
        if isinstance(part, Mapping) and isinstance(part.get("messages"), list)]
    return lean


def _recall_by_column(context: Mapping[str, Any]) -> dict[str, Any]:
    """`context` with its recall rows as columns, in the same place (see the module doc);
    as it is when their keys do not come in one order (nothing is lost either way)."""
    rows = context.get("recall")
    if not isinstance(rows, list) or not rows or type(rows[0]) is not dict:
        return dict(context)
    # The rows' shapes, each once (one set, not a call a row: a turn has up to hundreds).
    shapes = {tuple(r) if type(r) is dict else () for r in rows}
    if len(shapes) == 1:
        keys = next(iter(shapes))
        if not keys:
            return dict(context)
        columns: dict[str, Any] = {key: [r[key] for r in rows] for key in keys}
    else:
        # A key only some rows hold (a TOP_K row's limit, a routed row's route): a column
        # of its own naming the rows that hold it, in the one order every row's keys keep.
        keys = tuple(dict.fromkeys(key for shape in shapes for key in shape))
        if () in shapes or any([k for k in keys if k in shape] != list(shape)
                               for shape in shapes):
            return dict(context)
        everyone = set.intersection(*map(set, shapes))
        if not everyone:
            return dict(context)
        columns = {}
        for key in keys:
            if key in everyone:
                columns[key] = [r[key] for r in rows]
            else:
                held = [i for i, r in enumerate(rows) if key in r]
                columns[key] = {"at": held, "values": [rows[i][key] for i in held]}
    return {("recall_columns" if k == "recall" else k): (columns if k == "recall" else v)
            for k, v in context.items()}


def _recall_by_row(stored: Mapping[str, Any]) -> dict[str, Any]:
    """`stored` with recall columns back as rows; columns edited out of shape (not lists of
    one length, or a partial column naming rows that are not there) read as no notes, not
    as a failure to read the turn."""
    columns = stored.get("recall_columns")
    if columns is None:
        return dict(stored)
    rows: list[dict[str, Any]] = []
    if isinstance(columns, dict) and columns:
        whole = [c for c in columns.values() if isinstance(c, list)]
        if len(whole) == len(columns) and len({len(c) for c in whole}) == 1:
            rows = [dict(zip(columns, values, strict=True))
                    for values in zip(*columns.values(), strict=True)]
        elif whole and len({len(c) for c in whole}) == 1:
            rows = _rows_of_partial_columns(columns, len(whole[0]))
    return {("recall" if k == "recall_columns" else k): (rows if k == "recall_columns" else v)
            for k, v in stored.items()}


def _rows_of_partial_columns(columns: Mapping[str, Any], count: int) -> list[dict[str, Any]]:
    """The rows of columns some of which name the rows holding them (`_recall_by_column`);
    none when one is out of shape."""
    held: dict[str, dict[int, Any]] = {}
    for key, column in columns.items():
        if isinstance(column, list):
            continue
        at = column.get("at") if isinstance(column, dict) else None
        values = column.get("values") if isinstance(column, dict) else None
        if (not isinstance(at, list) or not isinstance(values, list)
                or len(at) != len(values) or len(set(at)) != len(at)
                or not all(type(i) is int and 0 <= i < count for i in at)):
            return []
        held[key] = dict(zip(at, values, strict=True))
    rows: list[dict[str, Any]] = [{} for _ in range(count)]
    for key, column in columns.items():
        if isinstance(column, list):
            for row, value in zip(rows, column, strict=True):
                row[key] = value
        else:
            for i, value in held[key].items():
                rows[i][key] = value
    return rows
