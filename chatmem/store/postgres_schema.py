"""The schema of a PostgreSQL history, as named migrations applied once.

`p001_schema` is SQLite's schema after m001..m008 (chatmem/store/schema.py):
the same tables, columns, value types, keys and indexes, so both backends
return identical values. Ids are bigint identities, times ISO TEXT, vectors
bytea, REAL double precision, every INTEGER bigint (SQLite's are 64-bit). The
column `user` is a reserved word here and is always written "user".

What differs: full-text entries live in `message_words` (a tsvector of
fts.index_text, so CJK bigrams as on SQLite) and every row of user data has
an `owner` (the role that wrote it) that row-level security checks, so one
database serves a team and nobody reads another's memory. A session is
visible to its owner and to the roles it is shared with (`session_shares`,
read or write); its rows follow it. The policies are FORCEd, so they hold
for the tables' owner's statements too (superusers and BYPASSRLS roles are not
subject to them: PostgreSQL's rule), but the owner may switch them off with
ALTER TABLE: the tables of a team belong to whoever administers it, never to a
person who chats (`admin add-user` refuses otherwise: store/sharing.py).
p007 seals writes as p001 sealed reads: every right over a row is its session's
(chatmem/store/postgres_access.py).

Its first tables are in postgres_tables, the row-level policies in postgres_policies; the
later migrations are in modules by concern (postgres_embeddings, postgres_additions,
postgres_word_entries, postgres_access, postgres_write_shares, postgres_masked_prompts,
postgres_rendered_pieces, postgres_writers, postgres_replaced_turns,
postgres_counted_erasures, postgres_fact_history, postgres_forgotten_digests,
postgres_derived_rows, postgres_lease_writers, postgres_relayed_speakers,
postgres_theirs_kept), and MIGRATION_LIST
below says the order they all run in. A released migration is never edited: a schema change
is a new function, added at the end of that list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chatmem.store import (
    postgres_access,
    postgres_counted_erasures,
    postgres_derived_rows,
    postgres_fact_history,
    postgres_forgotten_digests,
    postgres_lease_writers,
    postgres_masked_prompts,
    postgres_relayed_speakers,
    postgres_rendered_pieces,
    postgres_replaced_turns,
    postgres_theirs_kept,
    postgres_write_shares,
    postgres_writers,
)
from chatmem.store.migrations import MigrationList
from chatmem.store.postgres_additions import (
    p003_superseded_turns,
    p004_vector_cache,
    p005_index_leases,
    p006_images,
    p008_session_erasures,
    p012_probes_before_prompt,
)
from chatmem.store.postgres_embeddings import p002_vectors
from chatmem.store.postgres_policies import ACCESS, USER_TABLES, policies
from chatmem.store.postgres_tables import TABLES, WORD_STATISTICS
from chatmem.store.postgres_word_entries import (
    p010_folded_words,
    p011_words_folded_again,
    p014_word_tokens_bounded,
    p016_traditional_chinese_folded,
    p019_kana_arabic_and_dotless_i_folded,
)

Execute = Callable[..., Any]
"""Runs one statement, with its parameters (%s) if any, and returns its cursor (psycopg's
Connection.execute)."""
Migration = Callable[[Execute], None]

BOOKKEEPING = "chatmem_migrations"
CREATE_BOOKKEEPING = (f"CREATE TABLE IF NOT EXISTS {BOOKKEEPING} "
                      "(name text PRIMARY KEY, applied_at text NOT NULL)")


def p001_schema(execute: Execute) -> None:
    """SQLite's schema after m008, with owners, row-level security and session shares."""
    for statement in TABLES.split(";"):
        if statement.strip():
            execute(statement)
    for statement in WORD_STATISTICS:
        execute(statement)
    for statement in policies("sessions",
                               "EXISTS (SELECT 1 FROM session_shares h WHERE h.session_id ="
                               " sessions.id AND h.grantee = current_user"
                               " AND h.owner = sessions.owner)",
                               "EXISTS (SELECT 1 FROM session_shares h WHERE h.session_id ="
                               " sessions.id AND h.grantee = current_user"
                               " AND h.owner = sessions.owner AND h.mode = 'write')",
                               insert="true", delete="false"):
        execute(statement)
    # Shares refer to nothing but themselves, so no policy can recurse through sessions.
    for statement in policies("session_shares", "grantee = current_user", "false",
                               insert="EXISTS (SELECT 1 FROM sessions s WHERE"
                               " s.id = session_shares.session_id AND s.owner = current_user)"):
        execute(statement)
    for table, (readable, writable, insertable) in ACCESS.items():
        for statement in policies(table, readable, writable, insert=f"({insertable})"):
            execute(statement)
    # Every role may use the tables; the policies decide which rows.
    tables = ", ".join(USER_TABLES)
    quoted = ", ".join(f"'{table}'" for table in USER_TABLES)
    execute(f"GRANT SELECT, INSERT, DELETE ON {tables} TO PUBLIC")
    # Every column but the owner: a role that may write a shared session cannot take it over.
    for table, columns in execute(
            "SELECT table_name, string_agg(quote_ident(column_name), ', ')"
            " FROM information_schema.columns WHERE table_schema = current_schema()"
            f" AND column_name <> 'owner' AND table_name IN ({quoted})"
            " GROUP BY table_name").fetchall():
        execute(f"GRANT UPDATE ({columns}) ON {table} TO PUBLIC")
    execute(f"GRANT SELECT ON chatmem_meta, {BOOKKEEPING} TO PUBLIC")
    execute("GRANT SELECT, UPDATE ON word_statistics TO PUBLIC")
    for table in ("sessions", "messages", "turns", "summaries", "facts", "fact_history",
                  "probes"):
        execute(f"GRANT USAGE ON SEQUENCE {table}_id_seq TO PUBLIC")

