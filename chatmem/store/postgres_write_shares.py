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

p018 places and dates what a grantee adds: a message or a turn he inserts must be the one
chatmem's client would insert next (the next position and request number, the history's
last turn or the one after it), and a change of `updated_at` by him is the server's now
(retention reads it; his clock or his SQL erased the owner's session, or kept it for good).
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


# p018: what a grantee adds lands where chatmem's own client puts it, dated by the server.
STAMP = ("to_char(statement_timestamp() AT TIME ZONE 'UTC',"
         """ 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"')""")
"""The server's now in chatmem's stored form (timestamps.stamp:
`2026-01-05T08:00:00.000+00:00`), so retention reads and orders it as any other."""

WORK_STAMPED = f"""
CREATE FUNCTION chatmem_stamp_session_work() RETURNS trigger LANGUAGE plpgsql
SET search_path = {{path}} AS $$
BEGIN
    -- Retention erases a session by when it was last used: a grantee's clock (or his SQL)
    -- must not move that back (his owner's session erased) nor forward (kept for good).
    IF OLD.owner <> current_user AND NOT chatmem_exempt()
            AND NEW.updated_at IS DISTINCT FROM OLD.updated_at THEN
        NEW.updated_at := {STAMP};
    END IF;
    RETURN NEW;
END $$
"""

AT_THE_END = """
CREATE FUNCTION chatmem_{table}_at_the_end() RETURNS trigger LANGUAGE plpgsql
SET search_path = {path} AS $$
DECLARE
    session_owner text := (SELECT s.owner FROM sessions s WHERE s.id = NEW.session_id);
    live bigint := coalesce((SELECT m.turn FROM messages m WHERE m.session_id = NEW.session_id
                             AND m.superseded = 0 ORDER BY m.position DESC LIMIT 1), 0);
BEGIN
    -- A session it cannot see: row security refuses the row, saying nothing of the session.
    IF session_owner IS NULL OR session_owner = current_user OR chatmem_exempt() THEN
        RETURN NEW;
    END IF;
    IF {misplaced} THEN
        RAISE EXCEPTION '{table}: a row added to another''s session goes at its end'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$
"""
MISPLACED = {
    # append_messages: the next position; a user message opens the turn after the last one
    # in history (a replaced turn's number is taken again), what follows it stays in it.
    "messages": ("NEW.position IS DISTINCT FROM coalesce((SELECT max(m.position) FROM messages m"
                 " WHERE m.session_id = NEW.session_id), 0) + 1"
                 " OR NEW.turn IS NULL OR NEW.turn NOT IN (greatest(live, 1), live + 1)"),
    # _insert_turn: the next request number; a completed one is at the history's last turn
    # (its messages went in first), a failed or cancelled one at none.
    "turns": ("NEW.number IS DISTINCT FROM coalesce((SELECT max(t.number) FROM turns t"
              " WHERE t.session_id = NEW.session_id), 0) + 1"
              " OR NEW.history_turn IS NOT NULL AND NEW.history_turn <> live"),
}


def placed_statements(schema: str) -> Iterator[str]:
    """p018's statements (postgres_schema says what they are for)."""
    path = f"pg_catalog, {schema}, pg_temp"
    yield WORK_STAMPED.format(path=path)
    yield "REVOKE ALL ON FUNCTION chatmem_stamp_session_work() FROM PUBLIC"
    yield ("CREATE TRIGGER sessions_work_stamped BEFORE UPDATE OF updated_at ON sessions"
           " FOR EACH ROW EXECUTE FUNCTION chatmem_stamp_session_work()")
    for table, misplaced in MISPLACED.items():
        yield AT_THE_END.format(table=table, path=path, misplaced=misplaced)
        yield f"REVOKE ALL ON FUNCTION chatmem_{table}_at_the_end() FROM PUBLIC"
        yield (f"CREATE TRIGGER {table}_at_the_end BEFORE INSERT ON {table} FOR EACH ROW"
               f" EXECUTE FUNCTION chatmem_{table}_at_the_end()")


def place_grantee_writes(execute: Execute) -> None:
    schema = execute("SELECT quote_ident(current_schema())").fetchone()[0]
    for statement in placed_statements(schema):
        execute(statement)
