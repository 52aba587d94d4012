"""Who may read and change which rows of a PostgreSQL history: the statements of p007.

A row belongs to a session (directly by `session_id`, or through the message or
fact it hangs on), and every right over it is the session's: readable when the
session is the role's own or shared with it, changeable when it is the role's own
or shared with it for writing by its owner. So a row's `owner` is its session's
owner, whoever wrote it (a trigger sets it on INSERT): what a role wrote into
another's session under a share is that owner's, and a share ended ends every right
over it. Only a user-scope fact (no session) and a vector cache entry are the
role's that wrote them. A role's own rows pass the policies on one comparison, as
before p007 (`owner = current_user`); a shared row costs a look-up of its share.

- An UPDATE may target every readable row and must leave it writable: a read-only
  row is refused with an error, never skipped as if it were changed. A DELETE only
  reaches writable rows. (p015 narrows both for messages and turns: postgres_write_shares.)
- Ids, owners and the session (or message, or fact) a row belongs to are set on
  INSERT and never change: no role holds UPDATE on those columns, nor INSERT on
  an id or an owner, so no statement can name an id it has not been given.
- A reference a role sets (a turn's messages, a fact's source) must be to a row it
  can read: checked before the foreign key is, so an id that does not exist and
  one the role may not see are refused alike; no error tells of rows one cannot see.
- Session ids are random (`chatmem_session_id`), not a count a stranger can walk.
- `word_statistics` holds each session's entry and token totals for BM25,
  readable as the session is and written only by definer triggers on
  `message_words`: a role's retrieval sums the sessions it can read.
- Only a session's owner renames it, sets its retention or moves it to another
  user profile (its name is unique among its owner's: renaming by a sharer would
  probe the owner's other names; retention and the profile decide its erasure). p017
  makes every other setting the owner's too (postgres_write_shares.SESSION_WORK).

Superusers and BYPASSRLS roles are exempt from row-level security (PostgreSQL's
rule), and from these triggers too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

Execute = Callable[[str], Any]

OWN = "owner = current_user"
EXEMPT = "chatmem_exempt()"


def shared(session: str, owner: str, *, write: bool) -> str:
    """The session `session` of owner `owner` is shared with this role (for writing) by that
    owner: a share anyone else made counts for nothing."""
    mode = " AND h.mode = 'write'" if write else ""
    return (f"EXISTS (SELECT 1 FROM session_shares h WHERE h.session_id = {session}"
            f" AND h.grantee = current_user AND h.owner = {owner}{mode})")


def readable(column: str) -> str:
    """The session `column` names is readable (sessions' own policy decides)."""
    return f"EXISTS (SELECT 1 FROM sessions s WHERE s.id = {column})"


def _in_session(table: str, *, write: bool) -> str:
    """A row of a session: its owner is the session's, so own, or shared by that owner."""
    return (f"({table}.owner = current_user"
            f" OR {shared(f'{table}.session_id', f'{table}.owner', write=write)})")


def _through(table: str, parent: str, alias: str, key: str, *, write: bool) -> str:
    """A row that hangs on a message or a fact: own, or its parent is readable (writable)."""
    condition = (f" AND {alias}.session_id IS NOT NULL AND "
                 f"{shared(f'{alias}.session_id', f'{alias}.owner', write=True)}"
                 if write else "")
    return (f"({table}.owner = current_user OR EXISTS (SELECT 1 FROM {parent} {alias}"
            f" WHERE {alias}.id = {table}.{key}{condition}))")


def _fact(*, write: bool) -> str:
    """A fact of a session is the session's; one without (a user profile's) its writer's."""
    return (f"(facts.owner = current_user OR facts.session_id IS NOT NULL"
            f" AND {shared('facts.session_id', 'facts.owner', write=write)})")


def _same_session(table: str, column: str) -> str:
    """`column` is empty or names a message of the row's own session."""
    return (f"({table}.{column} IS NULL OR EXISTS (SELECT 1 FROM messages m"
            f" WHERE m.id = {table}.{column} AND m.session_id = {table}.session_id))")


SESSION_TABLES = ("messages", "turns", "summaries", "strategy_state", "session_prompts",
                  "probes", "message_words", "index_leases", "images")
"""Tables whose rows name their session."""
MESSAGE_TABLES = ("token_counts", "message_vectors")
"""Tables whose rows belong to a message."""
PARENTS = {**dict.fromkeys(SESSION_TABLES, ("sessions", "session_id")), "facts":
           ("sessions", "session_id"), "fact_history": ("facts", "fact_id"),
           **dict.fromkeys(MESSAGE_TABLES, ("messages", "message_id"))}
"""Tables whose rows are their session's owner's → the table and column of the row that says
who that is (a fact without a session is its writer's)."""


def _rules() -> dict[str, tuple[str, str, str]]:
    """table → (readable, writable, what an inserted row must also satisfy)."""
    rules: dict[str, tuple[str, str, str]] = {
        table: (_in_session(table, write=False), _in_session(table, write=True), "true")
        for table in SESSION_TABLES}
    refs = f"{_same_session('turns', 'user_message_id')}" \
           f" AND {_same_session('turns', 'assistant_message_id')}"
    rules["turns"] = (rules["turns"][0], f"{rules['turns'][1]} AND {refs}", "true")
    rules["message_words"] = (*rules["message_words"][:2], (
        "EXISTS (SELECT 1 FROM messages m WHERE m.id = message_words.message_id"
        " AND m.session_id = message_words.session_id)"))
    for table in MESSAGE_TABLES:
        rules[table] = (_through(table, "messages", "m", "message_id", write=False),
                        _through(table, "messages", "m", "message_id", write=True), "true")
    rules["facts"] = (_fact(write=False), _fact(write=True), "true")
    rules["fact_history"] = (_through("fact_history", "facts", "f", "fact_id", write=False),
                             _through("fact_history", "facts", "f", "fact_id", write=True),
                             "true")
    message = "EXISTS (SELECT 1 FROM messages m WHERE m.id = vector_cache.message_id"
    rules["vector_cache"] = (
        f"{OWN} AND {message})",
        f"{OWN} AND {message} AND (m.owner = current_user"
        f" OR {shared('m.session_id', 'm.owner', write=True)}))", "true")
    return rules


RULES = _rules()
USER_TABLES = ("sessions", "session_shares", *RULES)
"""Every table of user data: each has an owner column and forced row-level security."""

IMMUTABLE = ("id", "owner", "session_id", "message_id", "fact_id", "embedding",
             "context_embedding")
"""Columns no role updates: what a row is and whose, set once on INSERT (the last two by
the vector trigger of p002)."""
NOT_INSERTED = ("id", "owner", "embedding", "context_embedding")
"""Columns no role names in an INSERT: given by the database."""
UPDATABLE_ONLY: dict[str, tuple[str, ...]] = {
    "session_shares": ("mode",),
    "vector_cache": (),
    "index_leases": ("pid", "host", "heartbeat_at", "expires_at"),
}
"""Tables whose updatable columns are fewer than the rule gives."""


def _policies(table: str, read: str, update_check: str, insert_check: str,
              delete: str) -> Iterator[str]:
    for command in ("read", "insert", "update", "delete"):
        yield f"DROP POLICY IF EXISTS {table}_{command} ON {table}"
    yield f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY"
    yield f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY"
    yield f"CREATE POLICY {table}_read ON {table} FOR SELECT USING ({read})"
    yield f"CREATE POLICY {table}_insert ON {table} FOR INSERT WITH CHECK ({insert_check})"
    yield (f"CREATE POLICY {table}_update ON {table} FOR UPDATE USING ({read})"
           f" WITH CHECK ({update_check})")
    yield f"CREATE POLICY {table}_delete ON {table} FOR DELETE USING ({delete})"


def policy_statements() -> Iterator[str]:
    """Every table's four policies, as p007 leaves them."""
    read, write = (shared("sessions.id", "sessions.owner", write=w) for w in (False, True))
    yield from _policies("sessions", f"{OWN} OR {read}", f"{OWN} OR {write}", OWN, OWN)
    own_session = ("EXISTS (SELECT 1 FROM sessions s WHERE s.id = session_shares.session_id"
                   " AND s.owner = current_user)")
    yield from _policies("session_shares", f"{OWN} OR grantee = current_user",
                         f"{OWN} AND {own_session}", f"{OWN} AND {own_session}", OWN)
    for table, (read, write, insert) in RULES.items():
        yield from _policies(table, read, write, f"{write} AND {insert}", write)


# -- triggers -------------------------------------------------------------------------------

EXEMPT_FUNCTION = f"""
CREATE FUNCTION {EXEMPT} RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT rolsuper OR rolbypassrls FROM pg_catalog.pg_roles
                     WHERE rolname = current_user), false)
$$
"""
SESSION_ID_FUNCTION = """
CREATE FUNCTION chatmem_session_id() RETURNS bigint LANGUAGE sql VOLATILE AS $$
    -- 53 random bits of a version-4 UUID (pg_strong_random), above 0 and exact in JSON.
    SELECT (('x' || substr(u, 1, 12) || substr(u, 14, 3))::bit(60)::bigint
            & 9007199254740991) + 1
    FROM (SELECT translate(left(gen_random_uuid()::text, 18), '-', '') AS u) AS random
$$
"""
OWNERS_RIGHTS = f"""
CREATE FUNCTION chatmem_keep_owners_rights() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.owner <> current_user AND NOT {EXEMPT}
            AND (NEW.name IS DISTINCT FROM OLD.name
                 OR NEW.retention_days IS DISTINCT FROM OLD.retention_days
                 OR NEW."user" IS DISTINCT FROM OLD."user") THEN
        RAISE EXCEPTION 'only its owner renames a session, sets its retention or its profile'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$
"""
_UNSEEN = "refers to a row this role cannot read"


def _reference_check(table: str, checks: dict[str, str]) -> list[str]:
    """A trigger refusing a new or changed reference to a row the role cannot read, before
    the foreign key is checked (which would tell a missing row from a hidden one).

    A reference left as it was is not checked again: a fact stated in a session that is no
    longer shared stays its owner's to change."""
    tests = " OR ".join(
        f"(NEW.{column} IS NOT NULL AND (TG_OP = 'INSERT' OR NEW.{column} IS DISTINCT FROM"
        f" OLD.{column}) AND NOT EXISTS (SELECT 1 FROM {target} WHERE id = NEW.{column}))"
        for column, target in checks.items())
    columns = ", ".join(checks)
    return [
        f"""
CREATE FUNCTION chatmem_check_{table}_references() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF {tests} THEN
        RAISE EXCEPTION '{table}: a reference {_UNSEEN}'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$
""",
        f"CREATE TRIGGER {table}_references BEFORE UPDATE OF {columns} OR INSERT ON {table}"
        f" FOR EACH ROW EXECUTE FUNCTION chatmem_check_{table}_references()",
    ]


def _owner_trigger(table: str, parent: str, key: str) -> list[str]:
    """The row is its session's owner's, whoever inserts it: taken from the row it hangs on
    (as the inserting role sees it: a session it cannot see gives none, and the insert is
    refused as one into a session it may not write)."""
    owner = f"(SELECT p.owner FROM {parent} p WHERE p.id = NEW.{key})"
    if table == "facts":  # a user-scope fact is its writer's
        owner = f"CASE WHEN NEW.session_id IS NULL THEN current_user::text ELSE {owner} END"
    return [f"""
CREATE FUNCTION chatmem_{table}_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.owner := {owner};
    RETURN NEW;
END $$
""", f"CREATE TRIGGER {table}_owner BEFORE INSERT ON {table} FOR EACH ROW"
     f" EXECUTE FUNCTION chatmem_{table}_owner()"]


def owner_statements() -> Iterator[str]:
    """Rows written into another's session under a share become its owner's (p001 kept
    their writer as owner), then every new row is its session owner's."""
    for table, (parent, key) in PARENTS.items():  # parents first: messages, then their rows
        yield (f"UPDATE {table} AS t SET owner = p.owner FROM {parent} p WHERE p.id = t.{key}"
               " AND t.owner <> p.owner")
    for table, (parent, key) in PARENTS.items():
        yield from _owner_trigger(table, parent, key)


def trigger_statements() -> Iterator[str]:
    yield EXEMPT_FUNCTION
    yield OWNERS_RIGHTS
    yield ("CREATE TRIGGER sessions_owners_rights BEFORE UPDATE OF name, retention_days,"
           ' "user" ON sessions FOR EACH ROW EXECUTE FUNCTION chatmem_keep_owners_rights()')
    yield from _reference_check("facts", {"source_message_id": "messages",
                                          "source_session_id": "sessions"})
    yield from _reference_check("fact_history", {"source_session_id": "sessions"})


# -- word statistics, per session ---------------------------------------------------------

def _definer(name: str, body: str, schema: str) -> str:
    """A trigger function running as the schema's owner: the only writer of the statistics."""
    return (f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER"
            f" SET search_path = pg_catalog, {schema}, pg_temp AS $$\nBEGIN\n{body}\n"
            "    RETURN NULL;\nEND $$")


_ADD = """
    INSERT INTO word_statistics AS w (session_id, entries, tokens)
    SELECT session_id, count(*), coalesce(sum(tokens), 0) FROM added GROUP BY session_id
    ON CONFLICT (session_id) DO UPDATE
        SET entries = w.entries + excluded.entries, tokens = w.tokens + excluded.tokens;"""
# A removal or a change only updates rows that exist: the session may be going (a cascade),
# and a row inserted for it then would break its foreign key.
_CHANGE = """
    UPDATE word_statistics AS w SET entries = w.entries + c.entries, tokens = w.tokens + c.tokens
    FROM (SELECT session_id, sum(entries) AS entries, sum(tokens) AS tokens
          FROM ({rows}) AS each GROUP BY session_id) AS c
    WHERE w.session_id = c.session_id;"""
_ADDED = "SELECT session_id, 1 AS entries, tokens FROM added"
_REMOVED = "SELECT session_id, -1 AS entries, -tokens AS tokens FROM removed"


def statistics_statements(schema: str) -> Iterator[str]:
    """The global row of p001 becomes one row per session, backfilled from the index."""
    for trigger in ("added", "removed", "changed"):
        yield f"DROP TRIGGER IF EXISTS message_words_{trigger} ON message_words"
        yield f"DROP FUNCTION IF EXISTS chatmem_count_{trigger}_words()"
    yield "DROP TABLE IF EXISTS word_statistics"
    yield ("CREATE TABLE word_statistics (session_id bigint PRIMARY KEY REFERENCES sessions(id)"
           " ON DELETE CASCADE, entries bigint NOT NULL, tokens bigint NOT NULL)")
    yield ("INSERT INTO word_statistics SELECT session_id, count(*), coalesce(sum(tokens), 0)"
           " FROM message_words GROUP BY session_id")
    # Not forced: the table's owner (the definer functions) writes it; no one else may.
    yield "ALTER TABLE word_statistics ENABLE ROW LEVEL SECURITY"
    yield (f"CREATE POLICY word_statistics_read ON word_statistics FOR SELECT"
           f" USING ({readable('word_statistics.session_id')})")
    yield "GRANT SELECT ON word_statistics TO PUBLIC"
    yield _definer("chatmem_count_added_words", _ADD, schema)
    yield _definer("chatmem_count_removed_words", _CHANGE.format(rows=_REMOVED), schema)
    yield _definer("chatmem_count_changed_words",
                   _CHANGE.format(rows=f"{_ADDED} UNION ALL {_REMOVED}"), schema)
    for trigger, event, tables in (("added", "INSERT", "NEW TABLE AS added"),
                                   ("removed", "DELETE", "OLD TABLE AS removed"),
                                   ("changed", "UPDATE",
                                    "OLD TABLE AS removed NEW TABLE AS added")):
        yield (f"CREATE TRIGGER message_words_{trigger} AFTER {event} ON message_words"
               f" REFERENCING {tables} FOR EACH STATEMENT"
               f" EXECUTE FUNCTION chatmem_count_{trigger}_words()")
    for trigger in ("added", "removed", "changed"):
        yield f"REVOKE ALL ON FUNCTION chatmem_count_{trigger}_words() FROM PUBLIC"


# -- privileges ---------------------------------------------------------------------------

def grant_statements(execute: Execute) -> Iterator[str]:
    """Column privileges: nothing names an id or an owner, nothing moves a row."""
    tables = ", ".join(f"'{table}'" for table in USER_TABLES)
    columns: dict[str, list[str]] = {}
    for table, column in execute(
            "SELECT table_name, quote_ident(column_name) FROM information_schema.columns"
            f" WHERE table_schema = current_schema() AND table_name IN ({tables})"
            " ORDER BY table_name, ordinal_position").fetchall():
        columns.setdefault(table, []).append(column)
    for table in USER_TABLES:
        yield f"REVOKE INSERT, UPDATE ON {table} FROM PUBLIC"
        inserted = [c for c in columns[table] if c not in NOT_INSERTED]
        yield f"GRANT INSERT ({', '.join(inserted)}) ON {table} TO PUBLIC"
        updated = UPDATABLE_ONLY.get(
            table, tuple(c for c in columns[table] if c not in IMMUTABLE))
        if updated:
            yield f"GRANT UPDATE ({', '.join(updated)}) ON {table} TO PUBLIC"


def session_id_statements() -> Iterator[str]:
    yield SESSION_ID_FUNCTION
    yield "ALTER TABLE sessions ALTER COLUMN id DROP IDENTITY IF EXISTS"
    yield "ALTER TABLE sessions ALTER COLUMN id SET DEFAULT chatmem_session_id()"


def pin_search_paths(execute: Execute) -> None:
    """p009: every chatmem function finds its tables in chatmem's schema, whoever calls it.

    A function body names its tables without a schema, and PostgreSQL resolves them at each
    call on the caller's search path, where a role's own temporary tables come first (every
    role may create them). A table `sessions` of one's own then decided whose a new row
    was (`chatmem_<table>_owner`), and a `pg_roles` of one's own made one exempt from the
    owner's rights. Pinned, the catalogue comes first, then chatmem's schema (and pgvector's,
    for the vector copies' `halfvec`), and the temporary schema last."""
    schema, vectors = execute(
        "SELECT quote_ident(current_schema()), (SELECT quote_ident(n.nspname) FROM"
        " pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
        " WHERE e.extname = 'vector')").fetchone()
    path = ", ".join(dict.fromkeys(["pg_catalog", schema, *([vectors] if vectors else []),
                                    "pg_temp"]))
    for (function,) in execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.pronamespace ="
            " current_schema()::regnamespace AND p.proname LIKE 'chatmem\\_%'"
            " ORDER BY 1").fetchall():
        execute(f"ALTER FUNCTION {function} SET search_path = {path}")


def seal(execute: Execute) -> None:
    """p007: the statements above, in order."""
    schema = execute("SELECT quote_ident(current_schema())").fetchone()[0]
    # The migrating role owns the tables: unforced until the policies are replaced, it reads
    # (and backfills) every row, as a superuser would.
    unforced = [f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY" for table in USER_TABLES]
    for statement in (*session_id_statements(), *unforced, *owner_statements(),
                      *statistics_statements(schema), *trigger_statements(),
                      *policy_statements()):
        execute(statement)
    for statement in list(grant_statements(execute)):
        execute(statement)


@contextmanager
def unforced(execute: Execute, tables: Iterable[str]) -> Iterator[None]:
    """Row security not forced on `tables` while a migration reads or changes their rows:
    a migrating owner who is not a superuser reads every person's rows, as p007 does, where
    forced policies would show it only its own and the migration, recorded as done, would
    never reach the others'. Forced again after."""
    names = list(tables)
    for table in names:
        execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
    yield
    # Not in a `finally`: a failed statement aborts the migration's transaction, which
    # takes these ALTERs back, and refuses every statement until it ends.
    for table in names:
        execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
