"""Every change to the history file's schema since its first tables (chatmem.store.sqlite_tables),
one function each, in the order they run (chatmem.store.schema runs them). A released one
is never edited: a schema change is a new function at the end. The stored rows an upgrade
rewrites, it rewrites in bounded steps through chatmem.store.sqlite_rewrites."""

from __future__ import annotations

from collections.abc import Callable

import sqlite_utils

from chatmem.store import sqlite_rewrites as rewrites
from chatmem.store.migrations import MigrationList

Migration = Callable[[sqlite_utils.Database], None]
UPGRADES: MigrationList[Migration] = MigrationList()
migration = UPGRADES.add


@migration
def m002_recordings(db: sqlite_utils.Database) -> None:
    """What a session was recorded with: its tokenizer, each turn's system prompt, its probes.

    `session_prompts` holds the system prompt in effect from a turn on (a
    `/system` mid-session adds a row), so inspect, replay and export use the
    prompt each turn was sent with. `probes` keeps a transcript's probe lines
    through an import, at the message position they were asked after.
    """
    db.executescript(
        """
        ALTER TABLE sessions ADD COLUMN tokenizer TEXT;
        CREATE TABLE session_prompts (
            session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            from_turn INTEGER NOT NULL,
            system TEXT,
            PRIMARY KEY (session_id, from_turn)
        );
        INSERT INTO session_prompts (session_id, from_turn, system)
            SELECT id, 1, system FROM sessions;
        UPDATE sessions SET tokenizer = (
            SELECT t.tokenizer FROM turns t WHERE t.session_id = sessions.id
            AND t.tokenizer IS NOT NULL ORDER BY t.number DESC LIMIT 1);
        CREATE TABLE probes (
            id INTEGER PRIMARY KEY,
            session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            after_position INTEGER NOT NULL,
            question TEXT NOT NULL,
            expect_ids TEXT NOT NULL DEFAULT '[]',
            expect_text TEXT NOT NULL DEFAULT '[]'
        );
        CREATE INDEX probes_session ON probes (session_id, after_position);
        """
    )


@migration
def m003_stemmed_index_and_vectors(db: sqlite_utils.Database) -> None:
    """English words stemmed in the full-text index; message vectors per embedding model.

    The index keeps its precomputed terms (CJK bigrams pass through Porter
    unchanged); only the tokenizer that reads them changes, so the rows are
    copied, not recomputed. Vectors are keyed by message and model, so a
    model change never mixes two models' vectors.
    """
    db.executescript(
        """
        CREATE VIRTUAL TABLE messages_fts_stemmed USING fts5(terms, tokenize='porter unicode61');
        INSERT INTO messages_fts_stemmed (rowid, terms) SELECT rowid, terms FROM messages_fts;
        DROP TABLE messages_fts;
        ALTER TABLE messages_fts_stemmed RENAME TO messages_fts;
        CREATE TABLE message_vectors (
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            model TEXT NOT NULL,
            dimensions INTEGER NOT NULL,
            vector BLOB NOT NULL,
            context_vector BLOB NOT NULL,
            PRIMARY KEY (model, message_id)
        ) WITHOUT ROWID;
        """
    )


@migration
def m004_fact_provenance(db: sqlite_utils.Database) -> None:
    """Where each fact was stated (session and turn), and the values it had before.

    A newer value replaces a fact's value; the older one moves to `fact_history`
    with where it was stated, so `facts list` can show what changed and a purge
    of the fact erases its history too (ON DELETE CASCADE).
    """
    db.executescript(
        """
        ALTER TABLE facts ADD COLUMN source_session_id INTEGER
            REFERENCES sessions(id) ON DELETE SET NULL;
        UPDATE facts SET source_session_id = (
            SELECT m.session_id FROM messages m WHERE m.id = facts.source_message_id)
            WHERE source_message_id IS NOT NULL;
        UPDATE facts SET source_session_id = session_id
            WHERE source_session_id IS NULL AND scope = 'session';
        CREATE TABLE fact_history (
            id INTEGER PRIMARY KEY,
            fact_id INTEGER NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            source_session_id INTEGER REFERENCES sessions(id) ON DELETE SET NULL,
            source_turn INTEGER,
            stated_at TEXT NOT NULL,
            replaced_at TEXT NOT NULL
        );
        CREATE INDEX fact_history_fact ON fact_history (fact_id);
        """
    )


