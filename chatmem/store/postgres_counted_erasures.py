"""p029: an erasure a write share's grantee counts is one he made.

`sessions.erasures` tells every engine chatting in a session that text left its memory: a
turn whose context was built before the count moved is refused ("text left this session's
memory while the reply came … send it again"; store.turns._check_not_erased). p008 let
every role that writes a session count one, and p018 made his count one at a time, but he
still counted one by plain SQL (`UPDATE sessions SET erasures = erasures + 1`) with nothing
erased: each failed the owner's turn then under way, her paid-for reply not stored, and a
loop of them kept her from storing any.

chatmem's own client counts an erasure in the transaction that made it (steps.count_erasure
after store.turns.hide_turn / show_turn, a purge's apply_rewrite). So now every row of a
session that a role other than its owner changes or deletes (a message, a turn, a summary,
a strategy's state, a session fact, a fact's earlier value stated there) leaves a mark
(`chatmem_erasing`: the session, the transaction), and an erasure such a role counts stands
only where the same transaction left one; any other is not counted (the count stays as it
was, as a hide of a turn already hidden erases nothing either). The marks are written by
definer triggers only, no role reads or writes the table, and a transaction's mark goes
when its erasure is counted, or the next transaction marks (those of ended transactions).

The owner's own count, the tables' owner's and an exempt role's are as before.
"""

from __future__ import annotations

from collections.abc import Iterator

from chatmem.store.postgres_write_shares import STAMP, Execute, _run_in_schema

MARKS = "chatmem_erasing"

CREATE_MARKS = f"""
CREATE TABLE {MARKS} (
    session_id bigint NOT NULL,
    xact xid8 NOT NULL,
    PRIMARY KEY (session_id, xact)
)
"""

SESSION_OF = {
    "messages": "session_id",
    "turns": "session_id",
    "summaries": "session_id",
    "strategy_state": "session_id",
    "facts": "session_id",
    "fact_history": "source_session_id",
}
"""The tables whose changed or deleted rows take text out of a session's memory → the
column naming it. Read from the row itself: the definer reads no row (row security is
forced on the tables' owner too), and a row's `owner` is its session's owner (p007)."""

NOTE = """
CREATE FUNCTION chatmem_note_{table}_erasing() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = {path} AS $$
BEGIN
    -- A definer: session_user is who connected (current_user is this function's owner).
    -- The owner's own changes need no mark (nor her session's cascade), nor an exempt
    -- role's (an administrator removing a user); one per session and transaction is enough.
    IF OLD.{session} IS NOT NULL AND OLD.owner IS DISTINCT FROM session_user::text
            AND NOT coalesce((SELECT r.rolsuper OR r.rolbypassrls FROM pg_roles r
                              WHERE r.rolname = session_user), false) THEN
        INSERT INTO {marks} VALUES (OLD.{session}, pg_current_xact_id())
        ON CONFLICT DO NOTHING;
        -- A transaction's first mark takes those of transactions that ended: a change
        -- counting no erasure (his turn's fact update) leaves its mark behind.
        IF FOUND THEN
            DELETE FROM {marks} WHERE xact < pg_snapshot_xmin(pg_current_snapshot());
        END IF;
    END IF;
    RETURN NULL;
END $$
"""

ERASED_HERE = f"""
CREATE FUNCTION chatmem_erased_here(session bigint) RETURNS boolean LANGUAGE plpgsql
SECURITY DEFINER SET search_path = {{path}} AS $$
DECLARE
    erased boolean;
BEGIN
    -- This transaction changed a row of the session: its mark, taken; marks of transactions
    -- that ended are taken with it (an in-progress one's is not seen).
    DELETE FROM {MARKS} WHERE session_id = session AND xact = pg_current_xact_id();
    erased := FOUND;
    DELETE FROM {MARKS} WHERE xact < pg_snapshot_xmin(pg_current_snapshot());
    RETURN erased;
END $$
"""

# p018's function, its erasure rule narrowed: counted once, and only with what it erases.
WORK_STAMPED = f"""
CREATE OR REPLACE FUNCTION chatmem_stamp_session_work() RETURNS trigger LANGUAGE plpgsql
SET search_path = {{path}} AS $$
BEGIN
    IF OLD.owner <> current_user AND NOT chatmem_exempt()
            AND NEW.updated_at IS DISTINCT FROM OLD.updated_at THEN
        NEW.updated_at := {STAMP};
    END IF;
    -- His /undo, /retry or purge counts one erasure in the transaction that erased
    -- (chatmem_erasing); a count with nothing erased failed the owner's turn under way.
    IF OLD.owner <> current_user AND NOT chatmem_exempt()
            AND NEW.erasures IS DISTINCT FROM OLD.erasures THEN
        IF chatmem_erased_here(OLD.id) THEN
            NEW.erasures := OLD.erasures + 1;
        ELSE
            NEW.erasures := OLD.erasures;
        END IF;
    END IF;
    RETURN NEW;
END $$
"""


def statements(schema: str) -> Iterator[str]:
    path = f"pg_catalog, {schema}, pg_temp"
    yield CREATE_MARKS
    yield f"REVOKE ALL ON {MARKS} FROM PUBLIC"
    yield f"CREATE INDEX {MARKS}_xact ON {MARKS} (xact)"
    for table, session in SESSION_OF.items():
        yield NOTE.format(table=table, path=path, session=session, marks=MARKS)
        yield f"REVOKE ALL ON FUNCTION chatmem_note_{table}_erasing() FROM PUBLIC"
        yield (f"CREATE TRIGGER {table}_erasing AFTER UPDATE ON {table} FOR EACH ROW"
               f" WHEN (OLD.* IS DISTINCT FROM NEW.*)"
               f" EXECUTE FUNCTION chatmem_note_{table}_erasing()")
        yield (f"CREATE TRIGGER {table}_erased AFTER DELETE ON {table} FOR EACH ROW"
               f" EXECUTE FUNCTION chatmem_note_{table}_erasing()")
    yield ERASED_HERE.format(path=path)
    yield WORK_STAMPED.format(path=path)


def count_only_erasures(execute: Execute) -> None:
    _run_in_schema(execute, statements)
