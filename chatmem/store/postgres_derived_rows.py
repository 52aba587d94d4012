"""p030: what a write share's grantee does to the owner's derived memory.

p025 stamped every summary and strategy state row with its writer, and a reader trusts a
strategy's memory only as it or the session's owner wrote it. But p007 still gave a write
share's grantee every right over the session's `summaries` and `strategy_state` rows, and
what he deleted of hers is not "another's row" to distrust, it is simply gone: by plain SQL
he deleted her latest summary version and her next context sent the one before it as if it
covered every turn ("summary v2 of turns 1–3", her third turn in neither the summary nor the
history); he deleted one key of her state (`boundary_turn`, her pins) and the rest, all hers,
read as her whole state; he moved a row to another key or strategy, which deleted it where it
was; and he set a summary's version to the largest bigint, so every summary update of hers
failed from then on ("bigint out of range": max(version) + 1).

chatmem's own client, run by a grantee in the owner's session, only adds a summary (its
next version, store.memory_state.add_summary), only writes a state row's value (an upsert of
its strategy's keys, set_strategy_state), and deletes only state rows written by a third role
(the rows it does not trust, which its own values replace); it deletes and changes no
summary (a purge rewrites only the purging role's own sessions; `sessions reset-state` is the
owner's). So now, for a role that does not own the session:

- a summary it adds is the next version of its session and strategy; it changes none and
  deletes none (refused aloud, 42501, as p028 refuses an image's change);
- a strategy state row it changes keeps its session, strategy and key (only `value` moves,
  stamped with its writer as before); it deletes only rows a third role wrote (neither the
  owner, nor a row stored before p025, nor its own: deleting its own overwrite would leave
  the owner a part of her state read as the whole).

The owner's own rows and statements, the tables' owner's and an exempt role's are as before.
Rows already stored are left as they are.
"""

from __future__ import annotations

from collections.abc import Iterator

from chatmem.store.postgres_access import RULES
from chatmem.store.postgres_write_shares import OWN, Execute, _run_in_schema

NEXT_VERSION = """
CREATE FUNCTION chatmem_summaries_next_version() RETURNS trigger LANGUAGE plpgsql
SET search_path = {path} AS $$
DECLARE
    session_owner text := (SELECT s.owner FROM sessions s WHERE s.id = NEW.session_id);
BEGIN
    -- A session it cannot see: row security refuses the row, saying nothing of the session.
    IF session_owner IS NULL OR session_owner = current_user OR chatmem_exempt() THEN
        RETURN NEW;
    END IF;
    IF NEW.version IS DISTINCT FROM coalesce((SELECT max(u.version) FROM summaries u
                                              WHERE u.session_id = NEW.session_id
                                              AND u.strategy = NEW.strategy), 0) + 1 THEN
        RAISE EXCEPTION 'summaries: a summary added to another''s session is its next version'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$
"""

SAME_KEY = """
CREATE FUNCTION chatmem_strategy_state_same_key() RETURNS trigger LANGUAGE plpgsql
SET search_path = {path} AS $$
BEGIN
    IF OLD.owner <> current_user AND NOT chatmem_exempt()
            AND current_user <> (SELECT c.relowner::regrole::text FROM pg_class c
                                 WHERE c.oid = TG_RELID) THEN
        RAISE EXCEPTION 'strategy_state: in another''s session only a value changes'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$
"""

THIRD_ROLES = ("strategy_state.writer IS NOT NULL AND strategy_state.writer <> strategy_state.owner"
               " AND strategy_state.writer <> current_user")
"""A state row written by neither the session's owner, nor before p025, nor the reader."""


def statements(schema: str) -> Iterator[str]:
    path = f"pg_catalog, {schema}, pg_temp"
    yield NEXT_VERSION.format(path=path)
    yield "REVOKE ALL ON FUNCTION chatmem_summaries_next_version() FROM PUBLIC"
    yield ("CREATE TRIGGER summaries_next_version BEFORE INSERT ON summaries FOR EACH ROW"
           " EXECUTE FUNCTION chatmem_summaries_next_version()")
    for command in ("update", "delete"):
        yield f"DROP POLICY summaries_{command} ON summaries"
    # Seen as before, so a change of a row one reads is refused aloud (42501).
    yield (f"CREATE POLICY summaries_update ON summaries FOR UPDATE"
           f" USING ({RULES['summaries'][0]}) WITH CHECK ({OWN})")
    yield f"CREATE POLICY summaries_delete ON summaries FOR DELETE USING ({OWN})"
    yield SAME_KEY.format(path=path)
    yield "REVOKE ALL ON FUNCTION chatmem_strategy_state_same_key() FROM PUBLIC"
    yield ("CREATE TRIGGER strategy_state_same_key BEFORE UPDATE OF strategy, key"
           " ON strategy_state FOR EACH ROW WHEN (OLD.strategy IS DISTINCT FROM NEW.strategy"
           " OR OLD.key IS DISTINCT FROM NEW.key)"
           " EXECUTE FUNCTION chatmem_strategy_state_same_key()")
    yield "DROP POLICY strategy_state_delete ON strategy_state"
    yield (f"CREATE POLICY strategy_state_delete ON strategy_state FOR DELETE USING ({OWN}"
           f" OR {RULES['strategy_state'][1]} AND {THIRD_ROLES})")


def derived_rows_kept(execute: Execute) -> None:
    _run_in_schema(execute, statements)