@migration
def m005_indexes_and_contexts_by_reference(db: sqlite_utils.Database) -> None:
    """Indexes for every query a turn runs, and turn contexts that refer to stored messages.

    facts_session: a session's facts without reading every session's; the
    others let deleting messages (a session) find the rows pointing at them.
    Existing turns are rewritten in storage format 2 (chatmem.store.contexts),
    which `inspect` reads back as exactly the same context.
    """
    for statement in (
        "CREATE INDEX facts_session ON facts (session_id)",
        "CREATE INDEX facts_source_message ON facts (source_message_id)",
        "CREATE INDEX facts_source_session ON facts (source_session_id)",
        "CREATE INDEX turns_user_message ON turns (user_message_id)",
        "CREATE INDEX turns_assistant_message ON turns (assistant_message_id)",
    ):
        db.execute(statement)
    rewrites.contexts_by_reference(db)


@migration
def m017_probes_before_prompt(db: sqlite_utils.Database) -> None:
    """Whether a probe was asked before the system prompt change after its message (its
    line above the system_prompt line): export writes it back where it was read."""
    db.execute("ALTER TABLE probes ADD COLUMN before_prompt INTEGER NOT NULL DEFAULT 0")


@migration
def m006_retention(db: sqlite_utils.Database) -> None:
    """Retention: a session's own retention, a fact's own expiry and when a context last used it.

    `sessions.retention_days`: NULL follows the config's retention_days, 0 keeps
    the session for good, N deletes it once idle for N days. `facts.expires_at`
    is the end a user gave a fact (/remember --for 7d); `facts.used_at` is when a
    context last sent it, so a fact that is read lives on ("read extends life").
    """
    db.executescript(
        """
        ALTER TABLE sessions ADD COLUMN retention_days INTEGER;
        ALTER TABLE facts ADD COLUMN expires_at TEXT;
        ALTER TABLE facts ADD COLUMN used_at TEXT;
        CREATE INDEX sessions_updated ON sessions (updated_at);
        """
    )


@migration
def m007_sitting_gaps(db: sqlite_utils.Database) -> None:
    """The pause before each message, so recall finds where sittings start through an index.

    `messages.gap_s` is the seconds since the session's previous message
    (infinity for the first one, or where a time cannot be read); the
    (session, gap) index lists a session's sitting starts without reading its
    messages. Existing rows are filled in the first time recall reads the
    session (as are a fork's copies), so upgrading a file costs nothing.
    """
    db.executescript(
        """
        ALTER TABLE messages ADD COLUMN gap_s REAL;
        CREATE INDEX messages_sittings ON messages (session_id, gap_s);
        """
    )


@migration
def m008_rendered_prompts_by_reference(db: sqlite_utils.Database) -> None:
    """A local model's rendered prompt stored as template text and references to messages.

    `turns.rendered` holds the pieces (chatmem.store.rendered) and
    `rendered_prompt` is then NULL; a prompt that cannot be referenced stays
    whole in `rendered_prompt`. Existing turns are converted in batches; each
    reads back byte for byte or is left as it was.
    """
    db.execute("ALTER TABLE turns ADD COLUMN rendered TEXT")
    rewrites.rendered_prompts_by_reference(db)


@migration
def m009_superseded_turns(db: sqlite_utils.Database) -> None:
    """Turns replaced by /retry or /edit-last: kept, inspectable, out of memory.

    `messages.superseded` (0/1) takes a replaced turn's messages out of every
    history, recall and memory read while they stay stored; `turns.superseded_by`
    is the number of the turn that replaced it, which `inspect` names.
    """
    db.executescript(
        """
        ALTER TABLE messages ADD COLUMN superseded INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE turns ADD COLUMN superseded_by INTEGER;
        """
    )


