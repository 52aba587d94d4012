"""What a write-share grantee may still change of the owner's turns and facts: p020.

p018 let a grantee rewrite a turn's `rendered` (the prompt a local model was sent, stored
by reference: chatmem.store.rendered) to anything that reads as turn JSON, and
`rendered_prompt` (the same prompt stored whole) to anything at all, so by plain SQL he
rewrote what the owner's `inspect` shows she sent. chatmem changes those columns of a turn
it does not own only when his purge masks a fact there (memory.facts.scrub_fact: a fact's
line becomes its purged marker, and the prompt is stored by reference again, its JSON
re-serialized). So the rule is on the text the two columns stand for, as
`rendered.from_columns` reads it: the new text, cut at the markers a purge writes, must be
the old text's pieces in order, its first at the old start and its last at the old end. Text
is only ever replaced by a marker, never added; the secret guard's ⟦…⟧ marks are written
when a turn is stored, never by a purge, so they are no marker here.

p018 also dated what a grantee adds to the owner's messages and turns by the server; facts
were left out, so a session fact he wrote there (or a forget, or a use of one) carried
whatever time he gave: one chatmem cannot read broke every read of her facts, and one far
ahead kept an unused fact from ever expiring (fact_idle_days). The server's now
(postgres_write_shares.STAMP) is now what his rows of her facts say, as chatmem's own
client writes now; a fact's creation time, once written, does not move.
"""

from __future__ import annotations

from collections.abc import Iterator

from chatmem.store.postgres_write_shares import STAMP, Execute, _run_in_schema

PURGED_LINE = r'\{"id": \d{1,19}, "purged": true\}'
"""memory.facts.purged_line, as a pattern: a purged fact's line in a context or prompt."""
MARKS = r"\[forgotten\]|" + PURGED_LINE
"""Every marker a purge writes into stored text: privacy.mentions.MARKER in place of a
mention, and a purged fact's line (tests check it against both)."""

RENDERED_TEXT = r"""
CREATE FUNCTION chatmem_rendered_text(session bigint, whole text, pieces text)
RETURNS text LANGUAGE plpgsql STABLE SET search_path = {path} AS $$
DECLARE
    parsed jsonb;
    piece jsonb;
    last bigint := coalesce((SELECT max(m.position) FROM messages m
                             WHERE m.session_id = session), 0);
    expanded text := '';
BEGIN
    -- rendered.from_columns and expand: the pieces when there are any, else the whole
    -- text; NULL for pieces Python would not read (json.dumps of pieces writes no NaN, so
    -- jsonb reads what it wrote; chatmem_read_json would read a string's "NaN" as 0).
    IF pieces IS NULL OR pieces = '' THEN
        RETURN whole;
    END IF;
    parsed := pieces::jsonb;
    IF jsonb_typeof(parsed) IS DISTINCT FROM 'array' THEN
        RETURN NULL;
    END IF;
    FOR piece IN SELECT value FROM jsonb_array_elements(parsed) LOOP
        IF jsonb_typeof(piece) = 'string' THEN
            expanded := expanded || (piece #>> '{{}}');
            CONTINUE;
        END IF;
        IF jsonb_typeof(piece) IS DISTINCT FROM 'object'
                OR jsonb_typeof(piece -> 'gaps') IS DISTINCT FROM 'object'
                OR coalesce(piece ->> 'from', '') !~ '^\d{{1,18}}$'
                OR coalesce(piece ->> 'to', '') !~ '^\d{{1,18}}$'
                OR (piece ->> 'to')::bigint > last THEN
            RETURN NULL;
        END IF;
        -- Each message's content, and between two the template's text for their roles;
        -- a position no longer stored reads as expand writes it.
        expanded := expanded || coalesce((
            SELECT string_agg(coalesce(piece -> 'gaps' ->> (r.before || ' ' || r.role), '')
                              || r.content, '' ORDER BY r.at)
            FROM (SELECT g.at, coalesce(m.role, '') AS role,
                         coalesce(m.content, format('[message %s is no longer stored]', g.at))
                         AS content,
                         lag(coalesce(m.role, '')) OVER (ORDER BY g.at) AS before
                  FROM generate_series((piece ->> 'from')::bigint, (piece ->> 'to')::bigint)
                       AS g(at)
                  LEFT JOIN messages m ON m.session_id = session AND m.position = g.at) AS r),
            '');
    END LOOP;
    RETURN expanded;
EXCEPTION WHEN data_exception THEN
    RETURN NULL;
END $$
"""

