"""A turn's rendered pieces read on the server as chatmem reads them: p021.

p018 and p020 read a turn's `rendered` (rendered.to_columns: strings, and runs of stored
positions) two ways, neither Python's: `chatmem_turn_json` through `chatmem_read_json`,
which reads NaN as 0 and \\u0000 as a space, and `chatmem_rendered_text` as jsonb, which
reads neither. So a grantee's pieces holding a NaN or a \\u0000 passed p018's check while
p020 read them as no text at all, which it took for the NULL of a turn without a rendered
prompt: by SQL he wrote any "exact model input" into the owner's `inspect`. And a run's
`"from": "1"` (a string, `->>` reads it as the digits it holds) or `1e0` (jsonb reads it
as 1, Python as a float) passed both and broke her `inspect --request` with a traceback.

Now both read the pieces one way (`chatmem_read_pieces`): anything but strings and whole
numbers outside a string (NaN, a fraction, an exponent, true, null) is no pieces chatmem
wrote, and text reads in the form chatmem's client stores it in on PostgreSQL
(postgres_text: a NUL as U+FDD0 U+FDD1), so no other text, a space or an escaped
noncharacter, reads as the NUL of hers it stands for. A run's positions must be JSON
numbers. And pieces the server cannot read are refused when a
grantee writes them: the prompt they stand for is no text only when both columns are
empty.
"""

from __future__ import annotations

from collections.abc import Iterator

from chatmem.store.postgres_write_shares import MAX_DEPTH, Execute, _run_in_schema

READ_PIECES = r"""
CREATE FUNCTION chatmem_read_pieces(value text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE
SET search_path = {path} AS $$
BEGIN
    -- json_text of pieces writes strings and whole numbers: anything else outside a string
    -- is a float to Python (NaN, 1.0, 1e0, which jsonb reads as 1) or a value chatmem never
    -- wrote there.
    IF regexp_replace(value, '"(?:[^"\\]|\\.)*"', '""', 'g') ~ '[^][{{}}:,"0-9\s-]' THEN
        RETURN NULL;
    -- The client doubles every U+FDD0 it stores (postgres_text): another one is a NUL, or
    -- a character dropped, when chatmem reads the value back.
    ELSIF regexp_replace(value, '\uFDD0\uFDD0', '', 'g') ~ '\uFDD0' THEN
        RETURN NULL;
    END IF;
    -- jsonb holds no \u0000: text reads in the form chatmem's client stores it in
    -- (postgres_text: a NUL as U+FDD0 U+FDD1, U+FDD0 as two), as the messages it names are
    -- stored, so no other character, escaped or not, reads as a NUL.
    RETURN (SELECT CASE WHEN jsonb_path_exists(j, 'strict $.**{{{depth}}}') THEN NULL ELSE j END
            FROM (SELECT regexp_replace(regexp_replace(value,
                    '(?<!\\)((?:\\\\)*)\\u[fF][dD][dD]0', '\1\\ufdd0\\ufdd0', 'g'),
                    '(?<!\\)((?:\\\\)*)\\u0000', '\1\\ufdd0\\ufdd1', 'g')::jsonb AS j) AS parsed);
EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
    RETURN NULL;
END $$
"""

NUMBERED = r"""jsonb_typeof(piece -> 'from') IS DISTINCT FROM 'number'
                OR jsonb_typeof(piece -> 'to') IS DISTINCT FROM 'number'
                OR piece ->> 'from' !~ '^\d{1,18}$' OR piece ->> 'to' !~ '^\d{1,18}$'
                OR NOT (piece ->> 'from')::bigint BETWEEN 1 AND (piece ->> 'to')::bigint"""
"""rendered.readable_pieces: a run's positions, whole JSON numbers, the first no later."""

TURN_JSON = r"""
CREATE OR REPLACE FUNCTION chatmem_turn_json(context text, params text, rendered text,
                                             session bigint)
RETURNS boolean LANGUAGE plpgsql STABLE SET search_path = {path} AS $$
DECLARE
    pieces jsonb := chatmem_read_pieces(rendered);
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
                OR {numbered}
                OR (piece ->> 'to')::bigint > last
                OR jsonb_typeof(piece -> 'gaps') IS DISTINCT FROM 'object'
                OR jsonb_path_exists(piece -> 'gaps', 'strict $.* ? (@.type() != "string")') THEN
            RETURN false;
        END IF;
    END LOOP;
    RETURN true;
END $$
"""

RENDERED_TEXT = r"""
CREATE OR REPLACE FUNCTION chatmem_rendered_text(session bigint, whole text, pieces text)
RETURNS text LANGUAGE plpgsql STABLE SET search_path = {path} AS $$
DECLARE
    parsed jsonb;
    piece jsonb;
    last bigint := coalesce((SELECT max(m.position) FROM messages m
                             WHERE m.session_id = session), 0);
    expanded text := '';
BEGIN
    -- rendered.from_columns and expand: the pieces when there are any, else the whole
    -- text; NULL for pieces Python would not read (or not as chatmem wrote them).
    IF pieces IS NULL OR pieces = '' THEN
        RETURN whole;
    END IF;
    parsed := chatmem_read_pieces(pieces);
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
                OR jsonb_path_exists(piece -> 'gaps', 'strict $.* ? (@.type() != "string")')
                OR {numbered}
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

RENDERED_MASKED = """
CREATE OR REPLACE FUNCTION chatmem_rendered_masked() RETURNS trigger LANGUAGE plpgsql
SET search_path = {path} AS $$
DECLARE
    was text;
    is_now text;
BEGIN
    IF OLD.owner = current_user OR chatmem_exempt()
            OR current_user = (SELECT c.relowner::regrole::text FROM pg_class c
                               WHERE c.oid = TG_RELID)
            OR NEW.rendered IS NOT DISTINCT FROM OLD.rendered
               AND NEW.rendered_prompt IS NOT DISTINCT FROM OLD.rendered_prompt THEN
        RETURN NEW;
    END IF;
    was := chatmem_rendered_text(OLD.session_id, OLD.rendered_prompt, OLD.rendered);
    is_now := chatmem_rendered_text(NEW.session_id, NEW.rendered_prompt, NEW.rendered);
    -- Pieces the server cannot read stand for no text: refused, not taken for the NULL of a
    -- turn without a rendered prompt, which stays NULL (as an unreadable one may become).
    -- The prompt as read, and the whole text too should the pieces hide it.
    IF is_now IS NULL AND coalesce(NEW.rendered, '') <> ''
            OR NOT chatmem_only_marked(was, is_now)
            OR NEW.rendered_prompt IS DISTINCT FROM OLD.rendered_prompt
               AND NEW.rendered_prompt IS NOT NULL
               AND NOT chatmem_only_marked(was, NEW.rendered_prompt) THEN
        RAISE EXCEPTION 'turns: another''s rendered prompt changes only where a purge masks it'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$
"""


def statements(schema: str) -> Iterator[str]:
    """p021's statements: p018's and p020's functions replaced (their triggers, and the
    trigger function's revoked EXECUTE, stay)."""
    path = f"pg_catalog, {schema}, pg_temp"
    yield READ_PIECES.format(path=path, depth=MAX_DEPTH)
    yield TURN_JSON.format(path=path, numbered=NUMBERED)
    yield RENDERED_TEXT.format(path=path, numbered=NUMBERED)
    yield RENDERED_MASKED.format(path=path)


def read_rendered_pieces_as_chatmem(execute: Execute) -> None:
    _run_in_schema(execute, statements)
