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
only the session's owner changes or deletes its images and probes.

What he hid before is shown again (`SHOWN_AGAIN`): chatmem leaves a message hidden only
while a message of its role holds its turn in history (its replacement's, same number), or
at the session's last turn (a /retry under way, or one a crash left); a hidden message of an
earlier turn with no such replacement was never chatmem's, and its owner has no command to
show it. Every other row stays as it was.
"""

from __future__ import annotations

from collections.abc import Iterator

from chatmem.store.postgres_access import RULES, unforced
from chatmem.store.postgres_write_shares import OWN, Execute, _run_in_schema

SHOWN_AGAIN = """
UPDATE messages m SET superseded = 0 WHERE m.superseded <> 0
AND m.turn < (SELECT max(l.turn) FROM messages l WHERE l.session_id = m.session_id)
AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.session_id = m.session_id
                AND r.turn = m.turn AND r.role = m.role AND r.superseded = 0)
"""

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
        # Seen as before, so a change of a row one reads is refused aloud (42501), never
        # a silent "UPDATE 0" (as p007's policies refuse a read-only share's).
        yield (f"CREATE POLICY {table}_update ON {table} FOR UPDATE USING ({RULES[table][0]})"
               f" WITH CHECK ({OWN})")
        yield f"CREATE POLICY {table}_delete ON {table} FOR DELETE USING ({OWN})"


def last_turn_only(execute: Execute) -> None:
    with unforced(execute, ["messages"]):  # every person's rows, as p007 reads them
        execute(SHOWN_AGAIN)
    _run_in_schema(execute, statements)
