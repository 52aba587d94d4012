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
What he adds is the server's to date too (a message's `created_at` and `gap_s`, a turn's
`created_at`), a turn's JSON columns must read as chatmem reads them, an erasure he counts
is one (`erasures` + 1, whatever he wrote), and a turn's context he rewrites (a purge of a
fact, `SHARED_CHANGES`) may only have fact lines masked: a line he wrote there broke every
read of the owner's session (an unreadable time, a NaN pause, context that is not JSON, the
largest erasure count) or had her /retry send files she never attached.
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


def _run_in_schema(execute: Execute, statements_for: Callable[[str], Iterator[str]]) -> None:
    """Run a migration's statements, made for chatmem's schema (quoted) as they name it."""
    schema = execute("SELECT quote_ident(current_schema())").fetchone()[0]
    for statement in statements_for(schema):
        execute(statement)


def narrow(execute: Execute) -> None:
    _run_in_schema(execute, statements)


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
    _run_in_schema(execute, owners_settings)


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
    -- His /undo, /retry or purge counts one erasure (steps.count_erasure): any other count
    -- (the largest bigint) broke the owner's next /retry and purge.
    IF OLD.owner <> current_user AND NOT chatmem_exempt()
            AND NEW.erasures IS DISTINCT FROM OLD.erasures THEN
        NEW.erasures := OLD.erasures + 1;
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
    {dated}
    RETURN NEW;
END $$
"""
DATED = {
    # The server's now, and the pause since the message before it as recall.pause draws it
    # (steps.append_messages): a time chatmem cannot read, or a NaN pause, broke every read
    # of the session (ask, show, export).
    "messages": f"""NEW.created_at := {STAMP};
    NEW.gap_s := chatmem_pause((SELECT m.created_at FROM messages m
                                WHERE m.session_id = NEW.session_id
                                AND m.position = NEW.position - 1), NEW.created_at);""",
    "turns": f"""NEW.created_at := {STAMP};
    IF NOT chatmem_turn_json(NEW.context, NEW.params, NEW.rendered, NEW.session_id) THEN
        RAISE EXCEPTION 'turns: a turn added to another''s session holds JSON chatmem reads'
            USING ERRCODE = 'check_violation';
    END IF;""",
}
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


PAUSE = r"""
CREATE FUNCTION chatmem_pause(before text, at text) RETURNS double precision
LANGUAGE plpgsql STABLE SET search_path = {path} AS $$
BEGIN
    -- recall.pause: none is drawn from a time without a zone, or one that cannot be read.
    IF before IS NULL OR before !~ '\d[T ]\d\d.*([Zz]|[+-]\d\d(:?\d\d(:?\d\d(\.\d+)?)?)?)$' THEN
        RETURN 'Infinity';
    END IF;
    RETURN extract(epoch FROM at::timestamptz - before::timestamptz);
EXCEPTION WHEN data_exception THEN
    RETURN 'Infinity';
