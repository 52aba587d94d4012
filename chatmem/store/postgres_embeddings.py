"""Vectors the database can rank: p002 (pgvector), run in the order postgres_schema lists.

The stored blobs stay what every reader reads; halfvec copies beside them are made by a
trigger, for pgvector's HNSW indexes (postgres_vectors ranks with them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Execute = Callable[..., Any]
"""Runs one statement, with its parameters (%s) if any, and returns its cursor (psycopg's
Connection.execute)."""

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
