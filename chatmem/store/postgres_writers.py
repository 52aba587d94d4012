"""Who inserted a message or a turn: p023; who stated a session fact, who wrote a copy: p024;
who wrote a summary or a strategy's state: p025; who wrote a token count: p026; who wrote a
message's word entry or vectors: p027.

A row's `owner` is its session's owner whoever wrote it (postgres_access), so a write
share's grantee who inserted a message and a turn into the owner's session by plain SQL,
naming no speaker, was read as the owner: her next turn caught his "My name is Mallory."
up into her profile. chatmem's own client names him in the turn's context ("speaker"), but
a context is his to write, and so is any name in it. Now the server stamps each new message
and turn with the role that inserts it (`writer`, current_user, set by a trigger whatever
the statement says); no role names the column in an INSERT nor changes it (no column
privilege is granted), and chatmem reads a row another role wrote as that role's
(store.messages: `speakers`, `asked`), never a speaker the row's writer named.

Rows stored before p023 have no writer (NULL): they were their owner's, or a grantee's
turn that names him in its context, and are read as before. Nothing is rewritten, so the
upgrade costs no pass over the tables.

p023 also gives a session fact the `speaker` who stated it (SQLite's m022): one key holds
a live value per speaker, so the owner's "我住在罗马。" no longer replaces the one bob
stated, nor his hers. Facts stored before are the owner's (NULL), read as before. Every
role may write it, as every other column of a fact it may write (p007 granted by name).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from chatmem.store.postgres_access import EXEMPT
from chatmem.store.postgres_write_shares import Execute, _run_in_schema

STAMPED = ("messages", "turns")
"""The tables whose rows say who inserted them."""

STAMP_WRITER = """
CREATE FUNCTION chatmem_stamp_writer() RETURNS trigger LANGUAGE plpgsql
SET search_path = {path} AS $$
BEGIN
    NEW.writer := current_user;
    RETURN NEW;
END $$
"""


def statements(schema: str) -> Iterator[str]:
    yield STAMP_WRITER.format(path=f"pg_catalog, {schema}, pg_temp")
    yield "REVOKE ALL ON FUNCTION chatmem_stamp_writer() FROM PUBLIC"
    for table in STAMPED:
        # No privilege on the new column is granted to PUBLIC (p007 grants columns by name).
        yield f"ALTER TABLE {table} ADD COLUMN writer text"
        yield (f"CREATE TRIGGER {table}_writer BEFORE INSERT ON {table} FOR EACH ROW"
               " EXECUTE FUNCTION chatmem_stamp_writer()")
    yield "ALTER TABLE facts ADD COLUMN speaker text"
    yield "GRANT INSERT (speaker), UPDATE (speaker) ON facts TO PUBLIC"


def stamp_writers(execute: Execute) -> None:
    _run_in_schema(execute, statements)


def written_by_owner(alias: str) -> str:
    """A condition true of a `messages` or `turns` row (`alias`) its session's owner wrote,
    or that was stored before p023 (read as before)."""
    return f"({alias}.writer IS NULL OR {alias}.writer = {alias}.owner)"


# p024: a session fact's `speaker` is the server's word when a role other than the session's
# owner inserts it or changes what it says (its key, value or speaker): p023 let every role
# write `speaker`, so a write share's grantee inserted (or rewrote) a fact naming no speaker,
# or the owner, and it went into her context as hers. Now such a fact is his (his role, as
# chatmem's client names him: engine.turn_rows) unless it cites, as its source, a message of
# that session its owner wrote (not a reply) whose words hold its value: what his client's
# catch-up of her statement writes ("I am allergic to penicillin." → allergy: penicillin),
# and no value she never said. A use, a forget, an expiry change none of the three.
SPEAKER_STAMPED = """
CREATE FUNCTION chatmem_fact_speaker_stamped() RETURNS trigger LANGUAGE plpgsql
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


