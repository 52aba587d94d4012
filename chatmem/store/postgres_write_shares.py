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

p017 does the same for the session itself: its settings (strategy, params, provider, model,
system prompt, tokenizer), like its name, retention and profile since p007, are its owner's,
and chatmem no longer saves a grantee's (a grantee's choices hold for his run). A grantee
changes of a session row only what his ordinary work moves (`SESSION_WORK`), and writes none
of its prompt history (`session_prompts`), which only changes with the settings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from chatmem.store.postgres_access import shared

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


SESSION_WORK = ("updated_at", "erasures")
"""The only columns of a session a role that does not own it changes: storing his turn moves
`updated_at`; his /undo, /retry or a purge there counts an erasure (steps.count_erasure)."""

# p007's function, its columns listed the other way round: whatever is not the grantee's work
# (a column added later too) is the owner's. The search path is pinned as p009 pins it.
OWNERS_RIGHTS = """
CREATE OR REPLACE FUNCTION chatmem_keep_owners_rights() RETURNS trigger LANGUAGE plpgsql
SET search_path = {path} AS $$
BEGIN
    IF OLD.owner <> current_user AND NOT chatmem_exempt()
            AND (to_jsonb(NEW) - TG_ARGV) IS DISTINCT FROM (to_jsonb(OLD) - TG_ARGV) THEN
        RAISE EXCEPTION 'only its owner changes a session''s name, settings, retention or profile'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$
"""
OWN = "owner = current_user"


def owners_settings(schema: str) -> Iterator[str]:
    """p017's statements. `session_prompts` rows are their session's owner's (a trigger sets
    `owner` on INSERT), so `owner = current_user` is "the session is mine"."""
    yield OWNERS_RIGHTS.format(path=f"pg_catalog, {schema}, pg_temp")
    yield "DROP TRIGGER sessions_owners_rights ON sessions"
    arguments = ", ".join(f"'{column}'" for column in SESSION_WORK)
    yield ("CREATE TRIGGER sessions_owners_rights BEFORE UPDATE ON sessions FOR EACH ROW"
           f" EXECUTE FUNCTION chatmem_keep_owners_rights({arguments})")
    for command in ("insert", "update", "delete"):
        yield f"DROP POLICY session_prompts_{command} ON session_prompts"
    yield f"CREATE POLICY session_prompts_insert ON session_prompts FOR INSERT WITH CHECK ({OWN})"
    # USING as reading: a grantee's UPDATE of a row he reads is refused, not skipped (p007).
    readable = shared("session_prompts.session_id", "session_prompts.owner", write=False)
    yield ("CREATE POLICY session_prompts_update ON session_prompts FOR UPDATE"
           f" USING ({OWN} OR {readable}) WITH CHECK ({OWN})")
    yield f"CREATE POLICY session_prompts_delete ON session_prompts FOR DELETE USING ({OWN})"


def seal_settings(execute: Execute) -> None:
    schema = execute("SELECT quote_ident(current_schema())").fetchone()[0]
    for statement in owners_settings(schema):
        execute(statement)
