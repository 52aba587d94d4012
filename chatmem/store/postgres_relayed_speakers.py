"""p032: a session fact a write share's grantee's client relayed says whose words it was.

A group chat a write share's grantee relays into the owner's session (his client, a Discord
bot or SillyTavern, names each member: serve's `name`) stores carol's "我住在深圳。" as
`bob: carol: 我住在深圳。`, and the fact his turn gives (城市 深圳) was bob's: p024 stamps a
fact his role writes with his name unless it is hers, so his own city became 深圳 to both
models. Now he may also name a speaker relayed through him, `carol (via bob)`: his own
name stays in it, so no fact he writes reads as the owner's or as another role's, and the
member his client named is kept beside it. Anything else he names is still stamped his.
"""

from __future__ import annotations

from collections.abc import Iterator

from chatmem.store.postgres_access import EXEMPT
from chatmem.store.postgres_write_shares import Execute, _run_in_schema

RELAYED_STAMPED = """
CREATE OR REPLACE FUNCTION chatmem_fact_speaker_stamped() RETURNS trigger LANGUAGE plpgsql
SET search_path = {path} AS $$
DECLARE
    session_owner text;
BEGIN
    IF NEW.session_id IS NULL OR {exempt} THEN
        RETURN NEW;  -- a profile fact is its writer's own (p013)
    END IF;
    session_owner := (SELECT s.owner FROM sessions s WHERE s.id = NEW.session_id);
    IF session_owner IS NULL OR session_owner = current_user
            OR NEW.speaker IS NOT DISTINCT FROM current_user THEN
        RETURN NEW;
    END IF;
    -- A member relayed through him (p032, speakers.relayed): his name ends it.
    IF length(NEW.speaker) > length(current_user) + 7
            AND right(NEW.speaker, length(current_user) + 7)
                = ' (via ' || current_user || ')' THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.key IS NOT DISTINCT FROM OLD.key
            AND NEW.value IS NOT DISTINCT FROM OLD.value
            AND NEW.speaker IS NOT DISTINCT FROM OLD.speaker THEN
        RETURN NEW;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = NEW.source_message_id
                   AND m.session_id = NEW.session_id AND m.role <> 'assistant'
                   AND (m.writer IS NULL OR m.writer = session_owner)
                   AND strpos(lower(m.content), lower(NEW.value)) > 0) THEN
        NEW.speaker := current_user;
    END IF;
    RETURN NEW;
END $$
"""


def _statements(schema: str) -> Iterator[str]:
    yield RELAYED_STAMPED.format(path=f"pg_catalog, {schema}, pg_temp", exempt=EXEMPT)
    yield "REVOKE ALL ON FUNCTION chatmem_fact_speaker_stamped() FROM PUBLIC"


def relayed_speakers(execute: Execute) -> None:
    _run_in_schema(execute, _statements)