# p024 too: a copy keeps who wrote a message. A grantee's fork of the owner's session copied
# her messages into his session, where the trigger stamped him, so they read as his (her
# facts landed in his profile). A message inserted into one's own session naming the message
# it copies (`copied_from`: one the role reads, in another session, with the same role and
# words) keeps that message's writer (its owner's, stored before p023); any other is stamped
# with the role that inserts it, as before. So a copy says who wrote the words, and no role
# makes new words anyone's but his. `copied_from` is not kept: the original may go.
COPY_STAMPED = """
CREATE FUNCTION chatmem_stamp_message_writer() RETURNS trigger LANGUAGE plpgsql
SET search_path = {path} AS $$
BEGIN
    NEW.writer := current_user;
    IF NEW.copied_from IS NOT NULL AND current_user =
            (SELECT s.owner FROM sessions s WHERE s.id = NEW.session_id) THEN
        NEW.writer := coalesce((SELECT coalesce(m.writer, m.owner) FROM messages m
                                WHERE m.id = NEW.copied_from
                                AND m.session_id <> NEW.session_id
                                AND m.role = NEW.role AND m.content = NEW.content),
                               current_user);
    END IF;
    NEW.copied_from := NULL;
    RETURN NEW;
END $$
"""


def speaker_statements(schema: str) -> Iterator[str]:
    path = f"pg_catalog, {schema}, pg_temp"
    yield COPY_STAMPED.format(path=path)
    yield "REVOKE ALL ON FUNCTION chatmem_stamp_message_writer() FROM PUBLIC"
    yield "ALTER TABLE messages ADD COLUMN copied_from bigint"
    yield "GRANT INSERT (copied_from) ON messages TO PUBLIC"
    yield "DROP TRIGGER messages_writer ON messages"
    yield ("CREATE TRIGGER messages_writer BEFORE INSERT ON messages FOR EACH ROW"
           " EXECUTE FUNCTION chatmem_stamp_message_writer()")
    yield SPEAKER_STAMPED.format(path=path, exempt=EXEMPT)
    yield "REVOKE ALL ON FUNCTION chatmem_fact_speaker_stamped() FROM PUBLIC"
    # Named to run after p007's facts_owner (triggers of one event run in name order).
    yield ("CREATE TRIGGER facts_speaker_stamped BEFORE INSERT OR UPDATE ON facts"
           " FOR EACH ROW EXECUTE FUNCTION chatmem_fact_speaker_stamped()")


def stamp_fact_speakers(execute: Execute) -> None:
    _run_in_schema(execute, speaker_statements)


# p025: derived memory says who wrote it too. `summaries` and `strategy_state` rows carried
# no writer, so a write share's grantee inserted by plain SQL a summary (a version above hers,
# covering every message) or a strategy's state (a boundary, pins) and the owner's next
# context sent it as her memory. Now the server stamps each row inserted or changed with the
# role that did it (p023's chatmem_stamp_writer; no column privilege is granted), and a
# reader trusts a strategy's derived memory only as written by itself or by the session's
# owner (store.memory_state): anything else is absent, rebuilt from the turns, which carry
# their writers. Rows stored before p025 have no writer and read as before.
DERIVED = ("summaries", "strategy_state")
"""The tables of memory derived from the turns whose rows say who wrote them."""


def writer_statements(tables: Iterable[str]) -> Iterator[str]:
    """A `writer` column for each of `tables`, which the server stamps (p025, p026, p027)."""
    for table in tables:
        yield f"ALTER TABLE {table} ADD COLUMN writer text"
        yield (f"CREATE TRIGGER {table}_writer BEFORE INSERT OR UPDATE ON {table}"
               " FOR EACH ROW EXECUTE FUNCTION chatmem_stamp_writer()")


def stamp_derived_writers(execute: Execute) -> None:
    _run_in_schema(execute, lambda _schema: writer_statements(DERIVED))


def trusted_by_reader(alias: str) -> str:
    """A condition true of a `summaries` or `strategy_state` row (`alias`) the reading role
    or the session's owner wrote, or that was stored before p025 (read as before)."""
    return (f"({alias}.writer IS NULL OR {alias}.writer = {alias}.owner"
            f" OR {alias}.writer = current_user)")