@migration
def m010_vector_cache(db: sqlite_utils.Database) -> None:
    """Stored vectors found by the text they embed, so a text is embedded once per model.

    `digest` is the sha256 of the exact text (a message's own text, or its
    context text when `context` is 1); the vector itself stays in
    `message_vectors`, so the cache costs no second copy, and a message's
    deletion (cascade) or erased vectors (redaction) take its entries along.
    """
    db.executescript(
        """
        CREATE TABLE vector_cache (
            model TEXT NOT NULL,
            digest TEXT NOT NULL,
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            context INTEGER NOT NULL,
            PRIMARY KEY (model, digest)
        ) WITHOUT ROWID;
        CREATE INDEX vector_cache_message ON vector_cache (message_id);
        """
    )


@migration
def m011_index_leases(db: sqlite_utils.Database) -> None:
    """Who embeds a session's backlog (chatmem.store.leases): one lease per session and
    model, so a chat leaves to a running `chatmem index` what it is embedding."""
    db.executescript(
        """
        CREATE TABLE index_leases (
            session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            model TEXT NOT NULL,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            heartbeat_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            PRIMARY KEY (session_id, model)
        ) WITHOUT ROWID;
        """
    )


@migration
def m012_images(db: sqlite_utils.Database) -> None:
    """Images attached to messages (issue 30): kept once per session by the sha256 of their
    bytes, which a turn's context names; erased with their session."""
    db.executescript(
        """
        CREATE TABLE images (
            session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            digest TEXT NOT NULL,
            mime TEXT NOT NULL,
            width INTEGER NOT NULL,
            height INTEGER NOT NULL,
            data BLOB NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (session_id, digest)
        ) WITHOUT ROWID;
        """
    )


@migration
def m013_session_erasures(db: sqlite_utils.Database) -> None:
    """`sessions.erasures` counts the changes that took text out of a session's memory (a
    purge rewriting its messages, a turn replaced or put back), so an engine kept open,
    in this process or another, knows its caches may hold what is gone."""
    db.execute("ALTER TABLE sessions ADD COLUMN erasures INTEGER NOT NULL DEFAULT 0")


@migration
def m014_folded_words(db: sqlite_utils.Database) -> None:
    """Index entries as fts.index_text makes them now: words with combining marks (Hindi,
    Thai, Arabic harakat) one term, full-width ASCII as ASCII, Thai-like runs as bigrams,
    and each run's last character alone, so a one-character word (猫) is found.

    Only the messages whose terms change are written (fts.indexed_differently)."""
    from chatmem import fts

    rewrites.index_again(db, fts.indexed_differently)


@migration
def m015_fact_ids_never_reused(db: sqlite_utils.Database) -> None:
    """A fact's id names it for good: `facts` takes AUTOINCREMENT, so the id of a fact
    erased (a purge, a deleted session, retention) is never given to the next one. A stale
    id (`facts forget ID`, MCP's forget) then finds no fact rather than another session's.
    PostgreSQL's sequence never reused one. SQLite cannot add AUTOINCREMENT to a table:
    both fact tables are made again, ids and rows as they were."""
    rewrites.fact_ids_never_reused(db)


@migration
def m016_words_folded_again(db: sqlite_utils.Database) -> None:
    """Index entries as fts.index_text makes them now: Vietnamese and Greek letters without
    their accents (nguyen finds Nguyễn, σισυφος Σίσυφος), and no character that draws
    nothing inside a word (李\\u200b雷 is 李雷). Only the messages that may hold one are
    written again (fts.folded_differently_since_m016), in steps of
    rewrites.REINDEXED_AT_ONCE."""
    from chatmem import fts

    rewrites.index_again(db, fts.folded_differently_since_m016)


