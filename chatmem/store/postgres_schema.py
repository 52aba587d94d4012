"""The schema of a PostgreSQL history, as named migrations applied once.

`p001_schema` is SQLite's schema after m001..m008 (chatmem/store/schema.py):
the same tables, columns, value types, keys and indexes, so both backends
return identical values. Ids are bigint identities, times ISO TEXT, vectors
bytea, REAL double precision, every INTEGER bigint (SQLite's are 64-bit). The
column `user` is a reserved word here and is always written "user".

What differs: full-text entries live in `message_words` (a tsvector of
fts.index_text, so CJK bigrams as on SQLite) and every row of user data has
an `owner` (the role that wrote it) that row-level security checks, so one
database serves a team and nobody reads another's memory. A session is
visible to its owner and to the roles it is shared with (`session_shares`,
read or write); its rows follow it. The policies are FORCEd, so they hold
for the tables' owner's statements too (superusers and BYPASSRLS roles are not
subject to them: PostgreSQL's rule), but the owner may switch them off with
ALTER TABLE: the tables of a team belong to whoever administers it, never to a
person who chats (`admin add-user` refuses otherwise: store/sharing.py).
p007 seals writes as p001 sealed reads: every right over a row is its session's
(chatmem/store/postgres_access.py).

A released migration is never edited: a schema change is a new function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chatmem.store import postgres_access
from chatmem.store.migrations import MigrationList

Execute = Callable[..., Any]
"""Runs one statement, with its parameters (%s) if any, and returns its cursor (psycopg's
Connection.execute)."""
Migration = Callable[[Execute], None]
MIGRATION_LIST: MigrationList[Migration] = MigrationList()
MIGRATIONS = MIGRATION_LIST.functions
"""Every migration, in the order they run; each is known by its function's name."""
migration = MIGRATION_LIST.add
migration_names = MIGRATION_LIST.names
pending_migrations = MIGRATION_LIST.pending

BOOKKEEPING = "chatmem_migrations"
CREATE_BOOKKEEPING = (f"CREATE TABLE IF NOT EXISTS {BOOKKEEPING} "
                      "(name text PRIMARY KEY, applied_at text NOT NULL)")





OWNER = "owner text NOT NULL DEFAULT current_user"

# Visible sessions are the readable ones (sessions has its own policy); a writable one
# is owned, or shared for writing by its owner (a share made by anyone else counts for nothing).
_WRITABLE = ("(s.owner = current_user OR EXISTS (SELECT 1 FROM session_shares h"
             " WHERE h.session_id = s.id AND h.grantee = current_user"
             " AND h.owner = s.owner AND h.mode = 'write'))")


def _session_readable(column: str) -> str:
    return f"EXISTS (SELECT 1 FROM sessions s WHERE s.id = {column})"


def _session_writable(column: str) -> str:
    return f"EXISTS (SELECT 1 FROM sessions s WHERE s.id = {column} AND {_WRITABLE})"


def _through(table: str, alias: str, key: str, condition: str) -> str:
    """A row is readable (writable) when the row it belongs to in `table` is."""
    return f"EXISTS (SELECT 1 FROM {table} {alias} WHERE {alias}.id = {key} AND {condition})"


# table → (what makes a row readable, writable, insertable), besides owning it.
_ACCESS: dict[str, tuple[str, str, str]] = {
    table: (_session_readable(f"{table}.session_id"), _session_writable(f"{table}.session_id"),
            _session_writable(f"{table}.session_id"))
    for table in ("messages", "turns", "summaries", "strategy_state", "session_prompts",
                  "probes", "message_words")
}
# A user-scope fact (no session) is its owner's alone.
_ACCESS["facts"] = (f"facts.session_id IS NOT NULL AND {_session_readable('facts.session_id')}",
                    f"facts.session_id IS NOT NULL AND {_session_writable('facts.session_id')}",
                    f"facts.session_id IS NULL OR {_session_writable('facts.session_id')}")
for _table in ("token_counts", "message_vectors"):
    _writable = _through("messages", "m", f"{_table}.message_id",
                         _session_writable("m.session_id"))
    _ACCESS[_table] = (_through("messages", "m", f"{_table}.message_id", "true"),
                       _writable, _writable)
