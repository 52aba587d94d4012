"""Turns across sessions, newest or best-matching first (`chatmem logs`), and what a
session's turns used per model (the REPL's running total).

Portable SQL only (the seam's rules); full-text search is the backend's
`word_scores` and `newest_word_matches`, so `logs -q` reads the same index on SQLite and PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chatmem import fts
from chatmem.privacy.date_forms import date_spellings
from chatmem.store.batches import in_batches
from chatmem.store.connection import Connection, fetch_rows
from chatmem.store.recall import POSTINGS, rare_terms
from chatmem.store.records import TurnStatus, session_address
from chatmem.store.session_names import is_unfinished
from chatmem.store.stored_values import stored_enum
from chatmem.store.turns import AT_TURN
from chatmem.tokens import MOST_TOKENS_COUNTED, token_count

_COLUMNS = (
    "t.id, t.session_id, s.name AS session, t.number, t.status, t.input, t.strategy,"
    " t.params, t.provider, t.model, t.estimated_tokens, t.prompt_tokens,"
    " t.completion_tokens, t.created_at, t.superseded_by, t.reply,"
    f" {AT_TURN} AS at_turn"
)


_COUNT = f"CASE WHEN {{0}} BETWEEN 0 AND {MOST_TOKENS_COUNTED} THEN {{0}} END"
"""A stored token count, NULL when it is no count (text sorts above every number)."""


def _columns(shared_by: str) -> str:
    """_COLUMNS and the session's owner when shared (the backend's `shared_by`, read from
    the session alone: another table of the join has an owner column too)."""
    return (f"{_COLUMNS}, (SELECT {shared_by} FROM sessions o WHERE o.id = t.session_id)"
            " AS shared_by")


@dataclass(frozen=True)
class LogEntry:
    """One turn as `chatmem logs` lists it."""

    session: str
    number: int
    """The conversation's turn (TurnRecord.at_turn), as inspect and sessions show count."""
    created_at: str
    status: TurnStatus
    input: str
    strategy: str
    params: str
    """The strategy's parameters, as stored (JSON)."""
    provider: str | None
    model: str | None
    prompt_tokens: int | None
    """The provider's count when it reported one, else chatmem's own."""
    reply_tokens: int | None
    superseded_by: int | None = None
    """The number of the turn `/retry` or `/edit-last` replaced this one with."""
    reply: str | None = None
    """The reply as the model sent it (part of it for a cancelled turn); None when none came."""
    shared_by: str | None = None
    """The session's owner, when another role shared it with the user (PostgreSQL)."""
    counted_tokens: int | None = None
    """chatmem's own count of the request, whatever the provider reported."""
    reported_tokens: int | None = None
    """The provider's count of the request; None when it reported none."""
    request: int = 0
    """The request's own order in the session (TurnRecord.number: `superseded_by` names it)."""

    @property
    def address(self) -> str:
        """What names the session in a command (`inspect ann/trip --turn N`): the user's
        own may have a shared one's name."""
        return session_address(self.session, self.shared_by)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> LogEntry:
        # Counts stored before the provider's were checked may be no counts: not known.
        reported = token_count(row["prompt_tokens"])
        status = stored_enum(TurnStatus, row["status"], f"turn {row['number']}: status")
        return cls(row["session"], row["at_turn"], row["created_at"], status,
                   row["input"], row["strategy"], row["params"], row["provider"], row["model"],
                   reported if reported is not None else row["estimated_tokens"],
                   token_count(row["completion_tokens"]), row["superseded_by"], row["reply"],
                   row.get("shared_by"), row["estimated_tokens"], reported, row["number"])


@dataclass(frozen=True)
class ModelUsage:
    """Tokens a session's turns sent to and received from one model."""

    model: str | None
    prompt_tokens: int
    reply_tokens: int


