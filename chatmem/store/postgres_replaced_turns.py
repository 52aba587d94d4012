"""p028: what a write share's grantee takes out of the owner's history.

p015 left a grantee `messages.superseded` and `turns.superseded_by` of the owner's rows, for
replacing the session's last turn (/retry, /edit-last, a regenerate through `serve`:
store.turns.hide_turn, commit_turn(supersedes=…)), and p006 gave him every right over the
session's images and eval probes. By plain SQL he set `superseded = 1` on any message of
hers: her next context, her recall, her exports and her forks left out "I live in Hangzhou."
(her `inspect --next` broke on the messages it found missing), and he deleted her images (or
rewrote their bytes, which then fail their sha256 and read as none) and her probes, for
good. chatmem's own client changes neither column of any turn but the last, and never
changes nor deletes an image or a probe (the images of a session go with it, a cascade row
security does not stop).

So now a role that does not own the row changes `superseded` only of a message of the
session's last turn in history (its highest turn number, replaced messages counted, as
store.turns.replaceable_turn reads it), and `superseded_by` only of a turn at that number;
only the session's owner changes or deletes its images and probes. Rows are not rewritten:
a message hidden before this stays hidden until its owner shows it.
"""

from __future__ import annotations

from collections.abc import Iterator

from chatmem.store.postgres_write_shares import OWN, Execute, _run_in_schema

LAST_TURN_ONLY = """
CREATE FUNCTION chatmem_replaces_last_turn_only() RETURNS trigger LANGUAGE plpgsql
SET search_path = {path} AS $$
BEGIN
    -- TG_ARGV[0]: the column of the row's turn number (messages.turn, turns.history_turn).
    IF OLD.owner <> current_user AND NOT chatmem_exempt()
            AND current_user <> (SELECT c.relowner::regrole::text FROM pg_class c
                                 WHERE c.oid = TG_RELID)
            AND (to_jsonb(OLD) ->> TG_ARGV[0])::bigint IS DISTINCT FROM
                (SELECT max(m.turn) FROM messages m WHERE m.session_id = OLD.session_id) THEN
        RAISE EXCEPTION '%: only the session''s owner takes an earlier turn out of its history',
            TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$
"""
REPLACED = {"messages": ("superseded", "turn"), "turns": ("superseded_by", "history_turn")}
"""Per table: the column that takes a row out of history, and its row's turn number."""
OWNERS_ONLY = ("images", "probes")
"""Tables whose rows in a session only its owner changes or deletes."""


def statements(schema: str) -> Iterator[str]:
    yield LAST_TURN_ONLY.format(path=f"pg_catalog, {schema}, pg_temp")
    yield "REVOKE ALL ON FUNCTION chatmem_replaces_last_turn_only() FROM PUBLIC"
    for table, (column, turn) in REPLACED.items():
        yield (f"CREATE TRIGGER {table}_last_turn_only BEFORE UPDATE OF {column} ON {table}"
               f" FOR EACH ROW WHEN (OLD.{column} IS DISTINCT FROM NEW.{column})"
               f" EXECUTE FUNCTION chatmem_replaces_last_turn_only('{turn}')")
    for table in OWNERS_ONLY:
        for command in ("update", "delete"):
            yield f"DROP POLICY {table}_{command} ON {table}"
        yield (f"CREATE POLICY {table}_update ON {table} FOR UPDATE USING ({OWN})"
               f" WITH CHECK ({OWN})")
        yield f"CREATE POLICY {table}_delete ON {table} FOR DELETE USING ({OWN})"


def last_turn_only(execute: Execute) -> None:
    _run_in_schema(execute, statements)
