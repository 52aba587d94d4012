"""A write share's grantee's own state in the owner's PostgreSQL session.

A summary strategy's state (its boundary, its pins with their ids and quotes, what the
user unpinned, how many pins were released for space) and the session's pin id counter are
each reader's: a grantee's turns there derive his (from the session's summaries, his and
hers), and once his update wrote them over hers (the same rows, stamped with him) she
trusted none of it, her pins were rebuilt bare from her summaries, given new ids, pins she
had released came back, and her id counter started over (an id meaning another detail).
So his chatmem keeps them under `OWNER/ROLE` beside hers (`PER_WRITER`), starting from hers
at his first write, and reads them back in her place; hers stay as she wrote them. A plugin
strategy's state is kept the same way (`per_writer`): his turn wrote it over hers, and her
next update, trusting none of it, read her whole history again from turn 1. No schema
change: rows his SQL puts under her names are still read as another's (p025).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from chatmem.store.backend import Backend
from chatmem.store.connection import fetch_rows
from chatmem.store.postgres_writers import trusted_by_reader

PER_WRITER = frozenset({"summary", "summary-buffer", "pins", "facts"})
"""State owners whose state a write share's grantee keeps apart from the owner's in her
session (PostgreSQL): the summary strategies' (boundary, pins, unpins, released count), the
pin id counter (memory.pins.COUNTER) and the fact extraction marker (memory.extraction: his
goes on from hers when hers is further, so he reads her turns no more than before; once his
turn wrote the session's marker, stamped with him, she trusted none of it and re-extracted
her whole history from turn 1 after each of his turns). His chatmem reads and writes them under
`OWNER/ROLE` (`own_rows`; his first write starts from hers), hers stay as she wrote them:
her pins keep their ids and quotes, what she released stays released, no id of hers is given
out again. A plugin strategy's state is each writer's too (`per_writer`); only SESSION_STATE
is the session's."""
SESSION_STATE = frozenset({"sensitive", "@speakers"})
"""State owners that are the session's, whoever's turn wrote them: the turns marked sensitive
(memory.sensitive_turns.SENSITIVE_KEY, for all) and who said each message
(state_coverage.SPEAKERS_OWNER)."""


def per_writer(owner: str) -> bool:
    """Whether a write share's grantee keeps `owner`'s state in another's PostgreSQL session
    apart from the owner's (`OWNER/ROLE`): PER_WRITER and every plugin strategy's (a plugin
    name holds no '/'), not SESSION_STATE."""
    return "/" not in owner and owner not in SESSION_STATE


def kept_role(name: str) -> tuple[str, str]:
    """(state owner, role) of one grantee's own state owner name (`OWNER/ROLE`; an owner has
    no '/', a role may), else (`name`, '')."""
    base, _, role = name.partition("/")
    return (base, role) if role and per_writer(base) else (name, "")


APART_OF = "(position('/' in strategy) > 0 AND substr(strategy, position('/' in strategy) + 1) = ?)"
"""SQL: a strategy_state row is one role's own state in another's session (`OWNER/ROLE`,
per_writer; param: the role). Its owner never names a state so (SQL planted rows too go)."""
WRITER_NAME = ("CASE WHEN (SELECT o.owner FROM sessions o WHERE o.id = ?) = current_user"
               " THEN ? ELSE ? || '/' || current_user END")
"""SQL: the state owner name a role writes under in a session (PER_WRITER; params: session
id, owner, owner)."""

KEPT_NAME = ("(SELECT CASE WHEN count(*) > 0 THEN ? || '/' || current_user ELSE ? END"
             " FROM strategy_state k WHERE k.session_id = ? AND k.owner <> current_user"
             " AND k.strategy = ? || '/' || current_user)")
"""SQL: the state owner name whose rows a role keeps as its own in a session (own_rows;
params: owner, owner, session id, owner)."""


def kept_name(kind: str, owner: str, session_id: int) -> tuple[str, list[Any]]:
    """SQL naming the rows of `owner`'s state this reader keeps in the session, its params."""
    if kind == "postgresql" and per_writer(owner):
        return KEPT_NAME, [owner, owner, session_id, owner]
    return "?", [owner]


