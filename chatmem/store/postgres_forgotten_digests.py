"""p029 too: a message's changed text leaves no cache entry finding it by its old digest.

`vector_cache` finds a stored vector by the sha256 of the text it embeds, one row per role
(p004): each reads and deletes only its own. A write share's grantee's entry pointing at the
owner's message (an older chatmem wrote one; his SQL still may) was hidden from her and hers
to delete by no policy, so her purge (`facts forget … --purge`: store.redaction masks the
message, then deletes the cache entries of the sessions it changed) deleted her own entry
and left his: he confirmed guesses at the erased text by its digest.

So now a message whose text changes (a purge's or a redaction's mask: chatmem changes a
message's text nowhere else) loses every cache entry pointing at it, whoever's: a definer
trigger deletes them. It reads nothing: the owner learns no digest of another role's, and
his next embedding of the session writes his entry again. Row security is forced on the
tables' owner too, so the trigger sets a transaction-local mark for the statement and a
policy for the tables' owner alone lets it see and delete the rows while the mark is set.
"""

from __future__ import annotations

from collections.abc import Iterator

from chatmem.store.postgres_write_shares import Execute, _run_in_schema

MARK = "chatmem.forgetting_digests"
"""Set (transaction-local) only while the trigger deletes; outside it, empty."""

FORGET = f"""
CREATE FUNCTION chatmem_forget_digests() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = {{path}} AS $$
BEGIN
    PERFORM set_config('{MARK}', 'on', true);
    DELETE FROM vector_cache WHERE message_id = NEW.id;
    PERFORM set_config('{MARK}', '', true);
    RETURN NULL;
END $$
"""

WHILE_FORGETTING = f"current_setting('{MARK}', true) = 'on'"


def statements(schema: str) -> Iterator[str]:
    yield FORGET.format(path=f"pg_catalog, {schema}, pg_temp")
    yield "REVOKE ALL ON FUNCTION chatmem_forget_digests() FROM PUBLIC"
    # The migrating role owns the tables and the function: the policies are its alone.
    for command in ("select", "delete"):
        yield (f"CREATE POLICY vector_cache_forgotten_{command} ON vector_cache"
               f" FOR {command.upper()} TO CURRENT_USER USING ({WHILE_FORGETTING})")
    yield ("CREATE TRIGGER messages_forget_digests AFTER UPDATE OF content ON messages"
           " FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)"
           " EXECUTE FUNCTION chatmem_forget_digests()")


def forget_changed_texts(execute: Execute) -> None:
    _run_in_schema(execute, statements)