def trusted_memory(alias: str, strategy: str) -> str:
    """A condition true of a row of `alias` (summaries, strategy_state) whose strategy
    (`strategy`, SQL) has derived memory the reader trusts in its session: the row is
    trusted and no state row of that strategy is not (store.memory_state reads such a
    strategy's memory as a whole as absent)."""
    return (f"{trusted_by_reader(alias)} AND NOT EXISTS (SELECT 1 FROM strategy_state t"
            f" WHERE t.session_id = {alias}.session_id AND t.strategy = {strategy}"
            f" AND NOT {trusted_by_reader('t')})")


# p026: a token count says who wrote it too. A count is a message's, and any role that may
# write the message's session may write it: a write share's grantee ran `UPDATE token_counts
# SET tokens = 0` on the owner's messages and her budget read them (a tokens session's
# 294 tokens in 6 messages read as 18 in 14), so her context overran her real budget. A
# count cannot be checked by the server (it is the tokenizer's), so it is stamped with the
# role that wrote it (p023's chatmem_stamp_writer; no column privilege is granted) and a
# reader trusts only its own or the session's owner's (`trusted_count`): any other reads as
# not counted, so it is counted again from the words, and her turn's count replaces his.
# Counts stored before p026 have no writer and read as before.
COUNTED = ("token_counts",)
"""The tables of counts derived from a message's words whose rows say who wrote them."""


def stamp_count_writers(execute: Execute) -> None:
    _run_in_schema(execute, lambda _schema: writer_statements(COUNTED))


def trusted_count(kind: str, alias: str) -> str:
    """` AND` a condition true of a `token_counts`, `message_words` or `message_vectors` row
    (`alias`) the reader trusts: on PostgreSQL one it or the session's owner wrote, or stored
    before p026 (p027); every row of a file (one user's)."""
    return f" AND {trusted_by_reader(alias)}" if kind == "postgresql" else ""


# p027: the recall index says who wrote it too. A message's word entry (`message_words`) and
# its vectors (`message_vectors`) are derived from its words as its count is, and any role
# that may write the session may write them: a write share's grantee deleted the owner's
# entries and her recall found nothing (her next turn embedded the vectors again, the words
# stayed gone), or rewrote an entry's terms and ranked what he chose first for as long as it
# stood. Deletes cannot be refused (a purge, a cascade), nor other roles' writes (his purge
# re-indexes her message; his turn embeds her messages), so each row is stamped with the role
# that wrote it (chatmem_stamp_writer; no column privilege is granted) and a reader trusts
# only its own, the session's owner's, or the one its message's writer wrote (`trusted_entry`:
# a grantee's turn indexes his own words, which he could have said to match anything): any
# other reads as missing, and a message without a trusted entry is indexed again by the
# reader's next turn, as one without a vector is embedded again
# (store.recall.index_untrusted_words, vector_backlog). Rows stored before p027 have no
# writer and read as before.
INDEXED = ("message_words", "message_vectors")
"""The tables of a message's recall index whose rows say who wrote them."""


def stamp_index_writers(execute: Execute) -> None:
    _run_in_schema(execute, lambda _schema: writer_statements(INDEXED))


def trusted_entry(alias: str) -> str:
    """A condition true of a `message_words` or `message_vectors` row (`alias`) the reading
    role, the session's owner or its message's writer wrote, or stored before p027."""
    return (f"({trusted_by_reader(alias)} OR {alias}.writer ="
            f" (SELECT e.writer FROM messages e WHERE e.id = {alias}.message_id))")


def trusted_index(kind: str, alias: str) -> str:
    """` AND` `trusted_entry` on PostgreSQL; every row of a file (one user's)."""
    return f" AND {trusted_entry(alias)}" if kind == "postgresql" else ""


def trusted_memory_on(kind: str, alias: str, strategy: str) -> str:
    """` AND` trusted_memory on PostgreSQL; nothing of a file (one user's)."""
    return f" AND {trusted_memory(alias, strategy)}" if kind == "postgresql" else ""
