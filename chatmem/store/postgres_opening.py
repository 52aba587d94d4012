"""Opening a PostgreSQL history's tables: checking they are chatmem's and not a newer
chatmem's, and creating or upgrading them when this role may (their owner; an upgrade alone,
chatmem.store.postgres_upgrading). Part of `PostgresBackend`."""

from __future__ import annotations

import time
from typing import Any

from chatmem.errors import NotChatmemDatabase, StoreError, StoreFailure
from chatmem.history_notices import WaitingForUpgrade
from chatmem.store import postgres_schema as schema
from chatmem.store import postgres_upgrading as upgrading
from chatmem.store.postgres_upgrading import WRITE_LOCK
from chatmem.store.upgrading import UPGRADE_WAIT_S, UpgradeListener, back_off


class PostgresOpening:
    """The schema methods of `PostgresBackend` (the attributes are set by its `__init__`)."""

    location: str
    busy_timeout_ms: int
    _conn: Any
    _writing: int
    _own_statement_timeout: bool
    _on_upgrade: UpgradeListener

    def _tables(self) -> set[str]:
        return {r[0] for r in self._conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}

    def _pending_migrations(self) -> list[str]:
        """The migrations this database still needs; raises if it is not ours or newer."""
        tables = self._tables()
        if not tables or tables == {schema.BOOKKEEPING}:
            return schema.pending_migrations(self._applied(tables))
        if "chatmem_meta" not in tables:
            raise NotChatmemDatabase(
                f"{self.location} is not a chatmem database (it has other tables)",
                location=self.location)
        applied = self._applied(tables)
        unknown = applied - schema.migration_names()
        if unknown:
            newest = sorted(unknown)[-1]
            raise NotChatmemDatabase(
                f"{self.location} was written by a newer chatmem (schema {newest});"
                " upgrade chatmem", location=self.location, newer_schema=newest)
        return schema.pending_migrations(applied)

    def _applied(self, tables: set[str]) -> set[str]:
        if schema.BOOKKEEPING not in tables:
            return set()
        return {r[0] for r in self._conn.execute(f"SELECT name FROM {schema.BOOKKEEPING}")}

    def _migrate(self) -> None:
        pending = self._pending_migrations()
        if not pending:
            return
        may_create = self._conn.execute(
            "SELECT coalesce(has_schema_privilege(current_schema(), 'CREATE'), false)"
            ).fetchone()[0]
        creating = not self._tables() - {schema.BOOKKEEPING}
        if creating:
            if not may_create:
                raise self._no_tables()
        elif not (may_create and self._owns_tables()):
            raise self._needs_upgrade(pending)
        self._run_migrations(upgrade=not creating)

    def _owns_tables(self) -> bool:
        """Whether this role may alter chatmem's tables (their owner, a member of its role, or
        a superuser): what a migration does, and what a person who chats may not."""
        return bool(self._conn.execute(
            "SELECT coalesce(bool_and(pg_has_role(tableowner, 'USAGE')), false)"
            " FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'chatmem_meta'"
            ).fetchone()[0])

    def _needs_upgrade(self, pending: list[str]) -> StoreError:
        """Tables an earlier chatmem made, which this one migrates: only their owner may, and
        a person who chats is not it (README: the administrator opened the database first)."""
        return StoreError(
            f"{self.location}: this chatmem must upgrade the database's tables first (pending"
            f": {', '.join(pending)}), which only their owner may do: the"
            " administrator who set it up opens it once with this chatmem (chatmem sessions"
            " list --db URL-AS-ADMIN), then this role can use it",
            kind=StoreFailure.NEEDS_UPGRADE, location=self.location)

    def _no_tables(self) -> StoreError:
        """An empty database this role may not create chatmem's tables in: whoever is to own
        them (README: the administrator, not a person who chats) opens it first."""
        return StoreError(
            f"{self.location} has no chatmem tables yet, and this role may not create them"
            " (no CREATE on its schema): an administrator opens it with chatmem"
            " first (chatmem admin add-user ROLE --db URL-AS-ADMIN), then this role can use it",
            kind=StoreFailure.NO_TABLES, location=self.location)

    def _run_migrations(self, *, upgrade: bool) -> None:
        """Under the write lock; an upgrade alone (postgres_upgrading), waiting a little for
        the others to close, the lock let go meanwhile, then refused."""
        deadline = upgrading.alone_deadline()
        while True:
            self._writing += 1
            try:
                with self._conn.transaction():
                    if self._own_statement_timeout:  # an index rebuilt over a large history
                        self._conn.execute("SET LOCAL statement_timeout = 0")
                    upgrading.take_write_lock(
                        self._conn, WRITE_LOCK, self.busy_timeout_ms, self._on_upgrade,
                        WaitingForUpgrade(self.location, UPGRADE_WAIT_S))
                    if upgrading.migrate(self._conn, self._pending_migrations,
                                         location=self.location, upgrade=upgrade,
                                         tell=self._on_upgrade):
                        return
            finally:
                self._writing -= 1
            if time.monotonic() > deadline:
                raise upgrading.refused(self._conn, self.location)
            back_off()