_writable = _through("facts", "f", "fact_history.fact_id",
                     "(f.owner = current_user OR f.session_id IS NOT NULL"
                     f" AND {_session_writable('f.session_id')})")
_ACCESS["fact_history"] = (_through("facts", "f", "fact_history.fact_id", "true"),
                           _writable, _writable)

USER_TABLES = ("sessions", "session_shares", *_ACCESS)


def _policies(table: str, readable: str, writable: str, *, insert: str,
              delete: str | None = None) -> list[str]:
    own = "owner = current_user"
    return [
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
        f"CREATE POLICY {table}_read ON {table} FOR SELECT USING ({own} OR {readable})",
        f"CREATE POLICY {table}_insert ON {table} FOR INSERT WITH CHECK ({own} AND {insert})",
        f"CREATE POLICY {table}_update ON {table} FOR UPDATE"
        f" USING ({own} OR {writable}) WITH CHECK ({own} OR {writable})",
        f"CREATE POLICY {table}_delete ON {table} FOR DELETE"
        f" USING ({own} OR {writable if delete is None else delete})",
    ]


TABLES = f"""
CREATE TABLE chatmem_meta (key text PRIMARY KEY, value text);
INSERT INTO chatmem_meta VALUES ('application', 'chatmem');
CREATE TABLE sessions (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name text NOT NULL,
    strategy text NOT NULL,
    params text NOT NULL DEFAULT '{{}}',
    provider text,
    model text,
    system text,
    "user" text,
    created_at text NOT NULL,
    updated_at text NOT NULL,
    tokenizer text,
    retention_days bigint,
    {OWNER},
    UNIQUE (owner, name)
);
CREATE INDEX sessions_updated ON sessions (updated_at);
CREATE TABLE session_shares (
    session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    grantee text NOT NULL,
    mode text NOT NULL CHECK (mode IN ('read', 'write')),
    {OWNER},
    PRIMARY KEY (session_id, grantee)
);
CREATE INDEX session_shares_grantee ON session_shares (grantee);
CREATE TABLE messages (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    position bigint NOT NULL,
    turn bigint NOT NULL,
    role text NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content text NOT NULL,
    external_id text,
    created_at text NOT NULL,
    gap_s double precision,
    {OWNER},
    UNIQUE (session_id, position)
);
CREATE INDEX messages_session_turn ON messages (session_id, turn);
CREATE INDEX messages_sittings ON messages (session_id, gap_s);
CREATE TABLE token_counts (
    message_id bigint NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    tokenizer text NOT NULL,
    tokens bigint NOT NULL,
    {OWNER},
    PRIMARY KEY (message_id, tokenizer)
);
CREATE TABLE turns (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    number bigint NOT NULL,
    history_turn bigint,
    status text NOT NULL CHECK (status IN ('ok', 'failed', 'cancelled')),
    input text NOT NULL,
    reply text,
    context text NOT NULL,
    strategy text NOT NULL,
    params text NOT NULL DEFAULT '{{}}',
    provider text,
    model text,
    tokenizer text,
    estimated_tokens bigint,
    prompt_tokens bigint,
    completion_tokens bigint,
    latency_ms bigint,
    rendered_prompt text,
    error text,
    user_message_id bigint REFERENCES messages(id) ON DELETE SET NULL,
    assistant_message_id bigint REFERENCES messages(id) ON DELETE SET NULL,
    created_at text NOT NULL,
    rendered text,
    {OWNER},
    UNIQUE (session_id, number)
);
CREATE INDEX turns_user_message ON turns (user_message_id);
CREATE INDEX turns_assistant_message ON turns (assistant_message_id);
CREATE TABLE summaries (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    strategy text NOT NULL,
    version bigint NOT NULL,
    text text NOT NULL,
    covered_ids text NOT NULL DEFAULT '[]',
    last_message_id bigint,
    anchors text NOT NULL DEFAULT '[]',
    dropped_anchors text NOT NULL DEFAULT '[]',
    model text,
    created_at text NOT NULL,
    {OWNER},
    UNIQUE (session_id, strategy, version)
);
CREATE TABLE facts (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    scope text NOT NULL CHECK (scope IN ('session', 'user')),
    "user" text,
    session_id bigint REFERENCES sessions(id) ON DELETE CASCADE,
    key text NOT NULL,
    value text NOT NULL,
    source_message_id bigint REFERENCES messages(id) ON DELETE SET NULL,
    source_turn bigint,
    created_at text NOT NULL,
    updated_at text NOT NULL,
    deleted_at text,
    source_session_id bigint REFERENCES sessions(id) ON DELETE SET NULL,
    expires_at text,
    used_at text,
    {OWNER}
);
CREATE INDEX facts_scope ON facts (scope, "user", session_id);
CREATE INDEX facts_session ON facts (session_id);
CREATE INDEX facts_source_message ON facts (source_message_id);
CREATE INDEX facts_source_session ON facts (source_session_id);
CREATE INDEX facts_owner ON facts (owner);
CREATE TABLE fact_history (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    fact_id bigint NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
    key text NOT NULL,
    value text NOT NULL,
    source_session_id bigint REFERENCES sessions(id) ON DELETE SET NULL,
    source_turn bigint,
    stated_at text NOT NULL,
    replaced_at text NOT NULL,
    {OWNER}
);
CREATE INDEX fact_history_fact ON fact_history (fact_id);
CREATE TABLE strategy_state (
    session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    strategy text NOT NULL,
    key text NOT NULL,
    value text NOT NULL,
    {OWNER},
    PRIMARY KEY (session_id, strategy, key)
);
CREATE TABLE session_prompts (
    session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    from_turn bigint NOT NULL,
    system text,
    {OWNER},
    PRIMARY KEY (session_id, from_turn)
);
CREATE TABLE probes (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    after_position bigint NOT NULL,
    question text NOT NULL,
    expect_ids text NOT NULL DEFAULT '[]',
    expect_text text NOT NULL DEFAULT '[]',
    {OWNER}
);
CREATE INDEX probes_session ON probes (session_id, after_position);
CREATE TABLE message_vectors (
    message_id bigint NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    model text NOT NULL,
    dimensions bigint NOT NULL,
    vector bytea NOT NULL,
    context_vector bytea NOT NULL,
    {OWNER},
    PRIMARY KEY (model, message_id)
);
CREATE INDEX message_vectors_message ON message_vectors (message_id);
CREATE TABLE message_words (
    message_id bigint PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    terms tsvector NOT NULL,
    tokens bigint NOT NULL,
    {OWNER}
);
CREATE INDEX message_words_terms ON message_words USING gin (terms);
CREATE INDEX message_words_session ON message_words (session_id);
"""

