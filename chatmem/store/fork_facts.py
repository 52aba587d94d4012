"""A fork's facts: the session facts still true at the fork, those forgotten, and the
earlier values of both (chatmem.store.fork copies the rest of a session).

The facts the user stated and those the extractor found from the copied turns are copied
live; the forgotten ones come along so that the fork's extractor, reading its turns again,
does not find them anew; a fact of another's shared session stays hers in his copy.
"""

from __future__ import annotations

from chatmem.store import steps
from chatmem.store.backend import Backend
from chatmem.store.connection import fetch_rows


def copy_forgotten(db: Backend, source_id: int, new_id: int, upto: int,
                   theirs: str | None) -> dict[int, int]:
    """Copy the session facts forgotten (from the copied turns, or stated), their ids →
    their copies': when the fork's extractor, or a fork's of it, reads its turns again,
    what was forgotten since stays forgotten (memory.later_facts goes by when they were)."""
    rows = fetch_rows(db,
        "SELECT id, key, value, source_turn, created_at, updated_at, deleted_at, speaker"
        " FROM facts WHERE scope = 'session' AND session_id = ? AND deleted_at IS NOT NULL"
        " AND (source_turn IS NULL OR source_turn <= ?) ORDER BY id", [source_id, upto])
    return {int(fact["id"]): steps.insert_id(db,
        "INSERT INTO facts (scope, \"user\", session_id, key, value, source_turn,"
        " source_session_id, created_at, updated_at, deleted_at, speaker)"
        " VALUES ('session', NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [new_id, fact["key"], fact["value"], fact["source_turn"], new_id,
         fact["created_at"], fact["updated_at"], fact["deleted_at"],
         _stated_by(fact["speaker"], theirs)])
        for fact in rows}


def copy_facts(
    db: Backend, source_id: int, new_id: int, ids: dict[int, int], theirs: str | None, *,
    stated: bool
) -> dict[int, int]:
    """Copy the live session facts the user stated, or those extracted from messages;
    their ids → their copies'. `theirs`: the source's owner when she is not the forker
    (`_stated_by`)."""
    which = "IS NULL" if stated else "IS NOT NULL"
    rows = fetch_rows(db,
        f"SELECT * FROM facts WHERE scope = 'session' AND session_id = ?"
        f" AND deleted_at IS NULL AND source_turn {which} ORDER BY id", [source_id],
    )
    copies: dict[int, int] = {}
    for fact in rows:
        source = fact["source_message_id"]
        copies[int(fact["id"])] = steps.insert_id(db,
            "INSERT INTO facts (scope, \"user\", session_id, key, value, source_message_id,"
            " source_turn, source_session_id, created_at, updated_at, expires_at, used_at,"
            " speaker) VALUES ('session', NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [new_id, fact["key"], fact["value"], ids.get(source) if source else None,
             fact["source_turn"], new_id, fact["created_at"], fact["updated_at"],
             fact["expires_at"], fact["used_at"], _stated_by(fact["speaker"], theirs)],
        )
    return copies


def copy_fact_history(db: Backend, copies: dict[int, int], source_id: int, new_id: int,
                      upto: int) -> None:
    """The earlier values of the copied facts (`copies`: id → its copy's): `facts list`
    shows them and a purge of the fact searches for them too. One stated at a turn after
    the fork's last is left out, as that turn is."""
    if not copies:
        return
    marks = ", ".join("?" for _ in copies)
    rows = fetch_rows(db,
        f"SELECT fact_id, key, value, source_session_id, source_turn, stated_at,"
        f" replaced_at FROM fact_history WHERE fact_id IN ({marks})"
        " AND (source_session_id IS NULL OR source_session_id <> ?"
        " OR source_turn IS NULL OR source_turn <= ?) ORDER BY id",
        [*copies, source_id, upto])
    if rows:
        db.executemany(
            "INSERT INTO fact_history (fact_id, key, value, source_session_id, source_turn,"
            " stated_at, replaced_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(copies[int(r["fact_id"])], r["key"], r["value"],
              new_id if r["source_session_id"] == source_id else r["source_session_id"],
              r["source_turn"], r["stated_at"], r["replaced_at"]) for r in rows])


def _stated_by(speaker: str | None, theirs: str | None) -> str | None:
    """Who stated a copied fact: the source's owner's (no speaker) is hers (`theirs`), not
    the forker's, when he forks a session she shares with him."""
    return theirs if speaker is None else speaker
