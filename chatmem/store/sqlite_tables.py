"""The tables every history file starts from: the first migration (chatmem.store.schema runs
it, and every later one in chatmem.store.sqlite_upgrades, in order)."""

from __future__ import annotations

import sqlite_utils


def m001_initial(db: sqlite_utils.Database) -> None:
    db.execute("CREATE TABLE chatmem_meta (key TEXT PRIMARY KEY, value TEXT)")
    db.execute("INSERT INTO chatmem_meta VALUES ('application', 'chatmem')")
    db.executescript(
        """
        CREATE TABLE sessions (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            strategy TEXT NOT NULL,
            params TEXT NOT NULL DEFAULT '{}',
            provider TEXT,
            model TEXT,
            system TEXT,
            user TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            turn INTEGER NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
            content TEXT NOT NULL,
            external_id TEXT,
            created_at TEXT NOT NULL,
            UNIQUE (session_id, position)
        );
        CREATE INDEX messages_session_turn ON messages (session_id, turn);
        CREATE TABLE token_counts (
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            tokenizer TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            PRIMARY KEY (message_id, tokenizer)
        );
        CREATE TABLE turns (
            id INTEGER PRIMARY KEY,
            session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            number INTEGER NOT NULL,
            history_turn INTEGER,
            status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'cancelled')),
            input TEXT NOT NULL,
            reply TEXT,
            context TEXT NOT NULL,
            strategy TEXT NOT NULL,
            params TEXT NOT NULL DEFAULT '{}',
            provider TEXT,
            model TEXT,
            tokenizer TEXT,
            estimated_tokens INTEGER,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            latency_ms INTEGER,
            rendered_prompt TEXT,
            error TEXT,
            user_message_id INTEGER REFERENCES messages(id) ON DELETE SET NULL,
            assistant_message_id INTEGER REFERENCES messages(id) ON DELETE SET NULL,
            created_at TEXT NOT NULL,
            UNIQUE (session_id, number)
        );
        CREATE TABLE summaries (
            id INTEGER PRIMARY KEY,
            session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            strategy TEXT NOT NULL,
            version INTEGER NOT NULL,
            text TEXT NOT NULL,
            covered_ids TEXT NOT NULL DEFAULT '[]',
            last_message_id INTEGER,
            anchors TEXT NOT NULL DEFAULT '[]',
            dropped_anchors TEXT NOT NULL DEFAULT '[]',
            model TEXT,
            created_at TEXT NOT NULL,
            UNIQUE (session_id, strategy, version)
        );
        CREATE TABLE facts (
            id INTEGER PRIMARY KEY,
            scope TEXT NOT NULL CHECK (scope IN ('session', 'user')),
            user TEXT,
            session_id INTEGER REFERENCES sessions(id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            source_message_id INTEGER REFERENCES messages(id) ON DELETE SET NULL,
            source_turn INTEGER,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            deleted_at TEXT
        );
        CREATE INDEX facts_scope ON facts (scope, user, session_id);
        CREATE TABLE strategy_state (
            session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            strategy TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (session_id, strategy, key)
        );
        CREATE VIRTUAL TABLE messages_fts USING fts5(terms);
        """
    )