@migration
def m018_traditional_chinese_folded(db: sqlite_utils.Database) -> None:
    """Index entries as fts.index_text makes them now: traditional Chinese characters as
    simplified (台北 finds 臺北). Only the messages holding one are written again
    (fts.folded_differently_since_m018)."""
    from chatmem import fts

    rewrites.index_again(db, fts.folded_differently_since_m018)


@migration
def m019_extracted_profile_facts_in_their_session(db: sqlite_utils.Database) -> None:
    """Facts the extractor filed under the user profile before facts stayed in their session
    (m004's version; the extractor then chose 'user' for a name, an allergy, a home city)
    go back to the session they were stated in: after the upgrade they followed into every
    new session, though the user never opted in. Told apart by their rows: the extractor
    wrote a source turn, /remember (which then defaulted to the profile) none; made before
    m004 was applied. chatmem.store.sqlite_rewrites.extracted_profile_facts_home says which
    stay."""
    rewrites.extracted_profile_facts_home(db)


@migration
def m020_kana_arabic_and_dotless_i_folded(db: sqlite_utils.Database) -> None:
    """Index entries as fts.index_text makes them now: half-width katakana as full-width
    (ﾀﾅｶ is found by タナカ), alef with hamza or madda as bare alef, tatweel out, Persian
    ی and ک as Arabic ي and ك, Turkish ı as i. Only the messages holding one are written
    again (fts.folded_differently_since_m020)."""
    from chatmem import fts

    rewrites.index_again(db, fts.folded_differently_since_m020)


@migration
def m021_vectors_and_fact_history_found_by_what_they_name(db: sqlite_utils.Database) -> None:
    """Indexes on the two references a deletion follows without one: a message's vectors
    (message_vectors is keyed model first) and the earlier fact values a session stated.
    Deleting a session's messages scanned every stored vector once per message, so deleting
    10,000 messages with vectors took 18 s of CPU, and more by the square of the size.
    PostgreSQL's schema has had the vectors' index from its first table; p022 adds the
    other."""
    db.conn.execute("CREATE INDEX IF NOT EXISTS message_vectors_message"
                    " ON message_vectors (message_id)")
    db.conn.execute("CREATE INDEX IF NOT EXISTS fact_history_source_session"
                    " ON fact_history (source_session_id)")


@migration
def m022_facts_keep_who_stated_them(db: sqlite_utils.Database) -> None:
    """A session fact says who stated it (`speaker`: a group chat's member; NULL: the user),
    and one key holds a live value per speaker: bob's "我住在巴黎。" and then the user's
    "我住在罗马。" kept one row of 城市, and Paris was gone. Rows stored before are the
    user's (NULL) and read as before; nothing is rewritten."""
    db.conn.execute("ALTER TABLE facts ADD COLUMN speaker TEXT")


@migration
def m023_vectors_kept_in_their_page(db: sqlite_utils.Database) -> None:
    """message_vectors as a rowid table keyed UNIQUE (model, message_id), every row kept as
    it was (vector_cache points at messages, not at these rows). A WITHOUT ROWID table keeps
    at most ~1,000 bytes of a row in its 4 KiB page; a row (two 512-byte float16 vectors
    and its keys) is a little more, so each one spilled into an overflow page of its own,
    three quarters empty: 4,684 bytes a row on disk for 1,399 now, ~10 kB of file and
    ~12 kB of WAL a turn where ~2 kB are vectors. The pages freed stay in the file (no
    VACUUM), taken by the rows written next."""
    db.conn.execute("""CREATE TABLE message_vectors_kept (
        message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        dimensions INTEGER NOT NULL,
        vector BLOB NOT NULL,
        context_vector BLOB NOT NULL,
        UNIQUE (model, message_id)
    )""")
    # In the key's order, as a model's vectors are read (vector_batch at an open).
    rewrites.vectors_moved(db, "message_vectors_kept")
    db.conn.execute("DROP TABLE message_vectors")
    db.conn.execute("ALTER TABLE message_vectors_kept RENAME TO message_vectors")
    db.conn.execute("CREATE INDEX message_vectors_message ON message_vectors (message_id)")