class LogTables:
    """Turns across sessions as `chatmem logs` lists them, and usage per model (`store.logs`)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._db = connection.db

    def recent_turns(self, *, limit: int, session_id: int | None = None,
                     query: str | None = None, replied: bool = False) -> list[LogEntry]:
        """The newest `limit` turns (of one session, or all); with `query`, the turns whose
        question or reply best match it in the full-text index, best first (`_matching_messages`:
        words too common to score find the newest turns saying them); `replied`: only
        turns with a reply (`logs -r`)."""
        conditions = ["t.session_id = ?"] if session_id is not None else []
        if replied:
            conditions.append("t.reply IS NOT NULL")
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        scope = [session_id] if session_id is not None else []
        columns = _columns(self._db.shared_by)
        if query is None:
            # Newest stored first, read from the end of an index: `limit` rows, however long
            # the history (a session's by its turn numbers, all by the turns' keys).
            order = "t.number" if session_id is not None else "t.id"
            rows = fetch_rows(self._db,
                f"SELECT {columns} FROM turns t JOIN sessions s ON s.id = t.session_id"
                f"{where} ORDER BY {order} DESC LIMIT ?", [*scope, limit])
            return [LogEntry.from_row(row) for row in rows]
        # A turn holds two messages: twice the hits find `limit` turns when both match. An
        # imported or copied session's messages are no turn's: 200 imported messages saying
        # 杭州 took every hit, and `logs -q 杭州` found no turn. Asked again for more hits
        # until `limit` turns are found or no more messages match.
        asked = 2 * limit
        while True:
            scores = self._matching_messages(query, session_id, asked)
            if not scores:
                return []
            rows = self._turns_holding(list(scores), columns, replied)
            if len(rows) >= limit or len(scores) < asked:
                break
            asked *= 4
        best = {row["id"]: max(scores.get(row["user_message_id"], float("-inf")),
                               scores.get(row["assistant_message_id"], float("-inf")))
                for row in rows}
        rows.sort(key=lambda row: (-best[row["id"]], row["created_at"]))
        return [LogEntry.from_row(row) for row in rows[:limit]]

    def _turns_holding(self, message_ids: list[int], columns: str,
                       replied: bool) -> list[dict[str, Any]]:
        """The turns whose question or reply is one of `message_ids`, each once, read a
        batch of ids at a time (SQLite takes at most 32,766 values in one statement): a
        turn whose question is in one batch and its reply in another is read twice."""
        rows: dict[int, dict[str, Any]] = {}
        for ids, marks in in_batches(message_ids):
            for row in fetch_rows(self._db,
                    f"SELECT {columns}, t.user_message_id, t.assistant_message_id FROM turns t"
                    " JOIN sessions s ON s.id = t.session_id"
                    f" WHERE (t.user_message_id IN ({marks})"
                    f" OR t.assistant_message_id IN ({marks}))"
                    + (" AND t.reply IS NOT NULL" if replied else ""),
                    [*ids, *ids]):
                rows.setdefault(row["id"], row)
        return list(rows.values())

    def _matching_messages(self, query: str, session_id: int | None,
                           limit: int) -> dict[int, float]:
        """Message id → score (higher is better) of the best `limit` matches of `query`.

        Only its rarer terms are scored, as recall scores them (`rare_terms`): scoring a
        word said in thousands of messages reads every entry it has. A query of such
        words alone (or whose rarer words this session never says) finds the newest
        messages saying them, ranked newest first."""
        # ORD-7731-QX typed finds ORD\u00ad7731\u00adQX too (one word to the index), and
        # ORD7731QX typed finds ORD-7731-QX when nothing holds it as typed.
        terms = fts.search_terms(query) + fts.joined_spellings(query)
        # A Chinese date typed one way finds it written the other (三月十五日, 3月15日), as
        # a purge of it erases both.
        terms += [t for spelled in date_spellings(query) for t in fts.search_terms(spelled)
                  if t not in terms]
        found = self._matching_terms(terms, session_id, limit)
        if not found and (parts := fts.split_spellings(query)):
            found = self._matching_terms(parts, session_id, limit)
        return found

    def _matching_terms(self, terms: list[str], session_id: int | None,
                        limit: int) -> dict[int, float]:
        rare = rare_terms(self._db, terms, POSTINGS)
        scores = {message_id: score for message_id, _, score
                  in self._db.word_scores(rare, session_id, None, limit)} if rare else {}
        if scores:
            return scores
        newest = self._db.newest_word_matches(terms, limit, session_id)
        return {message_id: -float(rank) for rank, message_id in enumerate(newest)}

    def sessions_matching(self, query: str, *, limit: int) -> list[str]:
        """The sessions whose messages best match `query` in the full-text index (by each
        session's best message), best first, each as a command names it (`OWNER/NAME` when
        shared: the user's own may have its name, and a lookup by name finds theirs).

        Only the query's rarer terms are scored, as recall scores them (`rare_terms`):
        scoring a word every message holds reads all its entries, in every session. A
        query of such words alone finds the sessions that said them last."""
        terms = fts.search_terms(query)
        rare = rare_terms(self._db, terms, POSTINGS)
        if rare:
            ids = [message_id for message_id, _, _ in
                   self._db.word_scores(rare, None, None, 20 * limit)]
        else:
            ids = self._db.newest_word_matches(terms, 20 * limit)
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        names = {row["id"]: session_address(row["name"], row["shared_by"])
                 for row in fetch_rows(self._db,
            "SELECT m.id, s.name, s.shared_by FROM messages m JOIN"
            f" (SELECT id, name, {self._db.shared_by} AS shared_by FROM sessions) s"
            f" ON s.id = m.session_id WHERE m.id IN ({marks})", ids)
            # A replay's or an import's session still being written is no session yet.
            if not is_unfinished(row["name"])}
        return list(dict.fromkeys(names[i] for i in ids if i in names))[:limit]

    def usage_by_model(self, session_id: int) -> list[ModelUsage]:
        """Tokens the session's sent turns used, per model (a failed request is not billed)."""
        rows = fetch_rows(self._db,
            # A count stored before the provider's were checked ('lots', -1000) is not known.
            f"SELECT model, sum(coalesce({_COUNT.format('prompt_tokens')}, estimated_tokens,"
            f" 0)) AS prompt, sum(coalesce({_COUNT.format('completion_tokens')}, 0)) AS reply"
            " FROM turns"
            " WHERE session_id = ? AND status <> 'failed' GROUP BY model", [session_id])
        return [ModelUsage(row["model"], int(row["prompt"]), int(row["reply"])) for row in rows]