def p007_sealed_writes(execute: Execute) -> None:
    """Writes sealed like reads (issue 28): every right over a row is its session's.

    Rows move into no other session and change no owner; a share ended ends the rights
    over what was written under it; ids are the database's to give (session ids random)
    and no error tells of a row the role cannot read; the word statistics are per
    session, readable as the session is, written by definer triggers only. The
    statements are in postgres_access, which says what each rule is for.
    """
    postgres_access.seal(execute)


def p009_pinned_search_paths(execute: Execute) -> None:
    """No role's temporary table stands in for chatmem's in its functions: each function's
    search path is pinned (postgres_access.pin_search_paths says why)."""
    postgres_access.pin_search_paths(execute)


def p013_profile_facts_have_no_session(execute: Execute) -> None:
    """A user-profile fact (scope 'user') has no session: a CHECK, so no role makes one.

    Row security makes a fact with a session its session's owner's, readable through a
    share; marked scope 'user', a sharer's row read as the reader's own profile (sent in
    every context, listed as their /remember, not theirs to forget). chatmem never wrote
    such a row (upsert_fact drops the session of a profile fact, forks copy session facts
    only): one found is made what row security already took it for, a fact of the session
    it names, kept with its owner and history. (A session fact without a session reaches
    no context and is its writer's alone: left as it is.)"""
    # The constraint is checked on every row whoever runs it; the UPDATE, unforced.
    with postgres_access.unforced(execute, ["facts"]):
        execute("UPDATE facts SET scope = 'session', \"user\" = NULL"
                " WHERE scope = 'user' AND session_id IS NOT NULL")
        execute("ALTER TABLE facts ADD CONSTRAINT facts_profile_without_session"
                " CHECK (scope <> 'user' OR session_id IS NULL)")


def p015_write_shares_keep_what_is_written(execute: Execute) -> None:
    """A write share adds to a session: its grantee deletes none of its messages and turns
    and changes only what replacing the last turn and a purge need (postgres_write_shares)."""
    postgres_write_shares.narrow(execute)


def p017_session_settings_are_the_owners(execute: Execute) -> None:
    """A write share adds turns to a session: its strategy, parameters, model, system prompt
    (and prompt history) and tokenizer stay its owner's, by plain SQL too; a grantee moves
    only what his turns, /undo and purges there move (postgres_write_shares)."""
    postgres_write_shares.seal_settings(execute)


def p018_grantee_writes_placed_and_dated(execute: Execute) -> None:
    """What a write share's grantee adds goes where chatmem's own client puts it, dated by
    the server: the messages and turns he inserts come next in the session (one at a turn
    number far ahead stalled the owner's fact catch-up, at the largest bigint broke the
    session), and when he moves the session's `updated_at` (his turn there does) the
    server's clock sets it, not his, so neither his clock nor his SQL has retention erase
    the owner's session or keep it for good. The server dates what he adds (a message's
    time and pause, a turn's time), his turn's JSON columns must read back, an erasure he
    counts is one, and in the owner's turns he changes only the fact lines a purge masks
    (postgres_write_shares)."""
    postgres_write_shares.place_grantee_writes(execute)