# BM25 needs the number of entries and their average length, as FTS5 keeps them: one row,
# kept by statement triggers (writers are serialized by the write lock, so it is no hot spot).
WORD_STATISTICS = (
    """
CREATE TABLE word_statistics (
    id bigint PRIMARY KEY CHECK (id = 1),
    entries bigint NOT NULL,
    tokens bigint NOT NULL
)
""",
    """
INSERT INTO word_statistics VALUES (1, 0, 0)
""",
    """
CREATE FUNCTION chatmem_count_added_words() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE word_statistics SET entries = entries + (SELECT count(*) FROM added),
        tokens = tokens + (SELECT coalesce(sum(tokens), 0) FROM added);
    RETURN NULL;
END $$
""",
    """
CREATE FUNCTION chatmem_count_removed_words() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE word_statistics SET entries = entries - (SELECT count(*) FROM removed),
        tokens = tokens - (SELECT coalesce(sum(tokens), 0) FROM removed);
    RETURN NULL;
END $$
""",
    """
CREATE FUNCTION chatmem_count_changed_words() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE word_statistics SET tokens = tokens + (SELECT coalesce(sum(tokens), 0) FROM added)
        - (SELECT coalesce(sum(tokens), 0) FROM removed);
    RETURN NULL;
END $$
""",
    """
CREATE TRIGGER message_words_added AFTER INSERT ON message_words
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT
    EXECUTE FUNCTION chatmem_count_added_words()
""",
    """
CREATE TRIGGER message_words_removed AFTER DELETE ON message_words
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT
    EXECUTE FUNCTION chatmem_count_removed_words()
""",
    """
CREATE TRIGGER message_words_changed AFTER UPDATE ON message_words
    REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT
    EXECUTE FUNCTION chatmem_count_changed_words()
""",
)


