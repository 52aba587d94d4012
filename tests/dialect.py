"""What a test asks of either backend's own tables and settings, asked in its dialect.

The store's SQL is portable; a test that looks beneath it (the full-text index,
a read-only switch, an integrity check) says so here, once per backend.
"""

from __future__ import annotations

from chatmem.store import Store

WORD_INDEX = {"sqlite": "messages_fts", "postgresql": "message_words"}


def word_entries(store: Store) -> int:
    """Entries in the full-text index."""
    return int(store._value(f"SELECT count(*) FROM {WORD_INDEX[store.db.kind]}"))


def set_read_only(store: Store, read_only: bool) -> None:
    """Make every write on this connection fail as a read-only database's would."""
    if store.db.kind == "sqlite":
        store.db.execute(f"PRAGMA query_only = {'ON' if read_only else 'OFF'}")
    else:
        store.db.execute(f"SET default_transaction_read_only = {'on' if read_only else 'off'}")


def intact(store: Store) -> bool:
    """The database's own consistency check (SQLite's integrity_check; PostgreSQL checks
    its pages itself, so: the tables answer)."""
    if store.db.kind == "sqlite":
        return bool(store.db.execute("PRAGMA integrity_check").fetchone() == ("ok",))
    return all(store._value(f"SELECT count(*) FROM {t}") is not None
               for t in ("sessions", "messages", "turns", "message_words"))


def refuse_inserts(store: Store, table: str, message: str) -> None:
    """A trigger on this connection's `table` that fails every INSERT with `message`."""
    if store.db.kind == "sqlite":
        store.db.execute(f"CREATE TEMP TRIGGER refuse_{table} BEFORE INSERT ON {table}"
                         f" BEGIN SELECT RAISE(ABORT, '{message}'); END")
        return
    store.db.execute(f"CREATE FUNCTION refuse_{table}() RETURNS trigger LANGUAGE plpgsql"
                     f" AS $$ BEGIN RAISE EXCEPTION '{message}'; END $$")
    store.db.execute(f"CREATE TRIGGER refuse_{table} BEFORE INSERT ON {table}"
                     f" FOR EACH ROW EXECUTE FUNCTION refuse_{table}()")