def p020_grantee_masks_rendered_prompts_and_facts_dated(execute: Execute) -> None:
    """In the owner's turns a write share's grantee changes the rendered prompt (`rendered`,
    `rendered_prompt`) only where his purge masks a fact: by plain SQL he rewrote what her
    `inspect` shows she sent. The times of the facts he writes into her session (an added
    fact, an update, a forget, a use) are the server's now, not his: a time chatmem cannot
    read broke every read of her facts (postgres_masked_prompts)."""
    postgres_masked_prompts.mask_rendered_and_date_facts(execute)


def p021_rendered_pieces_read_as_chatmem_reads_them(execute: Execute) -> None:
    """The checks of p018 and p020 read a turn's rendered pieces as chatmem reads them: a
    grantee's pieces holding a NaN or a \\u0000 passed p018's check while p020 read them as
    no prompt at all, so he wrote any "exact model input" into the owner's `inspect`; a
    run's positions written as strings (`"from": "1"`) broke her `inspect --request`
    (postgres_rendered_pieces)."""
    postgres_rendered_pieces.read_rendered_pieces_as_chatmem(execute)


def p022_fact_history_found_by_its_session(execute: Execute) -> None:
    """SQLite's m021 for the reference PostgreSQL's schema followed without an index:
    deleting a session sets the earlier fact values it stated to no session, a scan of
    every earlier value per session deleted."""
    execute("CREATE INDEX IF NOT EXISTS fact_history_source_session"
            " ON fact_history (source_session_id)")


def p023_who_wrote_a_row(execute: Execute) -> None:
    """Every message and turn inserted from now on says, unforgeably, which role inserted it
    (`writer`): a write share's grantee who inserted a turn into the owner's session by plain
    SQL, naming no speaker, was read as the owner, and her next turn put his "My name is
    Mallory." into her profile; and a session fact keeps who stated it (`speaker`), one live
    value of a key per speaker (postgres_writers)."""
    postgres_writers.stamp_writers(execute)


def p024_grantee_facts_are_his(execute: Execute) -> None:
    """A session fact a role other than the session's owner inserts, or whose key, value or
    speaker it changes, is that role's (`speaker`, set by the server): a write share's
    grantee inserted a fact by plain SQL naming no speaker, or the owner, and her next turn
    sent his "name: Mallory" as hers. And a copy of a message into one's own session that
    names the message it copies (`copied_from`, same words) keeps its writer: a grantee's
    fork of her session read her words as his (postgres_writers)."""
    postgres_writers.stamp_fact_speakers(execute)


def p025_derived_memory_says_who_wrote_it(execute: Execute) -> None:
    """Every summary and strategy state row inserted or changed from now on says which role
    wrote it (`writer`, set by the server): a write share's grantee inserted by plain SQL a
    summary ("The user is named Mallory.") or a summary's boundary, and the owner's next
    context sent it as her memory. A reader trusts only what it or the session's owner wrote
    (postgres_writers)."""
    postgres_writers.stamp_derived_writers(execute)


def p026_token_counts_say_who_wrote_them(execute: Execute) -> None:
    """Every token count inserted or changed from now on says which role wrote it (`writer`,
    set by the server): a write share's grantee set the owner's counts to 0 by plain SQL and
    her next context overran her budget. A reader trusts only a count it or the session's
    owner wrote, and counts any other again (postgres_writers)."""
    postgres_writers.stamp_count_writers(execute)


def p027_recall_index_says_who_wrote_it(execute: Execute) -> None:
    """Every word entry and vector of a message inserted or changed from now on says which
    role wrote it (`writer`, set by the server): a write share's grantee deleted or rewrote
    the owner's entries and her recall found nothing, or what he chose. A reader trusts
    only an entry it or the session's owner wrote, and indexes any other message again
    (postgres_writers)."""
    postgres_writers.stamp_index_writers(execute)


def p028_grantee_replaces_only_the_last_turn(execute: Execute) -> None:
    """A write share's grantee takes only the session's last turn out of its history (what
    /retry and a regenerate replace) and changes or deletes none of its images and probes:
    by plain SQL he set `superseded` on any message of the owner's, and her next context,
    exports and forks left it out; he deleted her images and probes for good
    (postgres_replaced_turns)."""
    postgres_replaced_turns.last_turn_only(execute)


