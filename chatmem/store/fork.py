"""Forking a session: its settings and messages up to a turn, plus the derived state still true.

Derived state is grouped by its owner (a strategy name, or the fact
extractor): its `strategy_state` rows, its summary versions and, for the fact
extractor, the session's extracted facts. A group is copied whole when nothing
it covers lies after the fork turn (a state covers the turn chatmem recorded when it
was stored: chatmem.store.state_coverage); otherwise none of it is copied and the
strategy rebuilds it from the copied messages on the fork's next turn. The facts the
user forgot and the earlier values of the facts copied always come along. Turn
records (what was sent) stay with the original session; the images the copied turns
sent and the group chat speakers of the copied messages come along.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chatmem import fts
from chatmem.errors import UsageError
from chatmem.store import steps
from chatmem.store.connection import Connection, fetch_rows, fetch_value
from chatmem.store.fork_facts import copy_fact_history, copy_facts, copy_forgotten
from chatmem.store.memory_state import MemoryTables
from chatmem.store.messages import MessageTables
from chatmem.store.postgres_writers import trusted_count, trusted_index
from chatmem.store.recall import pause
from chatmem.store.records import AccessLevel, SessionRecord
from chatmem.store.sessions import SessionTables
from chatmem.store.state_coverage import FACTS_OWNER, SPEAKERS_OWNER, state_coverage
from chatmem.store.stored_values import json_text
from chatmem.store.turns import TurnTables
from chatmem.store.writer_state import kept_apart, kept_name

COPIED_TOGETHER = steps.MESSAGES_A_STATEMENT
"""Messages one INSERT copies, and one index statement indexes."""
Progress = Callable[[int, int], None]
"""Told (messages copied, messages to copy) as a fork goes."""


@dataclass(frozen=True)
class DerivedGroup:
    """One owner's derived state: the last turn it covers and what it holds."""

    owner: str
    covers_turn: int
    summaries: int = 0
    facts: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"owner": self.owner, "covers_turn": self.covers_turn,
                "summaries": self.summaries, "facts": self.facts}


@dataclass(frozen=True)
class ForkReport:
    source: SessionRecord
    session: SessionRecord
    at_turn: int
    source_turns: int
    messages: int
    copied: list[DerivedGroup] = field(default_factory=list)
    rebuilt: list[DerivedGroup] = field(default_factory=list)
    stated_facts: int = 0
    """Session facts the user stated (/remember): not derived from messages, always copied."""

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source.name, "name": self.session.name, "at_turn": self.at_turn,
            "source_turns": self.source_turns, "messages": self.messages,
            "copied": [g.to_json() for g in self.copied],
            "rebuilt": [g.to_json() for g in self.rebuilt],
            "stated_facts": self.stated_facts,
        }


