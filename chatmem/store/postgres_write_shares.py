"""What a write share lets its grantee change of what a session already holds: p015.

p007 gave a write-share grantee every right the owner has over a session's messages and
turns, so by plain SQL he could rewrite or delete the owner's past messages, which are
append-only. chatmem itself changes a stored message or turn of a session it does not own
only to replace the session's last turn (/retry and /edit-last, also a regenerate through
`serve`, which may be a turn its owner took: `messages.superseded`, `turns.superseded_by`)
and, purging a fact of the grantee's own profile, to mask its line in the stored contexts
of turns he took there (`turns.context`, `rendered_prompt`, `rendered`); it deletes one only
with its session (a cascade, which row security does not stop). So now:

- a message or a turn is deleted by its owner only (the session's owner);
- anyone else (a grantee) changes only the columns above: any other change of a row he does
  not own is refused with an error, as a read-only row's is.

The tables' owner (who could switch row security off anyway), superusers and BYPASSRLS
roles are not held back: a foreign key's action (`ON DELETE SET NULL` of a turn's
messages) runs as the tables' owner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

Execute = Callable[..., Any]

SHARED_CHANGES = {
    "messages": ("superseded",),
    "turns": ("superseded_by", "context", "rendered_prompt", "rendered"),
}
"""Per table, the only columns a role changes in a row it does not own."""

KEEP_WRITTEN = """
CREATE FUNCTION chatmem_keep_written_rows() RETURNS trigger LANGUAGE plpgsql
SET search_path = {path} AS $$
BEGIN
    -- TG_ARGV: the columns another role may change; every other column must stay as it was.
    IF OLD.owner <> current_user AND NOT chatmem_exempt()
            AND current_user <> (SELECT c.relowner::regrole::text FROM pg_class c
                                 WHERE c.oid = TG_RELID)
            AND (to_jsonb(NEW) - TG_ARGV) IS DISTINCT FROM (to_jsonb(OLD) - TG_ARGV) THEN
        RAISE EXCEPTION '%: only the session''s owner changes what it holds', TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$
"""


def statements(schema: str) -> Iterator[str]:
    """`schema`: chatmem's (quoted), where the function finds chatmem_exempt."""
    yield KEEP_WRITTEN.format(path=f"pg_catalog, {schema}, pg_temp")
    yield "REVOKE ALL ON FUNCTION chatmem_keep_written_rows() FROM PUBLIC"
    for table, columns in SHARED_CHANGES.items():
        yield f"DROP POLICY IF EXISTS {table}_delete ON {table}"
        yield (f"CREATE POLICY {table}_delete ON {table} FOR DELETE"
               " USING (owner = current_user)")
        arguments = ", ".join(f"'{column}'" for column in columns)
        yield (f"CREATE TRIGGER {table}_keep_written BEFORE UPDATE ON {table} FOR EACH ROW"
               f" EXECUTE FUNCTION chatmem_keep_written_rows({arguments})")


def narrow(execute: Execute) -> None:
    schema = execute("SELECT quote_ident(current_schema())").fetchone()[0]
    for statement in statements(schema):
        execute(statement)
