"""p029 too: the earlier values of a session's facts are what its facts said.

p007 gave a write share's grantee every right over the history of the facts of a session
shared with him (`fact_history`, the earlier values `facts list` shows under each fact): by
plain SQL he added earlier values the owner never stated ("name was: Mallory", dated when he
liked) to her facts, and deleted hers for good. chatmem's own client adds an earlier value
only as it replaces a live fact's value (store.fact_tables.upsert_fact: the fact's value as
it was, or, merging forms of one key, another live fact's of the same session and speaker),
and deletes one only with its session or its fact (the owner's, or a cascade).

So now a role that does not own the row adds an earlier value only as what a live fact of
that session and speaker says (key, value, source, when it was stated), replaced at the
server's now; and only the owner deletes one. (A purge still masks them: an update.)
"""

from __future__ import annotations

from collections.abc import Iterator

from chatmem.store.postgres_write_shares import OWN, STAMP, Execute, _run_in_schema

WAS_SO = f"""
CREATE FUNCTION chatmem_fact_history_was_so() RETURNS trigger LANGUAGE plpgsql
SET search_path = {{path}} AS $$
BEGIN
    -- Runs after fact_history_owner (triggers of one event run by name), which gives the row
    -- its fact's owner: the session's.
    IF NEW.owner = current_user OR chatmem_exempt() THEN
        RETURN NEW;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM facts f JOIN facts g ON g.session_id = f.session_id
                   AND g.speaker IS NOT DISTINCT FROM f.speaker
                   WHERE f.id = NEW.fact_id AND g.deleted_at IS NULL AND g.key = NEW.key
                   AND g.value = NEW.value AND g.updated_at = NEW.stated_at
                   AND g.source_session_id IS NOT DISTINCT FROM NEW.source_session_id
                   AND g.source_turn IS NOT DISTINCT FROM NEW.source_turn) THEN
        RAISE EXCEPTION 'fact_history: an earlier value another adds is what a fact said'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    NEW.replaced_at := {STAMP};
    RETURN NEW;
END $$
"""


def statements(schema: str) -> Iterator[str]:
    yield WAS_SO.format(path=f"pg_catalog, {schema}, pg_temp")
    yield "REVOKE ALL ON FUNCTION chatmem_fact_history_was_so() FROM PUBLIC"
    yield ("CREATE TRIGGER fact_history_was_so BEFORE INSERT ON fact_history FOR EACH ROW"
           " EXECUTE FUNCTION chatmem_fact_history_was_so()")
    yield "DROP POLICY fact_history_delete ON fact_history"
    yield f"CREATE POLICY fact_history_delete ON fact_history FOR DELETE USING ({OWN})"


def kept_as_stated(execute: Execute) -> None:
    _run_in_schema(execute, statements)
