"""Row-level security of a PostgreSQL history: which rows a role reads and writes. A
session is its owner's and the roles it is shared with; every other row follows the row it
belongs to (a message its session, a fact's history its fact). chatmem.store.postgres_schema
applies these policies to each table it creates."""

from __future__ import annotations

# Visible sessions are the readable ones (sessions has its own policy); a writable one
# is owned, or shared for writing by its owner (a share made by anyone else counts for nothing).
_WRITABLE = ("(s.owner = current_user OR EXISTS (SELECT 1 FROM session_shares h"
             " WHERE h.session_id = s.id AND h.grantee = current_user"
             " AND h.owner = s.owner AND h.mode = 'write'))")


def session_readable(column: str) -> str:
    return f"EXISTS (SELECT 1 FROM sessions s WHERE s.id = {column})"


def session_writable(column: str) -> str:
    return f"EXISTS (SELECT 1 FROM sessions s WHERE s.id = {column} AND {_WRITABLE})"


def through(table: str, alias: str, key: str, condition: str) -> str:
    """A row is readable (writable) when the row it belongs to in `table` is."""
    return f"EXISTS (SELECT 1 FROM {table} {alias} WHERE {alias}.id = {key} AND {condition})"


# table → (what makes a row readable, writable, insertable), besides owning it.
ACCESS: dict[str, tuple[str, str, str]] = {
    table: (session_readable(f"{table}.session_id"), session_writable(f"{table}.session_id"),
            session_writable(f"{table}.session_id"))
    for table in ("messages", "turns", "summaries", "strategy_state", "session_prompts",
                  "probes", "message_words")
}
# A user-scope fact (no session) is its owner's alone.
ACCESS["facts"] = (f"facts.session_id IS NOT NULL AND {session_readable('facts.session_id')}",
                    f"facts.session_id IS NOT NULL AND {session_writable('facts.session_id')}",
                    f"facts.session_id IS NULL OR {session_writable('facts.session_id')}")
for _table in ("token_counts", "message_vectors"):
    _writable = through("messages", "m", f"{_table}.message_id",
                         session_writable("m.session_id"))
    ACCESS[_table] = (through("messages", "m", f"{_table}.message_id", "true"),
                       _writable, _writable)
_writable = through("facts", "f", "fact_history.fact_id",
                     "(f.owner = current_user OR f.session_id IS NOT NULL"
                     f" AND {session_writable('f.session_id')})")
ACCESS["fact_history"] = (through("facts", "f", "fact_history.fact_id", "true"),
                           _writable, _writable)

USER_TABLES = ("sessions", "session_shares", *ACCESS)


def policies(table: str, readable: str, writable: str, *, insert: str,
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
