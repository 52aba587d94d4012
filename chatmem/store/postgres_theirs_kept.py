"""p033: a write share's grantee forgets, deletes or takes over no fact another stated.

The owner's session facts have no speaker (hers); p024 stamps a fact a grantee writes with
his name (p032: or a member relayed through him). But a forget (`deleted_at`) and a DELETE
changed no key, value or speaker, so the server let him: bob's `chatmem facts forget
ann/笔记 1`, or his plain `UPDATE facts SET deleted_at = ...`, took ann's `名字 = 安娜` out
of her own `facts list`, where README promises his "Forget my city." forgets his city only.
Now, in another role's session, a role may forget, restore, delete, re-key or re-speak only
a fact stated by itself or relayed through it. A new value for another's fact (or its key
in another case) stands only when p024's trigger (run first: triggers of one event run in
name order) left its speaker as it was: his client's catch-up of the owner's own words;
else the fact would become his and hers would be gone, so it is refused. A use (`used_at`),
an expiry and a cleared source (a message's ON DELETE SET NULL) change none of these.
"""

from __future__ import annotations

from collections.abc import Iterator

from chatmem.store.postgres_access import EXEMPT
from chatmem.store.postgres_write_shares import Execute, _run_in_schema

THEIRS_KEPT = """
CREATE FUNCTION chatmem_fact_theirs_kept() RETURNS trigger LANGUAGE plpgsql
SET search_path = {path} AS $$
DECLARE
    session_owner text;
BEGIN
    IF OLD.session_id IS NULL OR {exempt} THEN
        RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    END IF;
    session_owner := (SELECT s.owner FROM sessions s WHERE s.id = OLD.session_id);
    IF session_owner IS NULL OR session_owner = current_user
            OR OLD.speaker IS NOT DISTINCT FROM current_user
            OR (length(OLD.speaker) > length(current_user) + 7
                AND right(OLD.speaker, length(current_user) + 7)
                    = ' (via ' || current_user || ')') THEN
        RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    END IF;
    IF TG_OP = 'DELETE' OR NEW.deleted_at IS DISTINCT FROM OLD.deleted_at
            OR NEW.speaker IS DISTINCT FROM OLD.speaker
            OR lower(NEW.key) IS DISTINCT FROM lower(OLD.key)
            OR NEW.session_id IS DISTINCT FROM OLD.session_id
            OR NEW.scope IS DISTINCT FROM OLD.scope THEN
        RAISE EXCEPTION 'fact % of this session was stated by %, not %',
            OLD.id, coalesce(OLD.speaker, session_owner), current_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$
"""


def _statements(schema: str) -> Iterator[str]:
    yield THEIRS_KEPT.format(path=f"pg_catalog, {schema}, pg_temp", exempt=EXEMPT)
    yield "REVOKE ALL ON FUNCTION chatmem_fact_theirs_kept() FROM PUBLIC"
    # Named to run after facts_speaker_stamped (p024): it sees the speaker that one set.
    yield ("CREATE TRIGGER facts_theirs_kept BEFORE UPDATE OR DELETE ON facts"
           " FOR EACH ROW EXECUTE FUNCTION chatmem_fact_theirs_kept()")


def theirs_kept(execute: Execute) -> None:
    _run_in_schema(execute, _statements)
