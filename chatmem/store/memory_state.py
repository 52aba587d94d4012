"""Memory state the strategies derive from the history: strategy state and versioned
summaries (the MemoryStateRepository of store.protocols; facts are in store.fact_tables)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from chatmem.errors import NotFound, StoreConflict
from chatmem.store import steps
from chatmem.store.connection import Connection, fetch_rows, fetch_value
from chatmem.store.postgres_writers import trusted_by_reader, trusted_memory, trusted_memory_on
from chatmem.store.records import (
    StateRow,
    SummaryRecord,
)
from chatmem.store.state_coverage import COVERS_KEY
from chatmem.store.stored_values import json_text
from chatmem.store.writer_state import (
    WRITER_NAME,
    as_kept,
    counted_elsewhere,
    own_rows,
    per_writer,
)

SUMMARY_COLUMNS = ("s.*, (SELECT m.turn FROM messages m WHERE m.id = s.last_message_id)"
                   " AS last_turn")
"""A summary row and the turn of the last message it covers (SummaryRecord.last_turn)."""
VERSION_TRIES = 5
"""How many next versions a summary's insert takes before it gives up (add_summary)."""


class MemoryTables:
    """A strategy's own state and its versioned summaries (`store.memory`).

    On PostgreSQL a strategy's derived memory in a session is read only as the reader or the
    session's owner wrote it (p025's `writer`): a write share's grantee who put a summary or
    a state row there (his turns' upkeep, or plain SQL) is not her memory. A strategy with a
    state row another role wrote has no state for this reader, and its summaries are only
    those the reader or the owner wrote: its next update goes on from the latest of them
    (which ends at its last message's turn, SummaryRecord.last_turn) and folds only the
    turns it does not cover (not her whole history again, as once after each of his turns),
    and that update's state replaces the rows it did not trust. Rows stored before p025
    read as before."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._db = connection.db
        self._postgres = self._db.kind == "postgresql"

    def trusted(self, alias: str, strategy: str) -> str:
        """` AND` a condition true of a row of `alias` (summaries, strategy_state) whose
        strategy (`strategy`, SQL) has derived memory this reader trusts in its session."""
        return trusted_memory_on(self._db.kind, alias, strategy)

    # -- strategy state -----------------------------------------------------

    def strategy_state(self, session_id: int, strategy: str) -> dict[str, Any]:
        """The strategy's own values, without chatmem's record of what they cover. A value
        that is not JSON (edited by hand, or by a write grantee's SQL) is one line naming
        the session and how its owner drops that state (`sessions reset-state`)."""
        values = {}
        rows = own_rows(self._db, "key, value", session_id, strategy)
        if not all(r["trusted"] for r in rows):
            return {}
        for r in rows:
            if r["key"] == COVERS_KEY:
                continue
            try:
                values[r["key"]] = json.loads(r["value"] or "null")
            except (ValueError, RecursionError):
                raise self.state_row(session_id, strategy, r["key"]).error() from None
        return values

    def own_state_value(self, session_id: int, strategy: str, key: str) -> tuple[bool, Any]:
        """One value of the strategy's state as its row alone is trusted (the reader or the
        session's owner wrote it, or it was stored before p025), whatever wrote the others:
        (False, None) when another role wrote that row or it is not JSON, else (True, the
        value, None when there is none). A summary strategy's reader whose state reads as
        absent keeps the user's unpins by it (memory.summary_state)."""
        rows = own_rows(self._db, "value", session_id, strategy, " AND key = ?", [key])
        if not rows:
            return True, None
        try:
            return (True, json.loads(rows[0]["value"] or "null")) if rows[0]["trusted"] \
                else (False, None)
        except (ValueError, RecursionError):
            return False, None

    def owners_state_value(self, session_id: int, strategy: str, key: str) -> Any:
        """One value of the strategy's state as the session's owner keeps it, read by a
        write share's grantee who keeps his own (writer_state.per_writer); None when there is
        none, its row is one this reader does not trust, or it is not JSON (PostgreSQL; None
        on a file)."""
        if not self._postgres:
            return None
        rows = fetch_rows(self._db, "SELECT value FROM strategy_state s WHERE session_id = ?"
                          f" AND strategy = ? AND key = ? AND {trusted_by_reader('s')}",
                          [session_id, strategy, key])
        try:
            return json.loads(rows[0]["value"] or "null") if rows else None
        except (ValueError, RecursionError):
            return None

    def counted_elsewhere(self, session_id: int, owner: str, key: str) -> int:
        """writer_state.counted_elsewhere (PostgreSQL; 0 on a file, one writer)."""
        return counted_elsewhere(self._db, session_id, owner, key) if self._postgres else 0

    def summarized_without_state(self, session_id: int | None = None
                                 ) -> list[tuple[int, str]]:
        """(session id, strategy) of each strategy with summaries this reader trusts but no
        boundary it trusts beside them, in one session or all (PostgreSQL: another role's
        upkeep wrote its state; memory.summary_state rebuilds its pins from the summaries);
        never on a file."""
        if not self._postgres:
            return []
        sql = ("SELECT DISTINCT u.session_id, u.strategy FROM summaries u"
               f" WHERE {trusted_by_reader('u')} AND NOT EXISTS (SELECT 1 FROM strategy_state s"
               " WHERE s.session_id = u.session_id AND s.strategy = u.strategy"
               f" AND s.key = 'boundary_turn' AND {trusted_memory('s', 's.strategy')})")
        params: list[Any] = []
        if session_id is not None:
            sql += " AND u.session_id = ?"
            params.append(session_id)
        return [(r["session_id"], r["strategy"])
                for r in fetch_rows(self._db, sql + " ORDER BY 1, 2", params)]

    def state_distrusted(self, session_id: int, strategy: str) -> bool:
        """Whether the strategy's state in the session reads as absent because a role this
        reader does not trust wrote a row of it (PostgreSQL, p025); never on a file."""
        return self._postgres and bool(fetch_rows(self._db,
            "SELECT 1 FROM strategy_state WHERE session_id = ? AND strategy = ?"
            f" AND NOT {trusted_by_reader('strategy_state')} LIMIT 1", [session_id, strategy]))

    def state_row(self, session_id: int, strategy: str, key: str) -> StateRow:
        """The row's session as the user names it (for a line naming a row that cannot be
        read), its value unread."""
        names = self._session_names([session_id])
        name, shared_by = names.get(session_id, (f"#{session_id}", None))
        return StateRow(session_id, strategy, key, name, shared_by, readable=False)

    def _session_names(self, session_ids: Sequence[int]) -> dict[int, tuple[str, str | None]]:
        if not session_ids:
            return {}
        marks = ", ".join("?" for _ in session_ids)
        return {r["id"]: (r["name"], r["shared_by"]) for r in fetch_rows(
            self._db, f"SELECT id, name, {self._db.shared_by} AS shared_by FROM sessions"
            f" WHERE id IN ({marks})", list(session_ids))}

    def reset_strategy_state(self, session_id: int, strategy: str) -> tuple[int, int]:
        """Drop the strategy's state and summary versions in the session (the owner's way
        out of a row that cannot be read): the strategy builds them again from the turns,
        as after a fork that could not copy them. (state values, summary versions) dropped;
        the caller checks the session is the user's own.

        On PostgreSQL each write share's grantee's own copy of that state goes too
        (writer_state.per_writer, `OWNER/ROLE`): it was derived from the summaries dropped,
        and his turns stopped on a row of it that could not be read while the owner's reset,
        which he is told to ask her for, left it as it was."""
        with self._db.write():
            rows = int(fetch_value(
                self._db, "SELECT count(*) FROM strategy_state WHERE session_id = ?"
                " AND strategy = ? AND key <> ?", [session_id, strategy, COVERS_KEY]))
            summaries = int(fetch_value(
                self._db, "SELECT count(*) FROM summaries WHERE session_id = ? AND strategy = ?",
                [session_id, strategy]))
            for table in ("strategy_state", "summaries"):
                self._db.execute(f"DELETE FROM {table} WHERE session_id = ? AND strategy = ?",
                                 [session_id, strategy])
            if self._postgres and per_writer(strategy):
                self._db.execute("DELETE FROM strategy_state WHERE session_id = ?"
                                 " AND starts_with(strategy, ? || '/')", [session_id, strategy])
        return rows, summaries

    def set_strategy_state(self, session_id: int, strategy: str, values: Mapping[str, Any],
                           *, covers_turn: int | None = None,
                           unless_erased_since: int | None = None) -> bool:
        """Store `values`; with `covers_turn`, also the last turn they were derived from
        (state_coverage.COVERS_KEY), which fork and replacing a turn go by. Without it the
        turn recorded before stays: a write that derives nothing from turns (an unpin)
        covers what the state covered.

        `unless_erased_since`: the session's `erasures` when the update that made `values`
        began reading; if text left its memory since (a purge, a replaced turn), nothing is
        stored and False is returned, checked under the write lock the purge takes too.

        A value JSON cannot store as every reader reads it (NaN, infinity, a set) raises
        what json raises (ValueError, TypeError, RecursionError) before anything is written."""
        rows = [(session_id, strategy, k, json_text(v, finite=True)) for k, v in values.items()]
        if covers_turn is not None:
            rows.append((session_id, strategy, COVERS_KEY, json_text(int(covers_turn))))
        with self._db.write():
            erasures = steps.check_session_kept(self._db, session_id)
            if unless_erased_since is not None and unless_erased_since != erasures:
                return False
            named: list[int | str] = [strategy]  # the state owner this role writes under
            name = "?"
            if self._postgres and per_writer(strategy):
                name, named = WRITER_NAME, [session_id, strategy, strategy]
            if self._postgres:
                # What this reader read as absent is not kept beside what it derived instead;
                # a grantee's first write of its own state starts from the owner's.
                self._db.execute(
                    "WITH started AS (INSERT INTO strategy_state (session_id, strategy, key,"
                    " value) SELECT session_id, strategy || '/' || current_user, key, value"
                    " FROM strategy_state t WHERE session_id = ? AND strategy = ? AND ?"
                    f" AND t.owner <> current_user AND {trusted_by_reader('t')}"
                    " AND NOT EXISTS (SELECT 1 FROM strategy_state u WHERE u.session_id ="
                    " t.session_id AND u.strategy = t.strategy || '/' || current_user)"
                    " ON CONFLICT DO NOTHING RETURNING 1)"
                    f" DELETE FROM strategy_state WHERE session_id = ? AND strategy = {name}"
                    f" AND NOT {trusted_by_reader('strategy_state')}",
                    [session_id, strategy, per_writer(strategy), session_id, *named])
            self._db.executemany(
                "INSERT INTO strategy_state (session_id, strategy, key, value)"
                f" VALUES (?, {name}, ?, ?) ON CONFLICT (session_id, strategy, key)"
                " DO UPDATE SET value = excluded.value",
                [(r[0], *named, r[2], r[3]) for r in rows],
            )
        return True

    def strategy_state_size(self, session_id: int, strategy: str) -> int:
        """The bytes (UTF-8) of the strategy's stored values in the session, all keys."""
        size = "octet_length(value)" if self._postgres else "LENGTH(CAST(value AS BLOB))"
        return sum(int(r["size"]) for r in own_rows(self._db, f"{size} AS size", session_id,
                                                           strategy))

    def strategy_state_values(self, key: str, session_id: int | None = None) -> list[StateRow]:
        """Every stored `key`, in one session or all of them, by session and strategy, each
        with its session's name and owner. A value that is not JSON comes back unread
        (`readable` False): the caller passes over another's session's and names the user's
        own (StateRow.error), so a row a sharer wrote never blocks the user's listing."""
        kept = (", s.owner <> current_user AS shared, current_user AS reader"
                if self._postgres else "")  # writer_state.as_kept
        sql = (f"SELECT session_id, strategy, value{kept} FROM strategy_state s WHERE key = ?"
               + self.trusted("s", "s.strategy"))
        params: list[Any] = [key]
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        rows = fetch_rows(self._db, sql + " ORDER BY session_id, strategy", params)
        if self._postgres:
            rows = as_kept(rows)
        names = self._session_names(sorted({r["session_id"] for r in rows}))
        read = []
        for r in rows:
            name, shared_by = names.get(r["session_id"], (f"#{r['session_id']}", None))
            try:
                value, readable = json.loads(r["value"] or "null"), True
            except (ValueError, RecursionError):
                value, readable = None, False
            read.append(StateRow(r["session_id"], r["strategy"], key, name, shared_by, value,
                                 readable))
        return read

    # -- summaries ------------------------------------------------------------

    def _own_summary(self, alias: str) -> str:
        """` AND` a condition true of a `summaries` row (`alias`) this reader trusts: on
        PostgreSQL one it or the session's owner wrote, or stored before p025."""
        return f" AND {trusted_by_reader(alias)}" if self._postgres else ""

    def add_summary(
        self,
        session_id: int,
        strategy: str,
        text: str,
        *,
        covered_ids: list[int],
        anchors: list[str] | None = None,
        dropped_anchors: list[str] | None = None,
        model: str | None = None,
    ) -> SummaryRecord:
        """Store a new summary version; versions count up per session and strategy.

        A version another transaction added meanwhile without chatmem's write lock (a
        write share's grantee's plain SQL on PostgreSQL) is passed over, not failed on:
        its unique key made this update "duplicate key value…", the owner's memory not
        updated. The next number is taken instead, a few times at most."""
        values = [text, json_text(covered_ids), max(covered_ids) if covered_ids else None,
                  json_text(anchors or []), json_text(dropped_anchors or []), model]
        with self._db.write():
            steps.check_session_kept(self._db, session_id)
            for _ in range(VERSION_TRIES):
                version = int(fetch_value(self._db,
                    "SELECT coalesce(max(version), 0) + 1 FROM summaries"
                    " WHERE session_id = ? AND strategy = ?",
                    [session_id, strategy],
                ))
                if self._db.execute(
                        "INSERT INTO summaries (session_id, strategy, version, text,"
                        " covered_ids, last_message_id, anchors, dropped_anchors, model,"
                        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                        " ON CONFLICT DO NOTHING RETURNING version",
                        [session_id, strategy, version, *values, self._connection.now()],
                ).fetchall():
                    break
            else:
                raise StoreConflict(f"another writer added each next summary version of"
                                    f" {strategy!r} ({VERSION_TRIES} tries)")
        # Read back as stored: its strategy may hold state rows this update is yet to replace.
        rows = fetch_rows(self._db, f"SELECT {SUMMARY_COLUMNS} FROM summaries s"
                          " WHERE session_id = ? AND strategy = ? AND version = ?",
                          [session_id, strategy, version])
        return SummaryRecord.from_row(rows[0])

    def summaries(self, session_id: int, strategy: str | None = None) -> list[SummaryRecord]:
        sql = (f"SELECT {SUMMARY_COLUMNS} FROM summaries s WHERE session_id = ?"
               + self._own_summary("s"))
        params: list[Any] = [session_id]
        if strategy:
            sql += " AND strategy = ?"
            params.append(strategy)
        return [SummaryRecord.from_row(r)
                for r in fetch_rows(self._db, sql + " ORDER BY strategy, version", params)]

    def summary(
        self, session_id: int, strategy: str, version: int | None = None
    ) -> SummaryRecord:
        """Version `version` of a strategy's summary, or the latest; NotFound if none."""
        if version is None:
            found = self.latest_summary(session_id, strategy)
        else:
            rows = fetch_rows(self._db,
                f"SELECT {SUMMARY_COLUMNS} FROM summaries s WHERE session_id = ?"
                " AND strategy = ? AND version = ?" + self._own_summary("s"),
                [session_id, strategy, version],
            )
            found = SummaryRecord.from_row(rows[0]) if rows else None
        if found is None:
            which = "no summary yet" if version is None else f"no summary version {version}"
            raise NotFound(f"{strategy}: {which}")
        return found

    def latest_summary(self, session_id: int, strategy: str) -> SummaryRecord | None:
        rows = fetch_rows(self._db,
            f"SELECT {SUMMARY_COLUMNS} FROM summaries s WHERE session_id = ? AND strategy = ?"
            + self._own_summary("s") + " ORDER BY version DESC LIMIT 1",
            [session_id, strategy],
        )
        return SummaryRecord.from_row(rows[0]) if rows else None