def p029_grantee_counts_only_erasures_and_keeps_fact_history(execute: Execute) -> None:
    """An erasure a write share's grantee counts in the owner's session stands only in the
    transaction that changed or deleted a row of it (his /retry, /undo, purge): by plain SQL
    he counted one with nothing erased, and each failed her turn under way, its reply not
    stored (postgres_counted_erasures). And the earlier values of the session's facts he
    adds are what a fact there said, and he deletes none: by plain SQL he added "name was:
    Mallory" under her fact and deleted her earlier values (postgres_fact_history). And a
    message whose text changes (a purge's mask) loses every cache entry pointing at it,
    whoever's: his entry of her erased text stayed, found by its digest
    (postgres_forgotten_digests)."""
    postgres_counted_erasures.count_only_erasures(execute)
    postgres_fact_history.kept_as_stated(execute)
    postgres_forgotten_digests.forget_changed_texts(execute)



def p030_grantee_adds_to_derived_memory(execute: Execute) -> None:
    """A write share's grantee adds a summary only as its next version and changes or
    deletes none; of a strategy's state he changes only a value and deletes only rows a third
    role wrote: by plain SQL he deleted the owner's latest summary and her next context sent
    the one before as covering every turn, deleted a key of her state (the rest read as all
    of it), and set a version to the largest bigint, failing each of her summary updates
    (postgres_derived_rows)."""
    postgres_derived_rows.derived_rows_kept(execute)


def p031_index_leases_say_who_wrote_them(execute: Execute) -> None:
    """A lease names the role that took it, and a reader honours only its own, the
    session's owner's or one from before: a write share's grantee's `chatmem index` (or
    his SQL renewing one) kept the owner's chat from embedding her new messages, his
    vectors of them being none she reads (postgres_lease_writers)."""
    postgres_lease_writers.lease_writers(execute)


def p032_relayed_speakers_keep_their_names(execute: Execute) -> None:
    """A session fact a write share's grantee writes may name a group chat's member his
    client relayed, as `carol (via bob)`: p024 stamped every such fact his, so carol's city
    became his (postgres_relayed_speakers)."""
    postgres_relayed_speakers.relayed_speakers(execute)


def p033_grantee_forgets_only_his_facts(execute: Execute) -> None:
    """In another role's session a role forgets, deletes or takes over only a fact it
    stated (or relayed): a write share's grantee's `facts forget` or plain SQL set
    `deleted_at` on the owner's fact and it left her `facts list` (postgres_theirs_kept)."""
    postgres_theirs_kept.theirs_kept(execute)


MIGRATION_LIST: MigrationList[Migration] = MigrationList()
for _migration in (
    p001_schema,
    p002_vectors,
    p003_superseded_turns,
    p004_vector_cache,
    p005_index_leases,
    p006_images,
    p007_sealed_writes,
    p008_session_erasures,
    p009_pinned_search_paths,
    p010_folded_words,
    p011_words_folded_again,
    p012_probes_before_prompt,
    p013_profile_facts_have_no_session,
    p014_word_tokens_bounded,
    p015_write_shares_keep_what_is_written,
    p016_traditional_chinese_folded,
    p017_session_settings_are_the_owners,
    p018_grantee_writes_placed_and_dated,
    p019_kana_arabic_and_dotless_i_folded,
    p020_grantee_masks_rendered_prompts_and_facts_dated,
    p021_rendered_pieces_read_as_chatmem_reads_them,
    p022_fact_history_found_by_its_session,
    p023_who_wrote_a_row,
    p024_grantee_facts_are_his,
    p025_derived_memory_says_who_wrote_it,
    p026_token_counts_say_who_wrote_them,
    p027_recall_index_says_who_wrote_it,
    p028_grantee_replaces_only_the_last_turn,
    p029_grantee_counts_only_erasures_and_keeps_fact_history,
    p030_grantee_adds_to_derived_memory,
    p031_index_leases_say_who_wrote_them,
    p032_relayed_speakers_keep_their_names,
    p033_grantee_forgets_only_his_facts,
):
    MIGRATION_LIST.add(_migration)
MIGRATIONS = MIGRATION_LIST.functions
"""Every migration, in the order they run; each is known by its function's name."""
migration_names = MIGRATION_LIST.names
pending_migrations = MIGRATION_LIST.pending
