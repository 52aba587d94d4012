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

Its first tables are in postgres_tables, the row-level policies in postgres_policies. A
released migration is never edited: a schema change is a new function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chatmem.store import postgres_access, postgres_write_shares
from chatmem.store.migrations import MigrationList
from chatmem.store.postgres_policies import (
    ACCESS,
    USER_TABLES,
    policies,
    session_readable,
    session_writable,
    through,
)
from chatmem.store.postgres_tables import OWNER, TABLES, WORD_STATISTICS

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


@migration
def p001_schema(execute: Execute) -> None:
    """SQLite's schema after m008, with owners, row-level security and session shares."""
    for statement in TABLES.split(";"):
        if statement.strip():
            execute(statement)
    for statement in WORD_STATISTICS:
        execute(statement)
    for statement in policies("sessions",
                               "EXISTS (SELECT 1 FROM session_shares h WHERE h.session_id ="
                               " sessions.id AND h.grantee = current_user"
                               " AND h.owner = sessions.owner)",
                               "EXISTS (SELECT 1 FROM session_shares h WHERE h.session_id ="
                               " sessions.id AND h.grantee = current_user"
                               " AND h.owner = sessions.owner AND h.mode = 'write')",
                               insert="true", delete="false"):
        execute(statement)
    # Shares refer to nothing but themselves, so no policy can recurse through sessions.
    for statement in policies("session_shares", "grantee = current_user", "false",
                               insert="EXISTS (SELECT 1 FROM sessions s WHERE"
                               " s.id = session_shares.session_id AND s.owner = current_user)"):
        execute(statement)
    for table, (readable, writable, insertable) in ACCESS.items():
        for statement in policies(table, readable, writable, insert=f"({insertable})"):
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
    writable = through("messages", "m", "vector_cache.message_id",
                        session_writable("m.session_id"))
    # Whoever may erase the message's vectors (a redaction) may erase its entries.
    for statement in policies("vector_cache", "false", "false", insert=f"({writable})",
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
    for statement in policies("index_leases", session_readable("index_leases.session_id"),
                               session_writable("index_leases.session_id"),
                               insert=f"({session_writable('index_leases.session_id')})"):
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
    for statement in policies("images", session_readable("images.session_id"),
                               session_writable("images.session_id"),
                               insert=f"({session_writable('images.session_id')})"):
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

    _index_again(execute, fts.indexed_differently)


@migration
def p011_words_folded_again(execute: Execute) -> None:
    """SQLite's m016: index entries as fts.index_text makes them now (Vietnamese and Greek
    letters without their accents, no character that draws nothing inside a word),
    written only for the messages that may hold one; ASCII text is passed over in the
    database."""
    from chatmem import fts

    _index_again(execute, fts.folded_differently_since_m016)


@migration
def p012_probes_before_prompt(execute: Execute) -> None:
    """SQLite's m017: whether a probe was asked before the system prompt change after its
    message."""
    execute("ALTER TABLE probes ADD COLUMN before_prompt bigint NOT NULL DEFAULT 0")
    # p007 granted INSERT and UPDATE column by column; a new column needs its own grant.
    execute("GRANT INSERT (before_prompt), UPDATE (before_prompt) ON probes TO PUBLIC")


@migration
def p013_profile_facts_have_no_session(execute: Execute) -> None:
    """A user-profile fact (scope 'user') has no session: a CHECK, so no role makes one.

    Row security makes a fact with a session its session's owner's, readable through a
    share; marked scope 'user', a sharer's row read as the reader's own profile (sent in
    every context, listed as their /remember, not theirs to forget). chatmem never wrote
    such a row (upsert_fact drops the session of a profile fact, forks copy session facts
    only): one found is made what row security already took it for, a fact of the session
    it names, kept with its owner and history. (A session fact without a session reaches
    no context and is its writer's alone: left as it is.)"""
    # Unforced while rows are changed: a migrating owner who is not a superuser reads every
    # row (as p007 does); the constraint is checked on every row whoever runs it.
    execute("ALTER TABLE facts NO FORCE ROW LEVEL SECURITY")
    execute("UPDATE facts SET scope = 'session', \"user\" = NULL"
            " WHERE scope = 'user' AND session_id IS NOT NULL")
    execute("ALTER TABLE facts ADD CONSTRAINT facts_profile_without_session"
            " CHECK (scope <> 'user' OR session_id IS NULL)")
    execute("ALTER TABLE facts FORCE ROW LEVEL SECURITY")


MOST_TOKENS = 2_147_483_647
"""The most tokens one word entry may count (BM25's length of a message). A token is at least
one character but one character, ㍿ (3 bytes), becomes four CJK tokens: a text PostgreSQL
stores (at most 1 GB) counts fewer than this. Bounded, no role's entries overflow a sum of
the others' (2^32 entries of this many tokens would be needed)."""


@migration
def p014_word_tokens_bounded(execute: Execute) -> None:
    """A word entry counts 0 to MOST_TOKENS tokens: a CHECK, so no role's entries in a session
    it shares break (bigint out of range) or skew the readers' word scores without bound.

    UPDATE of `tokens` stays granted: a purge writes a message's entry again (an upsert).
    An entry found out of bounds is counted again from its message's text."""
    from chatmem import fts
    from chatmem.store.postgres_words import token_count

    # Unforced while rows are read and changed (see p013).
    for table in ("messages", "message_words"):
        execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
    rows = execute("SELECT w.message_id, m.content FROM message_words w JOIN messages m"
                   " ON m.id = w.message_id WHERE w.tokens NOT BETWEEN 0 AND %s",
                   (MOST_TOKENS,)).fetchall()
    if rows:  # one statement: its trigger corrects the word statistics once
        execute("UPDATE message_words w SET tokens = e.tokens FROM unnest(%s::bigint[],"
                " %s::bigint[]) AS e(id, tokens) WHERE w.message_id = e.id",
                ([int(i) for i, _ in rows],
                 [min(token_count(fts.index_text(c)), MOST_TOKENS) for _, c in rows]))
    execute("ALTER TABLE message_words ADD CONSTRAINT message_words_tokens_bounded"
            f" CHECK (tokens BETWEEN 0 AND {MOST_TOKENS})")
    for table in ("messages", "message_words"):
        execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")


@migration
def p015_write_shares_keep_what_is_written(execute: Execute) -> None:
    """A write share adds to a session: its grantee deletes none of its messages and turns
    and changes only what replacing the last turn and a purge need (postgres_write_shares)."""
    postgres_write_shares.narrow(execute)


def _index_again(execute: Execute, differs: Callable[[str], bool]) -> None:
    """Write the word entries of the non-ASCII messages whose terms `differs` says changed,
    as fts.index_text makes them now, REINDEXED_AT_ONCE messages a step."""
    from chatmem import fts
    from chatmem.store.postgres_words import TEXT_SEARCH, fitting_terms, token_count

    last = 0
    while True:
        rows = execute("SELECT id, content FROM messages WHERE id > %s"
                       " AND content ~ '[^\\x01-\\x7f]' ORDER BY id LIMIT %s",
                       (last, REINDEXED_AT_ONCE)).fetchall()
        if not rows:
            return
        changed = [(int(i), fts.index_text(c)) for i, c in rows if differs(c)]
        # One statement a step: its trigger updates the word statistics once.
        execute("UPDATE message_words w SET terms = to_tsvector("
                f"'{TEXT_SEARCH}', e.terms), tokens = e.tokens FROM unnest(%s::bigint[],"
                " %s::text[], %s::bigint[]) AS e(id, terms, tokens) WHERE w.message_id = e.id",
                ([i for i, _ in changed], [fitting_terms(t) for _, t in changed],
                 [token_count(t) for _, t in changed]))
        last = int(rows[-1][0])
