"""The schema of the history file, as named migrations applied once.

A released migration is never edited: a schema change is a new function (at the
end of chatmem.store.sqlite_upgrades; the first tables are chatmem.store.sqlite_tables).
Which migrations a file has is recorded in `_sqlite_migrations` (set
"chatmem"), the table and rows sqlite-utils' Migrations keeps, so files from
every chatmem version open and upgrade alike.
"""

from __future__ import annotations

import sqlite_utils

from chatmem.store.migrations import MigrationList
from chatmem.store.sqlite_tables import m001_initial
from chatmem.store.sqlite_upgrades import UPGRADES, Migration
from chatmem.timestamps import utc_now

MIGRATION_SET = "chatmem"
MIGRATION_LIST: MigrationList[Migration] = MigrationList()
for _migration in (m001_initial, *UPGRADES.functions):
    MIGRATION_LIST.add(_migration)
MIGRATIONS = MIGRATION_LIST.functions
"""Every migration, in the order they run; each is known by its function's name."""
migration_names = MIGRATION_LIST.names
pending_migrations = MIGRATION_LIST.pending


def apply_migrations(db: sqlite_utils.Database, names: list[str]) -> None:
    """Run the named migrations in the caller's transaction, recording each.

    The whole upgrade is one transaction, bookkeeping table included, so a
    crash leaves the file as it was.
    """
    db.execute(
        'CREATE TABLE IF NOT EXISTS "_sqlite_migrations" (\n'
        '   "id" INTEGER PRIMARY KEY,\n   "migration_set" TEXT,\n   "name" TEXT,\n'
        '   "applied_at" TEXT\n)')
    db.execute('CREATE UNIQUE INDEX IF NOT EXISTS "idx__sqlite_migrations_migration_set_name"'
               '\n    ON "_sqlite_migrations" ("migration_set", "name")')
    for fn in MIGRATIONS:
        if fn.__name__ in names:
            fn(db)
            db.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at)"
                       " VALUES (?, ?, ?)",
                       [MIGRATION_SET, fn.__name__, str(utc_now())])