END $$
"""

READ_JSON = r"""
CREATE FUNCTION chatmem_read_json(value text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE
SET search_path = {path} AS $$
BEGIN
    -- What Python's json reads (stored_values.stored_json) as jsonb, NULL for what it does
    -- not: json.dumps writes NaN and ±Infinity, and \u0000, which jsonb lacks (read here as
    -- 0 and a space); nested past MAX_DEPTH Python's recursion limit may refuse it.
    RETURN (SELECT CASE WHEN jsonb_path_exists(j, 'strict $.**{{{depth}}}') THEN NULL ELSE j END
            FROM (SELECT replace(regexp_replace(value,
                    '(?<![\w.+-])(NaN|-?Infinity)(?![\w.])', '0', 'g'),
                    '\u0000', '\u0020')::jsonb AS j) AS parsed);
EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
    RETURN NULL;
END $$
"""
MAX_DEPTH = 100
"""Far deeper than chatmem nests a context, far shallower than Python's recursion limit."""

TURN_JSON = r"""
CREATE FUNCTION chatmem_turn_json(context text, params text, rendered text, session bigint)
RETURNS boolean LANGUAGE plpgsql STABLE SET search_path = {path} AS $$
DECLARE
    pieces jsonb := chatmem_read_json(rendered);
    piece jsonb;
    last bigint := coalesce((SELECT max(m.position) FROM messages m
                             WHERE m.session_id = session), 0);
BEGIN
    -- TurnRecord.from_row: two objects. rendered.expand: text, and runs of the session's
    -- stored messages with the template's text between their roles (a run far past its
    -- messages kept the owner's inspect expanding for ever).
    IF jsonb_typeof(chatmem_read_json(context)) IS DISTINCT FROM 'object'
            OR jsonb_typeof(chatmem_read_json(params)) IS DISTINCT FROM 'object'
            OR rendered IS NOT NULL AND jsonb_typeof(pieces) IS DISTINCT FROM 'array' THEN
        RETURN false;
    END IF;
    FOR piece IN SELECT value FROM jsonb_array_elements(coalesce(pieces, '[]')) LOOP
        CONTINUE WHEN jsonb_typeof(piece) = 'string';
        IF jsonb_typeof(piece) <> 'object'
                OR coalesce(piece ->> 'from', '') !~ '^\d{{1,18}}$'
                OR coalesce(piece ->> 'to', '') !~ '^\d{{1,18}}$'
                OR NOT (piece ->> 'from')::bigint BETWEEN 1 AND (piece ->> 'to')::bigint
                OR (piece ->> 'to')::bigint > last
                OR jsonb_typeof(piece -> 'gaps') IS DISTINCT FROM 'object'
                OR jsonb_path_exists(piece -> 'gaps', 'strict $.* ? (@.type() != "string")') THEN
            RETURN false;
        END IF;
    END LOOP;
    RETURN true;
END $$
"""

ONLY_MASKED = r"""
CREATE FUNCTION chatmem_only_masked(was text, is_now text) RETURNS boolean LANGUAGE plpgsql
IMMUTABLE SET search_path = {path} AS $$
DECLARE
    was_read jsonb := chatmem_read_json(was);
    now_read jsonb := chatmem_read_json(is_now);
    a jsonb;
    b jsonb;
    lines_was text[];
    lines_now text[];
BEGIN
    -- memory.facts.scrub_fact: in the facts parts, a purged fact's lines become its marker;
    -- nothing else of the context changes (its files part is what /retry sends again).
    IF was_read IS NULL OR jsonb_typeof(now_read) IS DISTINCT FROM 'object' THEN
        RETURN false;
    ELSIF was_read = now_read THEN
        RETURN true;
    ELSIF (was_read - 'parts') <> (now_read - 'parts')
            OR jsonb_typeof(was_read -> 'parts') IS DISTINCT FROM 'array'
            OR jsonb_typeof(now_read -> 'parts') IS DISTINCT FROM 'array'
            OR jsonb_array_length(was_read -> 'parts')
               <> jsonb_array_length(now_read -> 'parts') THEN
        RETURN false;
    END IF;
    FOR i IN 0 .. jsonb_array_length(was_read -> 'parts') - 1 LOOP
        a := was_read -> 'parts' -> i;
        b := now_read -> 'parts' -> i;
        CONTINUE WHEN a = b;
        IF a ->> 'kind' IS DISTINCT FROM 'facts' OR (a - 'messages') <> (b - 'messages')
                OR jsonb_typeof(a -> 'messages') IS DISTINCT FROM 'array'
                OR jsonb_typeof(b -> 'messages') IS DISTINCT FROM 'array'
                OR jsonb_array_length(a -> 'messages') <> jsonb_array_length(b -> 'messages') THEN
            RETURN false;
        END IF;
        FOR j IN 0 .. jsonb_array_length(a -> 'messages') - 1 LOOP
            CONTINUE WHEN a -> 'messages' -> j = b -> 'messages' -> j;
            IF (a -> 'messages' -> j) - 'content' <> (b -> 'messages' -> j) - 'content'
                    OR jsonb_typeof(b -> 'messages' -> j -> 'content')
                       IS DISTINCT FROM 'string' THEN
                RETURN false;
            END IF;
            lines_was := string_to_array(a -> 'messages' -> j ->> 'content', E'\n');
            lines_now := string_to_array(b -> 'messages' -> j ->> 'content', E'\n');
            IF cardinality(lines_was) <> cardinality(lines_now) THEN
                RETURN false;
            END IF;
            FOR k IN 1 .. cardinality(lines_was) LOOP
                -- facts._line_id: `[id, …]`, or `{{"id": …` stored before; facts.purged_line.
                IF lines_now[k] <> lines_was[k] AND lines_now[k] IS DISTINCT FROM format(
                        '{{"id": %s, "purged": true}}',
                        substring(lines_was[k] FROM '^(?:\[\s*|\{{"id": )(\d+)')) THEN
                    RETURN false;
                END IF;
            END LOOP;
        END LOOP;
    END LOOP;
    RETURN true;
END $$
"""

MASKED_ONLY = """
CREATE FUNCTION chatmem_turns_masked_only() RETURNS trigger LANGUAGE plpgsql
SET search_path = {path} AS $$
BEGIN
    IF OLD.owner <> current_user AND NOT chatmem_exempt()
            AND current_user <> (SELECT c.relowner::regrole::text FROM pg_class c
                                 WHERE c.oid = TG_RELID)
            AND (NEW.context IS DISTINCT FROM OLD.context
                 AND NOT chatmem_only_masked(OLD.context, NEW.context)
                 OR NEW.rendered IS DISTINCT FROM OLD.rendered
                 AND NOT chatmem_turn_json(NEW.context, NEW.params, NEW.rendered,
                                           NEW.session_id)) THEN
        RAISE EXCEPTION 'turns: another''s turn changes only where a purge masks a fact'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$
"""


def placed_statements(schema: str) -> Iterator[str]:
    """p018's statements (postgres_schema says what they are for)."""
    path = f"pg_catalog, {schema}, pg_temp"
    yield WORK_STAMPED.format(path=path)
    yield "REVOKE ALL ON FUNCTION chatmem_stamp_session_work() FROM PUBLIC"
    yield ("CREATE TRIGGER sessions_work_stamped BEFORE UPDATE OF updated_at, erasures"
           " ON sessions FOR EACH ROW EXECUTE FUNCTION chatmem_stamp_session_work()")
    yield PAUSE.format(path=path)
    yield READ_JSON.format(path=path, depth=MAX_DEPTH)
    yield TURN_JSON.format(path=path)
    yield ONLY_MASKED.format(path=path)
    yield MASKED_ONLY.format(path=path)
    yield "REVOKE ALL ON FUNCTION chatmem_turns_masked_only() FROM PUBLIC"
    yield ("CREATE TRIGGER turns_masked_only BEFORE UPDATE OF context, rendered ON turns"
           " FOR EACH ROW EXECUTE FUNCTION chatmem_turns_masked_only()")
    for table, misplaced in MISPLACED.items():
        yield AT_THE_END.format(table=table, path=path, misplaced=misplaced,
                                dated=DATED[table])
        yield f"REVOKE ALL ON FUNCTION chatmem_{table}_at_the_end() FROM PUBLIC"
        yield (f"CREATE TRIGGER {table}_at_the_end BEFORE INSERT ON {table} FOR EACH ROW"
               f" EXECUTE FUNCTION chatmem_{table}_at_the_end()")


def place_grantee_writes(execute: Execute) -> None:
    _run_in_schema(execute, placed_statements)