@migration
def p001_schema(execute: Execute) -> None:
    """SQLite's schema after m008, with owners, row-level security and session shares."""
    for statement in TABLES.split(";"):
        if statement.strip():
            execute(statement)
    for statement in WORD_STATISTICS:
        execute(statement)
    for statement in _policies("sessions",
                               "EXISTS (SELECT 1 FROM session_shares h WHERE h.session_id ="
                               " sessions.id AND h.grantee = current_user"
                               " AND h.owner = sessions.owner)",
                               "EXISTS (SELECT 1 FROM session_shares h WHERE h.session_id ="
                               " sessions.id AND h.grantee = current_user"
                               " AND h.owner = sessions.owner AND h.mode = 'write')",
                               insert="true", delete="false"):
        execute(statement)
    # Shares refer to nothing but themselves, so no policy can recurse through sessions.
    for statement in _policies("session_shares", "grantee = current_user", "false",
                               insert="EXISTS (SELECT 1 FROM sessions s WHERE"
                               " s.id = session_shares.session_id AND s.owner = current_user)"):
        execute(statement)
    for table, (readable, writable, insertable) in _ACCESS.items():
        for statement in _policies(table, readable, writable, insert=f"({insertable})"):
            execute(statement)
    # Every role may use the tables; the policies decide which rows.
    tables = ", ".join(USER_TABLES)
    quoted = ", ".join(f"'{table}'" for table in USER_TABLES)
    execute(f"GRANT SELECT, INSERT, DELETE ON {tables} TO PUBLIC")
    # Every column but the owner: a role that may write a shared session cannot take it over.
    for table, columns in execute(
            "SELECT table_name, string_agg(quote_ident(column_name), ', ')"
            " FROM information_schema.columns WHERE table_schema = current_schema()"
            f" AND column_name <> 'owner' AND table_name IN ({quoted})"
            " GROUP BY table_name").fetchall():
        execute(f"GRANT UPDATE ({columns}) ON {table} TO PUBLIC")
    execute(f"GRANT SELECT ON chatmem_meta, {BOOKKEEPING} TO PUBLIC")
    execute("GRANT SELECT, UPDATE ON word_statistics TO PUBLIC")
    for table in ("sessions", "messages", "turns", "summaries", "facts", "fact_history",
                  "probes"):
        execute(f"GRANT USAGE ON SEQUENCE {table}_id_seq TO PUBLIC")


# -- p002: vectors the database can rank (pgvector) -------------------------------------------

VECTOR_EXTENSION = "vector"
# The stored blobs are little-endian float16 (numpy's on every platform chatmem runs on);
# halfvec holds exactly those values, so the database ranks what numpy would. A blob with
# an infinity or NaN in it has no copy (pgvector takes neither).
HALVES = """
CREATE FUNCTION chatmem_halves(data bytea) RETURNS real[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN bool_or(e = 31) THEN NULL
                ELSE array_agg((CASE WHEN e = 0 THEN m * power(2::float8, -24)
                                     ELSE (1024 + m) * power(2::float8, e - 25) END)
                               * (1 - 2 * s) ORDER BY i)::real[] END
    FROM (SELECT i, h >> 15 AS s, (h >> 10) & 31 AS e, h & 1023 AS m
          FROM (SELECT i, get_byte(data, 2 * i) | (get_byte(data, 2 * i + 1) << 8) AS h
                FROM generate_series(0, length(data) / 2 - 1) AS i) AS words) AS parts
$$
"""
MOST_DIMENSIONS = 4000
"""The most an HNSW index on halfvec takes (pgvector 0.8); a wider model ranks in numpy."""
EMBED = f"""
CREATE FUNCTION chatmem_embed_vectors() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.embedding := NULL;
    NEW.context_embedding := NULL;
    -- Only a well-formed vector gets a copy; any other blob is stored as given, as on SQLite.
    IF NEW.dimensions BETWEEN 1 AND {MOST_DIMENSIONS}
            AND length(NEW.vector) = 2 * NEW.dimensions
            AND length(NEW.context_vector) = 2 * NEW.dimensions THEN
        NEW.embedding := chatmem_halves(NEW.vector)::halfvec;
        NEW.context_embedding := chatmem_halves(NEW.context_vector)::halfvec;
    END IF;
    RETURN NEW;
END $$
"""


