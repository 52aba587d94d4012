"""Turns as they were sent: a completed turn commits with its messages, a failed one alone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatmem.errors import (
    NoSuchRequest,
    NotFound,
    ReplaceRefusal,
    StoreError,
    StoreFailure,
    TurnNotCommittable,
    TurnNotReplaceable,
)
from chatmem.store import contexts, rendered, shown_turns, steps
from chatmem.store.connection import Connection, fetch_rows, fetch_value
from chatmem.store.postgres_writers import trusted_by_reader
from chatmem.store.records import MOST_INTEGER, TurnRecord, TurnStatus
from chatmem.store.sessions import SessionTables
from chatmem.store.state_coverage import FACTS_OWNER, state_coverage

AT_TURN = (
    "coalesce(t.history_turn,"
    " (SELECT p.history_turn FROM turns p WHERE p.session_id = t.session_id"
    " AND p.number < t.number AND p.history_turn IS NOT NULL"
    " ORDER BY p.number DESC LIMIT 1) + 1,"
    " (SELECT n.history_turn FROM turns n WHERE n.session_id = t.session_id"
    " AND n.number > t.number AND n.history_turn IS NOT NULL ORDER BY n.number LIMIT 1),"
    " coalesce((SELECT m.turn FROM messages m WHERE m.session_id = t.session_id"
    " AND m.superseded = 0 ORDER BY m.turn DESC LIMIT 1), 0) + 1)"
)
"""The conversation's turn a request of `turns t` is at (TurnRecord.at_turn). A failed or
cancelled one stored no history turn: it was attempted as the one after the request before
it; with none before (an imported or forked history), as the next completed one, else as
the one after the history. The subqueries run only for those, and each walks an index from
the request (or the history's end) to the nearest one that stored a turn: a `max()` over
the earlier requests read them all, once per failed request, growing with the square of the
session."""


ERASED_MEANWHILE = ("text left this session's memory while the reply came (a purge, or a turn"
                    " replaced by another chat), and what this turn was sent may hold it;"
                    " send it again")


_NEXT_NUMBER = "(SELECT coalesce(max(number), 0) + 1 FROM turns WHERE session_id = ?)"
"""A turn's number as it is inserted (its parameter: the session's id)."""


class TurnTables:
    """Turns as they were sent, from recorded to committed or replaced (`store.turns`)."""

    def __init__(self, connection: Connection, sessions: SessionTables) -> None:
        self._connection = connection
        self._db = connection.db
        self._sessions = sessions

    def commit_turn(self, turn: TurnRecord, *, sent_at: str | None = None,
                    replied_at: str | None = None,
                    message_tokens: tuple[int, int] | None = None,
                    supersedes: int | None = None,
                    erasures: int | None = None,
                    external_ids: tuple[str | None, str | None] = (None, None),
                    after_turn: int | None = None) -> TurnRecord:
        """Store a completed turn: user message, reply and turn row, all or nothing.

        The user message is stamped when it was sent (`sent_at`), the reply when it ended
        (`replied_at`, default now); a replayed transcript passes its own times.
        `message_tokens` are the user message's and the reply's token counts under
        `turn.tokenizer`, stored with them so that no later read has to write them.
        `supersedes`: the number of the turn this one replaces (`hide_turn` took its
        messages out of memory); it is marked replaced by this one in the same write.
        `erasures`: the session's count of erasures the context was built after (see
        `_check_not_erased`). `external_ids`: the user message's and the reply's ids in
        the transcript a replay plays (probes name messages by them). `after_turn`: the
        history's turn count its context was built on; a turn taken out of history since
        (hidden by another's plain SQL, counting no erasure) is refused as an erasure is:
        stored, this turn would take the hidden turn's number, two turns at it once shown.
        """
        if turn.status != "ok" or turn.reply is None:
            raise TurnNotCommittable("only a completed turn with a reply can be committed",
                                     status=turn.status)
        try:
            # Patient: the reply is paid for, and another process's long write (an import)
            # must not cost it.
            with self._db.write(patient=True):
                last = None
                if erasures is not None:
                    # The check and the last message, which numbering reads: one statement.
                    found, last = steps.kept_and_last(self._db, turn.session_id,
                                                      "the turn was not stored")
                    self._check_not_erased(turn.session_id, erasures, "the turn was not stored",
                                           found=found)
                (user_id, assistant_id), turn.history_turn = steps.append_numbered(
                    self._db, turn.session_id,
                    [{"role": "user", "content": turn.input, "ts": sent_at,
                      "id": external_ids[0]},
                     {"role": "assistant", "content": turn.reply, "ts": replied_at,
                      "id": external_ids[1]}],
                    self._connection.now, last=last)
                if after_turn is not None and turn.history_turn <= after_turn:
                    raise StoreError(ERASED_MEANWHILE, kind=StoreFailure.ERASED_MEANWHILE)
                turn.user_message_id, turn.assistant_message_id = user_id, assistant_id
                counts = {} if message_tokens is None or not turn.tokenizer else dict(
                    zip((user_id, assistant_id), message_tokens, strict=True))
                # Stored with the counts compacting the context caches: one statement.
                self._insert_turn(turn, counts)
                if supersedes is not None:
                    self._db.execute(
                        "UPDATE turns SET superseded_by = ? WHERE session_id = ? AND number = ?",
                        [turn.number, turn.session_id, supersedes])
        except StoreError as e:
            turn.user_message_id = turn.assistant_message_id = turn.history_turn = None
            raise StoreError(f"the turn was not stored: {e.reason}", kind=e.kind,
                             location=e.location) from None
        return turn

    def record_turn(self, turn: TurnRecord, *, erasures: int | None = None) -> TurnRecord:
        """Store a failed or cancelled turn: the turn row only, nothing enters memory."""
        try:
            with self._db.write():
                self._check_not_erased(turn.session_id, erasures, "the turn was not recorded")
                self._insert_turn(turn)
        except StoreError as e:
            raise StoreError(f"the turn was not recorded: {e.reason}", kind=e.kind,
                             location=e.location) from None
        return turn

    def _check_not_erased(self, session_id: int, erasures: int | None,
                          consequence: str, *, found: int | None = None) -> None:
        """Under the write lock: a purge (or a replaced turn) that left its mark on the
        session after the turn's context was built (`erasures` then) may have erased what
        that context, its reply and its rendered prompt hold; storing them would bring
        back what the purge said was gone. PostgreSQL's purge waits for the turn; on SQLite
        the turn runs outside any transaction, so it is refused here.

        A session deleted meanwhile is refused here too: the insert would otherwise fail
        with the database's own words, a foreign key on SQLite and row security on
        PostgreSQL, neither saying what happened. `found`: the count already read under
        this lock (steps.kept_and_last)."""
        if erasures is None:
            return
        if found is None:
            found = steps.check_session_kept(self._db, session_id, consequence)
        if found != erasures:
            raise StoreError(ERASED_MEANWHILE, kind=StoreFailure.ERASED_MEANWHILE)

    # -- replacing the last turn (/retry, /edit-last) -----------------------------

    def hide_turn(self, session_id: int, expected: int | None = None) -> TurnRecord:
        """Take the session's last turn out of memory so that it can be sent again.

        Its messages stay stored (append-only) but leave every history, recall
        and count read (`messages.superseded`); `show_turn` undoes this when the
        new attempt is not stored, `commit_turn(supersedes=…)` makes it final.
        Only a turn `replaceable_turn` takes, checked under the write lock.
        """
        with self._db.write():
            turn = self.replaceable_turn(session_id, expected)
            self._set_superseded(turn, 1)
        return turn

    def replaceable_turn(self, session_id: int, expected: int | None = None) -> TurnRecord:
        """The turn `hide_turn` would take out of memory; TurnNotReplaceable saying why when
        there is none. Only the last turn, a completed one, and only while no summary or
        fact was derived from it: memory built on a reply must not outlive the reply.
        `expected`: the id of the turn the caller means (its own last completed one); a
        turn another chat added since is refused, failed or cancelled attempts after it are
        passed over. Asked alone (a chat before it says it regenerates), it reads only.
        Read as running reads a turn (`turn(expanded=False)`): its context's runs are not
        expanded."""
        turn = self.turn(session_id, expanded=False)
        if expected is not None and turn.id != expected:
            if self.last_completed_id(session_id) == expected:
                # Only failed or cancelled attempts after it (a regenerate whose model
                # call failed): they never entered memory, and asking again replaces it.
                turn = self._turn_record(fetch_rows(
                    self._db, "SELECT * FROM turns WHERE id = ?", [expected])[0],
                    expanded=False)
            else:
                raise TurnNotReplaceable.not_yours(turn.turn)
        if turn.status != "ok" or turn.user_message_id is None \
                or turn.assistant_message_id is None or turn.superseded_by is not None:
            raise TurnNotReplaceable.not_completed(turn.turn, str(turn.status))
        # Replaced turns' messages count here: a turn a crash left hidden (between
        # hide_turn and its replacement's commit) can still be sent again.
        last = fetch_value(self._db, "SELECT max(turn) FROM messages WHERE session_id = ?",
                           [session_id])
        if (turn.history_turn or 0) != last:
            raise TurnNotReplaceable.not_last(turn.turn)
        derived = self._derived_from(turn)
        if derived is not None:
            raise TurnNotReplaceable.in_memory(turn.turn, *derived)
        return turn

    def ran_on(self, session_id: int, provider: str, model: str) -> bool:
        """Whether a turn stored in this history ran on `provider`'s `model`: an imported
        session's is only what its transcript's header says, while a fork (which copies no
        turn) names one its parent's turns ran on here. The session's own latest turn first
        (its model is that turn's), by its index: no index holds a model, so the history
        is read from its first turn only for a session none of whose turns ran on it."""
        if fetch_value(self._db, "SELECT provider = ? AND model = ? FROM turns"
                       " WHERE session_id = ? ORDER BY number DESC LIMIT 1",
                       [provider, model, session_id]):
            return True
        return bool(fetch_rows(self._db,
            "SELECT 1 FROM turns WHERE provider = ? AND model = ? LIMIT 1", [provider, model]))

    def last_completed_id(self, session_id: int) -> int | None:
        """The id of the session's last completed turn, when it is still in memory (failed
        or cancelled attempts may follow it); None otherwise. One row's two columns: a
        server asks this at every request."""
        rows = fetch_rows(self._db,
            "SELECT id, superseded_by FROM turns WHERE session_id = ? AND status = 'ok'"
            " ORDER BY number DESC LIMIT 1", [session_id])
        if not rows or rows[0]["superseded_by"] is not None:
            return None
        return int(rows[0]["id"])

    def show_turn(self, turn: TurnRecord) -> None:
        """Put a turn `hide_turn` took out of memory back (its replacement was not stored)."""
        with self._db.write():
            self._set_superseded(turn, 0)

    def _set_superseded(self, turn: TurnRecord, superseded: int) -> None:
        self._db.execute("UPDATE messages SET superseded = ? WHERE session_id = ? AND id IN (?, ?)",
                        [superseded, turn.session_id, turn.user_message_id,
                         turn.assistant_message_id])
        steps.count_erasure(self._db, [turn.session_id])

    def _derived_from(self, turn: TurnRecord) -> tuple[ReplaceRefusal, str] | None:
        """What memory holds from `turn` (a summary covering it, facts stated or changed
        in it or since, a strategy's state brought up to it), and that as a short phrase;
        None when nothing."""
        # A summary another role wrote (PostgreSQL, p025) is not the reader's memory; the
        # reader's own is, whoever wrote the strategy's state (its update goes on from it).
        trusted = f" AND {trusted_by_reader('s')}" if self._db.kind == "postgresql" else ""
        summaries = fetch_value(self._db,
            "SELECT count(*) FROM summaries s WHERE session_id = ? AND last_message_id >= ?"
            f"{trusted}", [turn.session_id, turn.user_message_id])
        if summaries:
            return ReplaceRefusal.SUMMARIZED, "a summary covers it"
        coverage = state_coverage(self._db, turn.session_id)
        # A fact stated in the turn is the extractor's reading of it. One changed since may
        # be too, but only once the extractor has read the turn, and only where it wrote
        # the value: one typed by hand (/remember: no source turn) is not, nor is anything
        # changed before it read the turn (a strategy without facts never does). A forget
        # since it read is counted either way: the store cannot tell whose it was.
        read = coverage.get(FACTS_OWNER, 0) >= (turn.history_turn or 0)
        since = (" OR source_turn IS NOT NULL AND updated_at >= ? OR deleted_at >= ?"
                 if read else "")
        facts = fetch_value(self._db,
            "SELECT count(*) FROM facts WHERE (session_id = ? OR source_session_id = ?)"
            f" AND (source_turn = ?{since})",
            [turn.session_id, turn.session_id, turn.history_turn,
             *([turn.created_at] * 2 if read else [])])
        if facts:
            return ReplaceRefusal.FACTS, f"{facts} fact{'' if facts == 1 else 's'} from it or since"
        # The fact extractor's state is judged by the facts it holds (above): a turn it read
        # and found nothing in may be sent again, as before coverage was recorded.
        holding = sorted(owner for owner, covers in coverage.items()
                         if owner != FACTS_OWNER and covers >= (turn.history_turn or 0))
        if holding:
            return ReplaceRefusal.STATE, f"{', '.join(holding)}'s stored state covers it"
        return None

    def _insert_turn(self, turn: TurnRecord, counted: Mapping[int, int] | None = None) -> None:
        """`counted`: token counts of the messages the turn just stored (contexts.compact)."""
        turn.created_at = turn.created_at or self._connection.now()
        stored = contexts.compact(self._db, turn.session_id, turn.tokenizer, turn.context,
                                  counted)
        row = turn.to_row(stored)
        row["rendered_prompt"], row["rendered"] = rendered.to_columns(
            self._db, turn.session_id, stored, turn.rendered_prompt)
        # The session's next number, found by the insert itself (under the write lock, as a
        # read before it was) rather than by a statement of its own.
        row.pop("number", None)
        marks = ", ".join(["?"] * len(row) + [_NEXT_NUMBER])
        turn.id, turn.number = self._db.execute(
            f"INSERT INTO turns ({', '.join(row)}, number) VALUES ({marks}) RETURNING id, number",
            [*row.values(), turn.session_id]).fetchall()[0]

    def turns(self, session_id: int, status: TurnStatus | None = None, *,
              expanded: bool = True) -> list[TurnRecord]:
        """The session's requests in order; `expanded`: as `turn`'s."""
        sql = f"SELECT t.*, {AT_TURN} AS at_turn FROM turns t WHERE t.session_id = ?"
        params: list[Any] = [session_id]
        if status:
            sql += " AND t.status = ?"
            params.append(status)
        return [self._turn_record(r, expanded=expanded)
                for r in fetch_rows(self._db, sql + " ORDER BY t.number", params)]

    def turn(self, session_id: int, number: int | None = None, *,
             shown: bool = False, expanded: bool = True) -> TurnRecord:
        """Request `number` of a session (TurnRecord.number), or its last one; `shown`: read
        to be shown, its context and rendered prompt checked first (store.shown_turns).
        `expanded=False`: read as running a chat reads an earlier turn, its context only as
        `contexts.inline` gives it and its rendered prompt not read (None), so that no
        stored run is expanded: what another role stored there neither stops nor slows
        the next turn."""
        select = f"SELECT t.*, {AT_TURN} AS at_turn FROM turns t WHERE t.session_id = ?"
        if number is None:
            rows = fetch_rows(self._db, select + " ORDER BY t.number DESC LIMIT 1",
                              [session_id])
        elif not 0 < number <= MOST_INTEGER:
            rows = []  # no turn has that number (and SQLite could not even bind it)
        else:
            rows = fetch_rows(self._db, select + " AND t.number = ?", [session_id, number])
        if not rows:
            name = self._sessions.session_by_id(session_id).name
            if number is None:
                raise NotFound(f"session {name!r} has no turns")
            held = fetch_rows(self._db, "SELECT COUNT(*) AS n, MAX(number) AS last FROM turns"
                              " WHERE session_id = ?", [session_id])[0]
            raise NoSuchRequest(name, number, held["n"], held["last"] or 0)
        return self._turn_record(rows[0], shown=shown, expanded=expanded)

    def at_turn(self, session_id: int, turn: int, *, shown: bool = False,
                expanded: bool = True) -> TurnRecord:
        """The request recorded at the conversation's turn `turn` (TurnRecord.at_turn): the
        one in the history when there is one, else the last attempt at it; NotFound when
        none was recorded (an imported or forked turn, or past the last). `shown` and
        `expanded`: as `turn`'s."""
        rows = [] if not 0 < turn <= MOST_INTEGER else fetch_rows(self._db,
            f"SELECT t.*, {AT_TURN} AS at_turn FROM turns t WHERE t.session_id = ?"
            f" AND (t.history_turn = ? OR t.history_turn IS NULL AND {AT_TURN} = ?)"
            " ORDER BY CASE WHEN t.history_turn IS NOT NULL AND t.superseded_by IS NULL"
            " THEN 0 ELSE 1 END, t.number DESC LIMIT 1", [session_id, turn, turn])
        if not rows:
            name = self._sessions.session_by_id(session_id).name
            raise NotFound(f"session {name!r} has no turn {turn}")
        return self._turn_record(rows[0], shown=shown, expanded=expanded)

    def _turn_record(self, row: Mapping[str, Any], *, shown: bool = False,
                     expanded: bool = True) -> TurnRecord:
        record = TurnRecord.from_row(row)
        if not expanded:
            record.context = contexts.inline(record.context)
            record.rendered_prompt = None
            return record
        if shown:
            shown_turns.checked(self._db, record.session_id,
                                self._sessions.address(record.session_id), record.number,
                                record.turn, record.context, row.get("rendered"))
        record.context = contexts.expand(self._db, record.session_id, record.tokenizer,
                                         record.context)
        record.rendered_prompt = rendered.from_columns(
            self._db, record.session_id, record.rendered_prompt, row.get("rendered"),
            f"turn {record.number}")
        return record