def kept_apart(name: str, reader: str | None = None) -> bool:
    """Whether `name` is one grantee's own state owner (`OWNER/ROLE`, PER_WRITER); with
    `reader`, this reader's."""
    role = kept_role(name)[1]
    return bool(role) and (role == reader if reader is not None else True)


def own_rows(db: Backend, columns: str, session_id: int, strategy: str, where: str = "",
              params: Sequence[Any] = ()) -> list[Any]:
    """The strategy's state rows (`columns`, and whether this reader trusts each) as this
    reader keeps them in the session: in another's session shared for writing, its own
    (PER_WRITER: `OWNER/ROLE`) once it wrote any, else the owner's."""
    if db.kind != "postgresql":
        return fetch_rows(db, f"SELECT {columns}, 1 AS trusted FROM strategy_state"
                          f" WHERE session_id = ? AND strategy = ?{where}",
                          [session_id, strategy, *params])
    if not per_writer(strategy):
        return fetch_rows(db, f"SELECT {columns}, {trusted_by_reader('s')} AS trusted"
                          f" FROM strategy_state s WHERE session_id = ? AND strategy = ?"
                          f"{where}", [session_id, strategy, *params])
    rows = fetch_rows(db,
        f"SELECT {columns}, {trusted_by_reader('s')} AS trusted, strategy <> ? AS apart"
        " FROM strategy_state s WHERE session_id = ? AND (strategy = ? OR owner <>"
        f" current_user AND strategy = ? || '/' || current_user){where}",
        [strategy, session_id, strategy, strategy, *params])
    apart = [r for r in rows if r["apart"]]
    return apart or rows


def counted_elsewhere(db: Backend, session_id: int, owner: str, key: str) -> int:
    """The highest whole `key` of `owner`'s state other writers keep in the session
    (PER_WRITER: the owner's and each grantee's own, `OWNER/ROLE`), whoever wrote it
    (PostgreSQL). A counter that takes it as its floor never gives out a
    number another writer there gave out (memory.pins.allocate_ids): `p3` names one pin
    in her listing and his. Only a floor: a value planted by SQL can make the numbers
    larger, never repeat one."""
    highest = 0
    for r in fetch_rows(db, "SELECT value FROM strategy_state WHERE session_id = ?"
                        " AND key = ? AND (strategy = ? OR strategy LIKE ? || '/%')",
                        [session_id, key, owner, owner]):
        try:
            value = json.loads(r["value"] or "null")
        except (ValueError, RecursionError):
            continue
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2 ** 53:
            highest = max(highest, value)
    return highest


def as_kept(rows: list[Any]) -> list[dict[str, Any]]:
    """`rows` of state values as their reader keeps them (own_rows): in another's
    session, its own (`OWNER/ROLE`, named OWNER) in place of the owner's once it has any;
    no other role's (rows also carry `shared`: the session is another's, and `reader`)."""
    apart: list[dict[str, Any]] = []
    plain: list[dict[str, Any]] = []
    for r in rows:
        row = dict(r)
        base, role = kept_role(str(row["strategy"]))
        if row["shared"] and role and role == row["reader"]:
            apart.append(row | {"strategy": base})
        elif not role:  # none of another grantee's own
            plain.append(row)
    mine = {(r["session_id"], r["strategy"]) for r in apart}
    return sorted([*apart, *(r for r in plain if (r["session_id"], r["strategy"])
                             not in mine)],
                  key=lambda r: (r["session_id"], r["strategy"]))


def as_copied(rows: list[dict[str, Any]], reader: str) -> list[dict[str, Any]]:
    """`rows` of strategy state copied out of a PostgreSQL session (store.copying) as
    `reader` keeps them: its own (`OWNER/ROLE`) under the owner's name, in place of the
    owner's rows of that owner in that session, and no other grantee's. A grantee's copy
    of a session he wrote in held her state and his side by side: read from a file, where
    every row is the file's user's, his listing there showed each pin twice (p1 for two)."""
    mine = {(r["session_id"], kept_role(str(r["strategy"]))[0]) for r in rows
            if kept_apart(str(r["strategy"]), reader)}
    kept: list[dict[str, Any]] = []
    for row in rows:
        name = str(row["strategy"])
        if kept_apart(name, reader):
            kept.append(row | {"strategy": kept_role(name)[0]})
        elif not kept_apart(name) and (row["session_id"], name) not in mine:
            kept.append(row)
    return kept