def vectors_possible(execute: Execute) -> bool:
    """Whether this database has pgvector, or this role may create it (it is not a trusted
    extension: a superuser's)."""
    installed, available, superuser = execute(
        "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector'),"
        " EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector'),"
        " current_setting('is_superuser') = 'on'").fetchone()
    return bool(installed or (available and superuser))


@migration
def p002_vectors(execute: Execute) -> None:
    """halfvec copies of each stored vector, kept by a trigger, for pgvector to rank.

    Without pgvector (not installed on the server, or not this role's to create)
    nothing changes: recall ranks the stored arrays in numpy, as on SQLite. The
    copies are derived from the bytea by the trigger, so every writer (a turn,
    a fork, an import, a copy between backends) keeps them without knowing.
    The HNSW indexes are per dimension (a partial index on a cast), made by the
    backend when it first ranks vectors of a new dimension.
    """
    if not vectors_possible(execute):
        return
    execute(f"CREATE EXTENSION IF NOT EXISTS {VECTOR_EXTENSION}")
    execute("ALTER TABLE message_vectors ADD COLUMN embedding halfvec,"
            " ADD COLUMN context_embedding halfvec")
    execute(HALVES)
    execute(EMBED)
    execute("CREATE TRIGGER message_vectors_embed BEFORE UPDATE OF vector, context_vector"
            " OR INSERT ON message_vectors FOR EACH ROW"
            " EXECUTE FUNCTION chatmem_embed_vectors()")
    execute("UPDATE message_vectors SET vector = vector")


@migration
def p003_superseded_turns(execute: Execute) -> None:
    """SQLite's m009: a replaced turn's messages leave memory, the turn names its replacement."""
    execute("ALTER TABLE messages ADD COLUMN superseded bigint NOT NULL DEFAULT 0")
    execute("ALTER TABLE turns ADD COLUMN superseded_by bigint")
    # p001 granted UPDATE column by column; new columns need their own grant.
    execute("GRANT UPDATE (superseded) ON messages TO PUBLIC")
    execute("GRANT UPDATE (superseded_by) ON turns TO PUBLIC")


@migration
def p004_vector_cache(execute: Execute) -> None:
    """SQLite's m010: stored vectors found by the sha256 of the text they embed.

    Keyed per owner, and readable as the message it points to is: a role
    never learns from the cache that somebody else's text was embedded.
    """
    execute(f"""
CREATE TABLE vector_cache (
    model text NOT NULL,
    digest text NOT NULL,
    message_id bigint NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    context bigint NOT NULL,
    {OWNER},
    PRIMARY KEY (owner, model, digest)
)""")
    execute("CREATE INDEX vector_cache_message ON vector_cache (message_id)")
    writable = _through("messages", "m", "vector_cache.message_id",
                        _session_writable("m.session_id"))
    # Whoever may erase the message's vectors (a redaction) may erase its entries.
    for statement in _policies("vector_cache", "false", "false", insert=f"({writable})",
                               delete=writable):
        execute(statement)
    execute("GRANT SELECT, INSERT, DELETE ON vector_cache TO PUBLIC")