class ForkTables:
    """Forking a session with the derived state still true at the fork (`store.forks`)."""

    def __init__(self, connection: Connection, sessions: SessionTables, history: MessageTables,
                 memory: MemoryTables, turns: TurnTables) -> None:
        self._connection = connection
        self._db = connection.db
        self._sessions = sessions
        self._history = history
        self._memory = memory
        self._turns = turns

    def fork_session(self, name: str, new_name: str, *, at_turn: int | None = None,
                     progress: Progress | None = None) -> ForkReport:
        """Copy session `name` into a new session `new_name` up to turn `at_turn` (default: all).

        All or nothing: on any error no row is written.
        """
        source = self._sessions.session(name)
        steps.check_new_name(self._db, new_name)
        last = self._history.turn_count(source.id)
        upto = last if at_turn is None else at_turn
        if not 0 <= upto <= last:
            raise UsageError(
                f"session {name!r} has {last} turn{'' if last == 1 else 's'}; it can be forked"
                f" at turns 0–{last},"
                f" not at turn {at_turn}"
            )
        with self._db.write():
            # The fork's next turn is upto + 1: it gets the prompt that turn had in the source.
            prompts = [(first, system) for first, system in self._sessions.system_prompts(source.id)
                       if first <= upto + 1]
            system = prompts[-1][1] if prompts else source.system
            new_id = steps.insert_session(
                self._db, new_name, source.strategy, source.params, provider=source.provider,
                model=source.model, system=system, user=source.user, stamp=self._connection.now(),
                tokenizer=source.tokenizer,
            )
            if source.retention_days is not None:
                # Its own retention holds for the fork: the config's could prune it first.
                self._db.execute("UPDATE sessions SET retention_days = ? WHERE id = ?",
                                 [source.retention_days, new_id])
            for first, text in prompts:
                steps.set_prompt(self._db, new_id, first, text)
            access = self._db.session_access(source.id)
            # Another's session (a share): her words and facts are hers in his copy too.
            theirs = access.owner \
                if access is not None and access.level is not AccessLevel.OWN else None
            # A group chat's speakers, read once: who wrote each copy, and kept by position.
            by_position = self._history.speakers_by_position(source.id)
            turn_speakers = self._history.turn_speakers(source.id)
            ids = self._copy_messages(
                source.id, new_id, upto, progress,
                carried=self._carried_writers(source.id, turn_speakers, by_position))
            positions = {m.id: m.position for m in self._history.messages(new_id)}
            last_position = max(positions.values(), default=0)
            # A group chat's speakers: turn records stay behind, so the fork keeps them by
            # position, those the source kept that way and its turns' inputs' alike.
            # Read whole, each in one statement: by ids, a long fork read them a batch at a time.
            copied_at = set(positions.values())
            steps.keep_speakers(self._db, new_id, {
                **{position: speaker for position, speaker
                   in by_position.items() if position in copied_at},
                **{positions[ids[old]]: speaker for old, speaker
                   in turn_speakers.items() if old in ids}})
            self._db.execute(
                "INSERT INTO probes (session_id, after_position, question, expect_ids,"
                " expect_text, before_prompt) SELECT ?, after_position, question, expect_ids,"
                " expect_text, before_prompt"
                " FROM probes WHERE session_id = ? AND after_position <= ? ORDER BY id",
                [new_id, source.id, last_position])
            copied, rebuilt = [], []
            facts: dict[int, int] = {}
            """Each copied fact's id → its copy's."""
            coverage = state_coverage(self._db, source.id)
            for owner in self._derived_owners(source.id):
                group = self._derived_group(source.id, owner, coverage.get(owner, 0))
                if group is None or group.covers_turn > upto:
                    rebuilt.append(group or DerivedGroup(owner, last))
                    continue
                facts |= self._copy_group(source.id, new_id, owner, ids, theirs)
                if group.covers_turn or group.summaries or group.facts:
                    # Bookkeeping that covers no turn (an id counter) goes unreported.
                    copied.append(group)
            stated = copy_facts(self._db, source.id, new_id, ids, theirs, stated=True)
            facts |= stated
            # On every fork, not only one whose extractor reads its turns again: a fork of
            # this fork may (memory.later_facts goes by when they were forgotten).
            facts |= copy_forgotten(self._db, source.id, new_id, upto, theirs)
            copy_fact_history(self._db, facts, source.id, new_id, upto)
            self._copy_images(source.id, new_id, upto)
        return ForkReport(source, self._sessions.session_by_id(new_id), upto, last, len(ids),
                          copied, rebuilt, len(stated))

    def _carried_writers(self, source_id: int, turn_speakers: dict[int, str],
                         by_position: dict[int, str]) -> tuple[set[int], set[int]] | None:
        """On PostgreSQL, the source's messages whose copy does not keep who wrote them (the
        server's `writer`, postgres_writers), by id and by position: those a group chat's
        member said, whom the source names by its turns (`turn_speakers`) or by position
        (`by_position`) and the fork keeps by position. None: a file (one user)."""
        if self._db.kind != "postgresql":
            return None
        named = set(turn_speakers) - set(self._history.written_by_others(source_id))
        return named, set(by_position)

    def _copy_messages(self, source_id: int, new_id: int, upto: int,
                       progress: Progress | None = None, *,
                       carried: tuple[set[int], set[int]] | None = None) -> dict[int, int]:
        """Messages of turns ≤ `upto`, positions, turns and times kept; old id → new id.

        Their token counts and vectors come along: a copy has the same text and the
        same message before it, so it costs and means what the original did, and a
        long fork's first recall embeds nothing. A batch of messages is one INSERT and one
        index statement, and the counts and vectors one INSERT … SELECT each for the whole
        fork: on a server each statement is a round trip, and each index statement updates
        the session's word statistics row once (postgres_words.index_words).
        """
        ids: dict[int, int] = {}
        messages = self._history.messages(source_id, 1, upto)
        before: str | None = None
        for start in range(0, len(messages), COPIED_TOGETHER):
            batch = messages[start:start + COPIED_TOGETHER]
            rows: list[list[Any]] = []
            for message in batch:
                # The pause before it too: the same message follows the same one.
                rows.append([new_id, message.position, message.turn, message.role,
                             message.as_stored, message.external_id, message.created_at,
                             pause(before, message.created_at)])
                if carried is not None:
                    named = message.id in carried[0] or message.position in carried[1]
                    rows[-1].append(None if named else message.id)
                before = message.created_at
            # Each copy is found by its original's position.
            copies = steps.insert_messages(self._db, rows, copied=carried is not None)
            for message in batch:
                ids[message.id] = copies[message.position]
            self._db.index_words([(copies[m.position],
                                   fts.message_index_text(m.role, m.as_stored)) for m in batch])
            if progress is not None:
                progress(start + len(batch), len(messages))
        if not ids:
            return ids
        # Token counts are per message content: the copy costs what the original did. Only
        # the counts the forker trusts (p026): another's would be the forker's in the fork.
        copies_of = ("FROM messages n JOIN messages o ON o.session_id = ?"
                     " AND o.position = n.position")
        self._db.execute(
            "INSERT INTO token_counts (message_id, tokenizer, tokens)"
            f" SELECT n.id, t.tokenizer, t.tokens {copies_of}"
            " JOIN token_counts t ON t.message_id = o.id"
            f"{trusted_count(self._db.kind, 't')} WHERE n.session_id = ?",
            [source_id, new_id])
        for model in self._vector_models():
            # Copies, originals, their vectors (CROSS JOIN: SQLite's order), not every vector.
            self._db.execute(
                "INSERT INTO message_vectors (message_id, model, dimensions, vector,"
                " context_vector) SELECT n.id, v.model, v.dimensions, v.vector,"
                " v.context_vector FROM messages n CROSS JOIN messages o"
                " CROSS JOIN message_vectors v WHERE o.session_id = ?"
                " AND o.position = n.position AND v.model = ? AND v.message_id = o.id"
                # Nor the vectors another wrote (p027): his would be the forker's there.
                f"{trusted_index(self._db.kind, 'v')} AND n.session_id = ?",
                [source_id, model, new_id])
        return ids

    def _copy_images(self, source_id: int, new_id: int, upto: int) -> None:
        """The images sent with the turns the fork keeps, each once (their requests name
        them by hash); one first sent after the fork turn stays with the original."""
        if fetch_value(self._db, "SELECT 1 FROM images WHERE session_id = ? LIMIT 1",
                       [source_id]) is None:
            return  # most sessions have none: their requests are not read
        # An image goes inline (a files part): runs of history need not be expanded.
        digests = {str(message["image"].get("sha256"))
                   for turn in self._turns.turns(source_id, expanded=False)
                   if turn.turn <= upto
                   for part in turn.context["parts"]
                   for message in part["messages"] if isinstance(message.get("image"), dict)}
        for digest in sorted(digests):
            self._db.execute(
                "INSERT INTO images (session_id, digest, mime, width, height, data, created_at)"
                " SELECT ?, digest, mime, width, height, data, created_at FROM images"
                " WHERE session_id = ? AND digest = ?", [new_id, source_id, digest])

    def _vector_models(self) -> list[str]:
        """The embedding models with vectors in the file, each found by one seek of the
        (model, message) key rather than a read of every vector."""
        models: list[str] = []
        while (model := fetch_value(
                self._db, "SELECT min(model) FROM message_vectors WHERE model > ?",
                [models[-1] if models else ""])) is not None:
            models.append(str(model))
        return models

    def _derived_owners(self, session_id: int) -> list[str]:
        rows = fetch_rows(self._db,
            "SELECT strategy FROM strategy_state WHERE session_id = ?"
            " UNION SELECT strategy FROM summaries WHERE session_id = ?"
            " UNION SELECT ? FROM facts WHERE scope = 'session' AND session_id = ?"
            " AND source_turn IS NOT NULL",
            [session_id, session_id, FACTS_OWNER, session_id],
        )
        # Speakers are no derived state: those of the copied messages came with them.
        return sorted(r["strategy"] for r in rows  # a grantee's own state is its owner's
                      if r["strategy"] != SPEAKERS_OWNER and not kept_apart(r["strategy"]))

    def _derived_group(self, session_id: int, owner: str, state_covers: int
                       ) -> DerivedGroup | None:
        """The owner's coverage (its state's, `state_covers`, and its summaries' and facts');
        None when it refers to messages this session no longer has."""
        turns = [state_covers]
        summaries = self._memory.summaries(session_id, owner)
        covered = {i for s in summaries for i in s.covered_ids}
        if covered:
            marks = ", ".join("?" for _ in covered)
            found = fetch_rows(self._db,
                f"SELECT count(*) AS n, max(turn) AS last FROM messages"
                f" WHERE session_id = ? AND id IN ({marks})", [session_id, *covered],
            )[0]
            if found["n"] != len(covered):
                return None
            turns.append(int(found["last"]))
        facts = 0
        if owner == FACTS_OWNER:
            # Forgotten facts count too: a retraction after the fork turn changed them.
            sources = fetch_rows(self._db,
                "SELECT max(source_turn) AS last, count(deleted_at IS NULL OR NULL) AS live"
                " FROM facts WHERE scope = 'session' AND session_id = ?"
                " AND source_turn IS NOT NULL", [session_id],
            )[0]
            if sources["last"] is not None:
                turns.append(int(sources["last"]))
            facts = int(sources["live"] or 0)
        return DerivedGroup(owner, max(turns, default=0), len(summaries), facts)

    def _copy_group(self, source_id: int, new_id: int, owner: str, ids: dict[int, int],
                    theirs: str | None) -> dict[int, int]:
        """Copy the owner's state and summaries, and the fact extractor's its facts (their
        ids → their copies'; `theirs`: fork_facts.copy_facts)."""
        name, params = kept_name(self._db.kind, owner, source_id)  # a grantee's, his own
        self._db.execute(
            "INSERT INTO strategy_state (session_id, strategy, key, value) SELECT ?, ?, key,"
            f" value FROM strategy_state s WHERE session_id = ? AND strategy = {name}"
            + self._memory.trusted("s", "s.strategy"), [new_id, owner, source_id, *params])
        for s in self._memory.summaries(source_id, owner):
            self._db.execute(
                "INSERT INTO summaries (session_id, strategy, version, text, covered_ids,"
                " last_message_id, anchors, dropped_anchors, model, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [new_id, owner, s.version, s.text, json_text([ids[i] for i in s.covered_ids]),
                 ids.get(s.last_message_id) if s.last_message_id else None,
                 json_text(s.anchors), json_text(s.dropped_anchors), s.model, s.created_at],
            )
        if owner == FACTS_OWNER:
            return copy_facts(self._db, source_id, new_id, ids, theirs, stated=False)
        return {}