ONLY_MARKED = r"""
CREATE FUNCTION chatmem_only_marked(was text, is_now text) RETURNS boolean LANGUAGE plpgsql
IMMUTABLE SET search_path = {path} AS $$
DECLARE
    kept text[] := regexp_split_to_array(is_now, '{marks}');
    n integer := cardinality(kept);
    reached integer;
    hit integer;
BEGIN
    -- What is left between the markers is the old text's, in order, from its start to its
    -- end: a marker only ever stands where text was.
    IF was IS NULL OR is_now IS NULL THEN
        RETURN was IS NOT DISTINCT FROM is_now;
    ELSIF n = 1 THEN
        RETURN was = is_now;
    ELSIF left(was, length(kept[1])) <> kept[1] THEN
        RETURN false;
    END IF;
    reached := length(kept[1]) + 1;
    FOR i IN 2 .. n - 1 LOOP
        hit := strpos(substr(was, reached), kept[i]);
        IF hit = 0 THEN
            RETURN false;
        END IF;
        reached := reached + hit - 1 + length(kept[i]);
    END LOOP;
    RETURN right(was, length(kept[n])) = kept[n] AND length(was) - length(kept[n]) + 1 >= reached;
END $$
"""

RENDERED_MASKED = """
CREATE FUNCTION chatmem_rendered_masked() RETURNS trigger LANGUAGE plpgsql
SET search_path = {path} AS $$
DECLARE
    was text;
BEGIN
    IF OLD.owner = current_user OR chatmem_exempt()
            OR current_user = (SELECT c.relowner::regrole::text FROM pg_class c
                               WHERE c.oid = TG_RELID)
            OR NEW.rendered IS NOT DISTINCT FROM OLD.rendered
               AND NEW.rendered_prompt IS NOT DISTINCT FROM OLD.rendered_prompt THEN
        RETURN NEW;
    END IF;
    was := chatmem_rendered_text(OLD.session_id, OLD.rendered_prompt, OLD.rendered);
    -- The prompt as read, and the whole text too should the pieces hide it.
    IF NOT chatmem_only_marked(was, chatmem_rendered_text(NEW.session_id, NEW.rendered_prompt,
                                                          NEW.rendered))
            OR NEW.rendered_prompt IS DISTINCT FROM OLD.rendered_prompt
               AND NEW.rendered_prompt IS NOT NULL
               AND NOT chatmem_only_marked(was, NEW.rendered_prompt) THEN
        RAISE EXCEPTION 'turns: another''s rendered prompt changes only where a purge masks it'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$
"""

FACTS_DATED = f"""
CREATE FUNCTION chatmem_facts_dated() RETURNS trigger LANGUAGE plpgsql
SET search_path = {{path}} AS $$
DECLARE
    session_owner text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- A profile fact (no session) is its writer's own.
        session_owner := (SELECT s.owner FROM sessions s WHERE s.id = NEW.session_id);
        IF session_owner IS NULL OR session_owner = current_user OR chatmem_exempt() THEN
            RETURN NEW;
        END IF;
        NEW.created_at := {STAMP};
        NEW.updated_at := NEW.created_at;
        NEW.deleted_at := CASE WHEN NEW.deleted_at IS NOT NULL THEN NEW.created_at END;
        NEW.used_at := CASE WHEN NEW.used_at IS NOT NULL THEN NEW.created_at END;
        RETURN NEW;
    END IF;
    IF OLD.owner = current_user OR chatmem_exempt() THEN
        RETURN NEW;
    END IF;
    -- fact_tables: an update, a forget, a use are dated now; none moves its creation.
    NEW.created_at := OLD.created_at;
    IF NEW.updated_at IS DISTINCT FROM OLD.updated_at THEN
        NEW.updated_at := {STAMP};
    END IF;
    IF NEW.deleted_at IS DISTINCT FROM OLD.deleted_at AND NEW.deleted_at IS NOT NULL THEN
        NEW.deleted_at := {STAMP};
    END IF;
    IF NEW.used_at IS DISTINCT FROM OLD.used_at AND NEW.used_at IS NOT NULL THEN
        NEW.used_at := {STAMP};
    END IF;
    RETURN NEW;
END $$
"""


def statements(schema: str) -> Iterator[str]:
    """p020's statements. The rendered prompt's trigger is named to run after p018's
    (`turns_masked_only`, which refuses pieces that are not turn JSON): triggers of one
    event run in the order of their names."""
    path = f"pg_catalog, {schema}, pg_temp"
    yield RENDERED_TEXT.format(path=path)
    yield ONLY_MARKED.format(path=path, marks=MARKS)
    yield RENDERED_MASKED.format(path=path)
    yield "REVOKE ALL ON FUNCTION chatmem_rendered_masked() FROM PUBLIC"
    yield ("CREATE TRIGGER turns_rendered_masked BEFORE UPDATE OF rendered, rendered_prompt"
           " ON turns FOR EACH ROW EXECUTE FUNCTION chatmem_rendered_masked()")
    yield FACTS_DATED.format(path=path)
    yield "REVOKE ALL ON FUNCTION chatmem_facts_dated() FROM PUBLIC"
    yield ("CREATE TRIGGER facts_dated BEFORE INSERT OR UPDATE ON facts FOR EACH ROW"
           " EXECUTE FUNCTION chatmem_facts_dated()")


def mask_rendered_and_date_facts(execute: Execute) -> None:
    _run_in_schema(execute, statements)