@migration
def p005_index_leases(execute: Execute) -> None:
    """SQLite's m011: who embeds a session's backlog, one lease per session and model.

    Readable and writable as its session is: whoever may store the session's
    vectors may take over a lease its holder let expire.
    """
    execute(f"""
CREATE TABLE index_leases (
    session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    model text NOT NULL,
    pid bigint NOT NULL,
    host text NOT NULL,
    heartbeat_at text NOT NULL,
    expires_at text NOT NULL,
    {OWNER},
    PRIMARY KEY (session_id, model)
)""")
    for statement in _policies("index_leases", _session_readable("index_leases.session_id"),
                               _session_writable("index_leases.session_id"),
                               insert=f"({_session_writable('index_leases.session_id')})"):
        execute(statement)
    execute("GRANT SELECT, INSERT, DELETE ON index_leases TO PUBLIC")
    execute("GRANT UPDATE (pid, host, heartbeat_at, expires_at) ON index_leases TO PUBLIC")


@migration
def p006_images(execute: Execute) -> None:
    """SQLite's m012: images attached to messages, once per session by their sha256.

    Readable and writable as their session is, like the session's messages. (Kept apart
    from the row-security migrations being added beside it: renumber on rebase.)
    """
    execute(f"""
CREATE TABLE images (
    session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    digest text NOT NULL,
    mime text NOT NULL,
    width bigint NOT NULL,
    height bigint NOT NULL,
    data bytea NOT NULL,
    created_at text NOT NULL,
    {OWNER},
    PRIMARY KEY (session_id, digest)
)""")
    for statement in _policies("images", _session_readable("images.session_id"),
                               _session_writable("images.session_id"),
                               insert=f"({_session_writable('images.session_id')})"):
        execute(statement)
    execute("GRANT SELECT, INSERT, DELETE ON images TO PUBLIC")


@migration
def p007_sealed_writes(execute: Execute) -> None:
    """Writes sealed like reads (issue 28): every right over a row is its session's.

    Rows move into no other session and change no owner; a share ended ends the rights
    over what was written under it; ids are the database's to give (session ids random)
    and no error tells of a row the role cannot read; the word statistics are per
    session, readable as the session is, written by definer triggers only. The
    statements are in postgres_access, which says what each rule is for.
    """
    postgres_access.seal(execute)


@migration
def p008_session_erasures(execute: Execute) -> None:
    """SQLite's m013: how many times text left a session's memory, for engines kept open."""
    execute("ALTER TABLE sessions ADD COLUMN erasures bigint NOT NULL DEFAULT 0")
    # p001 granted UPDATE column by column; new columns need their own grant.
    execute("GRANT UPDATE (erasures) ON sessions TO PUBLIC")


@migration
def p009_pinned_search_paths(execute: Execute) -> None:
    """No role's temporary table stands in for chatmem's in its functions: each function's
    search path is pinned (postgres_access.pin_search_paths says why)."""
    postgres_access.pin_search_paths(execute)


REINDEXED_AT_ONCE = 500
"""Messages one step of p010 reads: an upgrade's memory stays bounded however long the
history."""


@migration
def p010_folded_words(execute: Execute) -> None:
    """SQLite's m014: index entries as fts.index_text makes them now (marks folded,
    full-width ASCII as ASCII, Thai-like runs as bigrams, each run's last character
    alone), written only for the messages whose terms change. ASCII text is passed over
    in the database (its terms are as they were)."""
    from chatmem import fts
    from chatmem.store.postgres_words import TEXT_SEARCH, fitting_terms, token_count

    last = 0
    while True:
        rows = execute("SELECT id, content FROM messages WHERE id > %s"
                       " AND content ~ '[^\\x01-\\x7f]' ORDER BY id LIMIT %s",
                       (last, REINDEXED_AT_ONCE)).fetchall()
        if not rows:
            return
        changed = [(int(i), fts.index_text(c)) for i, c in rows if fts.indexed_differently(c)]
        # One statement a step: its trigger updates the word statistics once.
        execute("UPDATE message_words w SET terms = to_tsvector("
                f"'{TEXT_SEARCH}', e.terms), tokens = e.tokens FROM unnest(%s::bigint[],"
                " %s::text[], %s::bigint[]) AS e(id, terms, tokens) WHERE w.message_id = e.id",
                ([i for i, _ in changed], [fitting_terms(t) for _, t in changed],
                 [token_count(t) for _, t in changed]))
        last = int(rows[-1][0])
