"""The stored rows some upgrades of the history file rewrite (chatmem.store.sqlite_upgrades
names and orders them): in bounded steps, so an upgrade's memory stays bounded however
long the history, each step inside the upgrade's one transaction."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime

import sqlite_utils

from chatmem.store.fact_keys import same_key

REWRITTEN_AT_ONCE = 200
"""Turns one step of m005 and m008 reads."""
REINDEXED_AT_ONCE = 500
"""Messages one step of m014 and m016 reads."""


def contexts_by_reference(db: sqlite_utils.Database) -> None:
    """Every turn's context rewritten in storage format 2 (chatmem.store.contexts), which
    `inspect` reads back as exactly the same context."""
    from chatmem.store import contexts

    last = 0
    while True:
        rows = db.execute(
            "SELECT id, session_id, tokenizer, context FROM turns WHERE id > ? ORDER BY id"
            " LIMIT ?", [last, REWRITTEN_AT_ONCE],
        ).fetchall()
        if not rows:
            break
        for turn_id, session_id, tokenizer, context in rows:
            stored = contexts.compact(db.conn, session_id, tokenizer, json.loads(context))
            db.execute("UPDATE turns SET context = ? WHERE id = ?",
                       [json.dumps(stored, ensure_ascii=False), turn_id])
        last = rows[-1][0]


def rendered_prompts_by_reference(db: sqlite_utils.Database) -> None:
    """Each turn's whole `rendered_prompt` moved to `rendered` as pieces
    (chatmem.store.rendered) when they read back byte for byte; left as it was otherwise."""
    from chatmem.store import rendered
    from chatmem.store.stored_values import json_text

    last = 0
    while True:
        rows = db.execute(
            "SELECT id, session_id, context, rendered_prompt FROM turns"
            " WHERE id > ? AND rendered_prompt IS NOT NULL ORDER BY id LIMIT ?",
            [last, REWRITTEN_AT_ONCE],
        ).fetchall()
        if not rows:
            break
        for turn_id, session_id, context, text in rows:
            try:
                stored = json.loads(context)
            except ValueError:
                continue  # a damaged row stays as it is; reading it says so
            pieces = rendered.compact_stored(db.conn, session_id, stored, text)
            if pieces is not None:
                db.execute("UPDATE turns SET rendered_prompt = NULL, rendered = ? WHERE id = ?",
                           [json_text(pieces), turn_id])
        last = rows[-1][0]


def fact_ids_never_reused(db: sqlite_utils.Database) -> None:
    """`facts` made AUTOINCREMENT, ids and rows as they were.

    SQLite cannot add AUTOINCREMENT to a table: `facts` is made again from its own
    definition, and `fact_history`, which refers to it, with it. Inside the upgrade's
    transaction, foreign keys stay on: each table is copied before the one it refers to
    is dropped, so no ON DELETE CASCADE runs."""

    def definition(table: str) -> str:
        return str(db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                              [table]).fetchone()[0])

    # Read before the clean-up below drops a history row whose fact is gone: its id is one.
    mentioned = highest_fact_id_mentioned(db)

    # A row another tool left pointing nowhere (foreign keys are off by default in sqlite3's
    # shell) would fail the copy, and every later opening with it: what the references'
    # own actions would have done is done first.
    for statement in (
            "DELETE FROM facts WHERE session_id IS NOT NULL"
            " AND session_id NOT IN (SELECT id FROM sessions)",
            "UPDATE facts SET source_message_id = NULL WHERE source_message_id IS NOT NULL"
            " AND source_message_id NOT IN (SELECT id FROM messages)",
            "UPDATE facts SET source_session_id = NULL WHERE source_session_id IS NOT NULL"
            " AND source_session_id NOT IN (SELECT id FROM sessions)",
            "DELETE FROM fact_history WHERE fact_id NOT IN (SELECT id FROM facts)",
            "UPDATE fact_history SET source_session_id = NULL WHERE source_session_id IS NOT"
            " NULL AND source_session_id NOT IN (SELECT id FROM sessions)"):
        db.execute(statement)
    indexes = [sql for (sql,) in db.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        " AND tbl_name IN ('facts', 'fact_history')").fetchall()]
    facts = re.sub(r"^CREATE TABLE \"?facts\"? \(", 'CREATE TABLE "facts_m015" (',
                   definition("facts"))
    facts = re.sub(r"\bid INTEGER PRIMARY KEY\b", "id INTEGER PRIMARY KEY AUTOINCREMENT",
                   facts, count=1)
    history = re.sub(r"^CREATE TABLE \"?fact_history\"? \(",
                     'CREATE TABLE "fact_history_m015" (', definition("fact_history"))
    history = re.sub(r"REFERENCES \"?facts\"?\s*\(id\)", 'REFERENCES "facts_m015"(id)',
                     history)
    db.execute(facts)
    db.execute("INSERT INTO facts_m015 SELECT * FROM facts")
    db.execute(history)
    db.execute("INSERT INTO fact_history_m015 SELECT * FROM fact_history")
    db.execute("DROP TABLE fact_history")
    db.execute("DROP TABLE facts")
    # Renamed, fact_history_m015's reference follows: it names facts.
    db.execute('ALTER TABLE facts_m015 RENAME TO facts')
    db.execute('ALTER TABLE fact_history_m015 RENAME TO fact_history')
    for sql in indexes:
        db.execute(sql)
    # The copy started the sequence at the highest SURVIVING id: an id erased before the
    # upgrade, higher than every kept one, would be given again.
    db.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'facts'", [mentioned])
    db.execute("INSERT INTO sqlite_sequence (name, seq) SELECT 'facts', ? WHERE NOT EXISTS"
               " (SELECT 1 FROM sqlite_sequence WHERE name = 'facts')", [mentioned])


def highest_fact_id_mentioned(db: sqlite_utils.Database) -> int:
    """The highest fact id the file still names: a fact, a history row, or a turn context
    that sent the fact (its facts part's `fact_ids`, kept after a purge erased the fact).
    An id erased with nothing left naming it cannot be known."""
    found = int(db.execute(
        "SELECT max(coalesce((SELECT max(id) FROM facts), 0),"
        " coalesce((SELECT max(fact_id) FROM fact_history), 0))").fetchone()[0])
    last = 0
    while True:  # in steps, as every rewrite; only a context that sent facts is read
        rows = db.execute(
            "SELECT id, context FROM turns WHERE id > ? AND instr(context, '\"fact_ids\"')"
            " ORDER BY id LIMIT ?", [last, REWRITTEN_AT_ONCE]).fetchall()
        if not rows:
            return found
        for _, context in rows:
            found = max([found, *_fact_ids_sent(context)])
        last = rows[-1][0]


def _fact_ids_sent(context: str) -> list[int]:
    try:
        parts = json.loads(context).get("parts")
    except (ValueError, AttributeError):
        return []  # a damaged row stays as it is; reading it says so
    lists = [part.get("fact_ids") for part in parts if isinstance(part, dict)] \
        if isinstance(parts, list) else []
    return [i for ids in lists if isinstance(ids, list) for i in ids if isinstance(i, int)]


def extracted_profile_facts_home(db: sqlite_utils.Database) -> None:
    """The profile facts the extractor made before m004 moved into the session they were
    stated in (see m019). A fact whose value /remember wrote (no source turn), made after
    m004 (an opt-in), or whose session is gone stays where it is; so does one whose session
    already holds a live fact of the same key, which would be two answers there."""
    row = db.execute("SELECT applied_at FROM _sqlite_migrations WHERE migration_set ="
                     " 'chatmem' AND name = 'm004_fact_provenance'").fetchone()
    since = _moment(row[0]) if row else None
    if since is None:
        return
    first = db.execute("SELECT applied_at FROM _sqlite_migrations WHERE migration_set ="
                       " 'chatmem' AND name = 'm001_initial'").fetchone()
    made = _moment(first[0]) if first else None
    if made is not None and (since - made).total_seconds() < 60:
        # Made with m004 in it: no extractor of before m004 wrote here. Facts older than
        # m004 came from an archive restored (created_at kept), opted-in profile facts.
        return
    # The two stamps differ in form ('T' or ' ', micro- or milliseconds): compared as times.
    candidates = [(fact_id, key, session_id, deleted_at) for fact_id, key, session_id, created_at,
             deleted_at in db.execute(
                 "SELECT id, key, source_session_id, created_at, deleted_at FROM facts"
                 " WHERE scope = 'user' AND source_turn IS NOT NULL"
                 " AND source_session_id IN (SELECT id FROM sessions) ORDER BY id").fetchall()
             if (made := _moment(created_at)) is not None and made < since]
    for fact_id, key, session_id, deleted_at in candidates:
        held = [k for (k,) in db.execute(
            "SELECT key FROM facts WHERE scope = 'session' AND session_id = ?"
            " AND deleted_at IS NULL", [session_id]).fetchall()]
        if deleted_at is None and any(same_key(key, other) for other in held):
            continue
        db.execute("UPDATE facts SET scope = 'session', \"user\" = NULL, session_id = ?"
                   " WHERE id = ?", [session_id, fact_id])


def _moment(stamp: object) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(stamp))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def index_again(db: sqlite_utils.Database, changed: Callable[[str], bool]) -> None:
    """Write the word index entries of the messages whose terms `changed`, as
    fts.index_text makes them now, REINDEXED_AT_ONCE messages a step."""
    from chatmem import fts

    last = 0
    while True:
        rows = db.execute("SELECT id, content FROM messages WHERE id > ? ORDER BY id LIMIT ?",
                          [last, REINDEXED_AT_ONCE]).fetchall()
        if not rows:
            return
        db.conn.executemany("UPDATE messages_fts SET terms = ? WHERE rowid = ?",
                            [(fts.index_text(content), message_id) for message_id, content
                             in rows if content and changed(content)])
        last = rows[-1][0]


MOVED_AT_ONCE = 2_000
"""Vectors one step of m023 moves (~2 MB)."""


def vectors_moved(db: sqlite_utils.Database, into: str) -> None:
    """Every row of message_vectors moved into the table `into` (same columns), in the key's
    order, each step's rows deleted as they are copied: the pages they free take the next
    steps' rows, so the file does not grow by the new table's size meanwhile. A vector of a
    message gone (deleted by a tool with foreign keys off) is not copied: the new table's
    foreign key would refuse it, and with it the upgrade (ON DELETE CASCADE's outcome)."""
    columns = "message_id, model, dimensions, vector, context_vector"
    first = f" FROM message_vectors ORDER BY model, message_id LIMIT {MOVED_AT_ONCE}"
    while True:
        db.conn.execute(f"INSERT INTO {into} ({columns}) SELECT {columns} FROM (SELECT *{first})"
                        " c WHERE EXISTS (SELECT 1 FROM messages WHERE id = c.message_id)")
        if not db.conn.execute(f"DELETE FROM message_vectors WHERE (model, message_id) IN"
                               f" (SELECT model, message_id{first})").rowcount:
            return
