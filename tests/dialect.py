"""What a test asks of either backend's own tables and settings, asked in its dialect.

The store's SQL is portable; a test that looks beneath it (the full-text index,
a read-only switch, an integrity check) says so here, once per backend.
"""

from __future__ import annotations

from chatmem.store import Store
from chatmem.store.connection import fetch_value

WORD_INDEX = {"sqlite": "messages_fts", "postgresql": "message_words"}


def word_entries(store: Store) -> int:
    """Entries in the full-text index."""
    return int(fetch_value(store.db, f"SELECT count(*) FROM {WORD_INDEX[store.db.kind]}"))


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
    return all(fetch_value(store.db, f"SELECT count(*) FROM {t}") is not None
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


def refuse_change(store: Store, table: str, row_id: int, message: str, *,
                  persistent: bool = False) -> None:
    """A trigger that fails an UPDATE or DELETE of one row of `table` with `message`: a
    write the database itself refuses part-way through a transaction.

    On SQLite the trigger is this connection's own (TEMP) unless `persistent`, when it is
    in the file, for a command run against it; on PostgreSQL it is the database's.
    `allow_change` removes it.
    """
    condition = f"OLD.id = {int(row_id)}"
    if store.db.kind == "sqlite":
        temp = "" if persistent else "TEMP "
        for event in ("UPDATE", "DELETE"):
            store.db.execute(f"CREATE {temp}TRIGGER refuse_{event.lower()}_{table}"
                             f" BEFORE {event} ON {table} WHEN {condition}"
                             f" BEGIN SELECT RAISE(ABORT, '{message}'); END")
        return
    store.db.execute(f"CREATE FUNCTION refuse_{table}() RETURNS trigger LANGUAGE plpgsql"
                     f" AS $$ BEGIN IF {condition} THEN RAISE EXCEPTION '{message}'; END IF;"
                     " RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END; END $$")
    store.db.execute(f"CREATE TRIGGER refuse_{table} BEFORE UPDATE OR DELETE ON {table}"
                     f" FOR EACH ROW EXECUTE FUNCTION refuse_{table}()")


def allow_change(store: Store, table: str) -> None:
    """Remove refuse_change's trigger."""
    if store.db.kind == "sqlite":
        for event in ("update", "delete"):
            store.db.execute(f"DROP TRIGGER IF EXISTS refuse_{event}_{table}")
        return
    store.db.execute(f"DROP TRIGGER IF EXISTS refuse_{table} ON {table}")
    store.db.execute(f"DROP FUNCTION IF EXISTS refuse_{table}()")


def every_row(store: Store) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table (the full-text index's own tables too), each table's rows
    in one order: two snapshots are equal when not one stored byte differs."""
    if store.db.kind == "sqlite":
        tables = [r[0] for r in store.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()]
    else:
        tables = [r[0] for r in store.db.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            " ORDER BY tablename").fetchall()]
    return {table: sorted((tuple(_plain(value) for value in row) for row in store.db.execute(
        f'SELECT * FROM "{table}"').fetchall()), key=repr) for table in tables}


def _plain(value: object) -> object:
    """A column's value as something `==` and `repr` compare by content (a vector, bytes)."""
    if isinstance(value, memoryview):
        return bytes(value)
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else value
