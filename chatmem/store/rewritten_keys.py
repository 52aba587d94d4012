"""Keys a purge rewrites, kept apart from the keys beside them.

A purge erases a value inside keys too: `annabel birthday` becomes `[forgotten] birthday`.
Two facts of one owner may then share a key (`zebulon birthday` purged too), and the store
keeps one live fact per key and owner (chatmem.store.fact_keys): the next write to that
key would update one and silently leave or retire the other. So a rewritten key that is
another live fact's is made distinct (`[forgotten] birthday (2)`), and the purge says so.
A strategy's state keyed by names ({"Annabel": 2, "Zebulon": 1}) keeps both counts alike,
and so do the keys its rows are stored under (`env.state.set(name, **{"seen Annabel": 1})`),
but chatmem's own (OWN_STATE_KEYS), which its code reads by name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from typing import Any

from chatmem.speakers import RELAYED, VIA
from chatmem.store.backend import Backend
from chatmem.store.fact_keys import key_identity
from chatmem.store.state_coverage import COVERS_KEY, FACTS_OWNER, SPEAKERS_OWNER
from chatmem.store.stored_values import json_text
from chatmem.store.writer_state import kept_role

Rewrite = Callable[[str], str]
"""A stored text -> the same text with its mentions erased (unchanged when it has none)."""

PINNED_KEY = "pinned"
"""A summary strategy's pinned details (chatmem.memory.pins.PINNED_KEY)."""
_SUMMARY_KEYS = frozenset({"boundary_turn", "behind", PINNED_KEY, "unpinned", "released"})
OWN_STATE_KEYS: Mapping[str, frozenset[str]] = {
    "summary": _SUMMARY_KEYS,  # chatmem.memory.summary_state and pins, per summary strategy
    "summary-buffer": _SUMMARY_KEYS,
    FACTS_OWNER: frozenset({"done_turn", "behind", "last_error", "rejections",  # memory.
                            "rejected_through"}),  # extraction
    "pins": frozenset({"last"}),  # memory.pins.COUNTER, the session's last pin id
    "sensitive": frozenset({"turns"}),  # memory.sensitive_turns.SENSITIVE_KEY
}
"""State owner → the row keys chatmem's own code stores and reads by name (besides
COVERS_KEY, in every owner's state): a purge never rewrites them. Every other row key, and
every key inside a state's values (chatmem's own values hold no objects), is a strategy's
data, which may name what the user said."""


def own_keys(owner: str) -> frozenset[str]:
    """The keys chatmem reads by name in `owner`'s state (OWN_STATE_KEYS), a write share's
    grantee's own copy of a state (`OWNER/ROLE`, store.writer_state.per_writer) as OWNER's."""
    return OWN_STATE_KEYS.get(kept_role(owner)[0], frozenset())


def is_own_state_key(owner: str, key: str) -> bool:
    """Whether `key` of `owner`'s strategy state is one chatmem reads by name."""
    return key == COVERS_KEY or key in own_keys(owner)


def distinct_fact_keys(db: Backend, rewritten: Mapping[int, str], gone: Set[int],
                       profile: str, params: list[Any]) -> dict[int, str]:
    """Of the live facts whose keys a purge rewrites (id → new key), those whose new key is
    the key of another live fact of their owner (their session, or the profile `profile`
    selects), each with the key it gets instead (id → key); the lower id keeps the plain
    key, a fact whose key is not rewritten keeps its own. `gone`: facts the purge deletes."""
    if not rewritten:
        return {}
    ids = ", ".join(str(int(i)) for i in rewritten)
    owners: dict[tuple[str, Any], list[int]] = {}
    for fact_id, scope, session_id in db.execute(
            f"SELECT id, scope, session_id FROM facts WHERE id IN ({ids})"
            " AND deleted_at IS NULL ORDER BY id").fetchall():
        if fact_id in gone:
            continue
        if scope == "session":
            owners.setdefault(("session", session_id), []).append(fact_id)
        elif session_id is None:
            owners.setdefault(("user", None), []).append(fact_id)
    distinct: dict[int, str] = {}
    for (scope, session_id), fact_ids in owners.items():
        where, values = (("scope = 'session' AND session_id = ?", [session_id])
                         if scope == "session" else (profile, params))
        held = {key_identity(key) for fact_id, key in db.execute(
            f"SELECT id, key FROM facts WHERE deleted_at IS NULL AND {where}",
            values).fetchall() if fact_id not in rewritten and fact_id not in gone}
        for fact_id in fact_ids:
            key = rewritten[fact_id]
            if key_identity(key) in held:
                key = _apart(key, held, key_identity)
                distinct[fact_id] = key
            held.add(key_identity(key))
    return distinct


def fact_speakers(db: Backend, rows: Iterable[Sequence[Any]], rewrite: Rewrite
                  ) -> dict[tuple[int, int], str]:
    """The speakers a purge gives session facts ((fact id, session id) → new speaker): each
    speaker `rewrite` changes, one new name for all of one speaker's facts, made distinct
    (`[forgotten] (2)`) when another speaker of the session holds it or another rewritten
    speaker gets it first: one key holds one live value per speaker, so two forgotten members
    made one would have their cities merged by the next write. A relayed speaker keeps its
    relaying role last (`[forgotten] (2) (via bob)`), as the server reads it (p032)."""
    given: dict[tuple[int, int], str] = {}
    renamed: dict[tuple[int, str], str] = {}
    held: dict[int, set[str]] = {}
    for fact_id, session_id, speaker in rows:
        if session_id is None:
            continue  # a profile fact has no speaker
        new = renamed.get((session_id, speaker))
        if new is None:
            new = rewrite(speaker)
            if new == speaker:
                continue
            keys = held.get(session_id)
            if keys is None:
                keys = held[session_id] = {stored for (stored,) in db.execute(
                    "SELECT DISTINCT speaker FROM facts WHERE session_id = ?"
                    " AND speaker IS NOT NULL", [session_id]).fetchall()
                    if rewrite(stored) == stored}
            if new in keys:
                head, relayed = _relayed_parts(new)
                new = _apart(head, {k[:len(k) - len(relayed)] for k in keys
                                    if k.endswith(relayed)}, str) + relayed
            keys.add(new)
            renamed[session_id, speaker] = new
        given[int(fact_id), int(session_id)] = new
    return given


def _relayed_parts(speaker: str) -> tuple[str, str]:
    """A relayed speaker's member and the role relaying it (`carol`, ` (via bob)`), or the
    speaker and ""."""
    relayed = RELAYED.fullmatch(speaker)
    if relayed is None:
        return speaker, ""
    return relayed[1], VIA.format(relayed[2])


def state_keys(db: Backend, rows: Iterable[Sequence[Any]], rewrite: Rewrite
               ) -> dict[tuple[int, str, str], str]:
    """The keys a purge gives strategy-state rows ((session id, owner, key) → new key): each
    key `rewrite` changes but chatmem's own, made distinct (`key (2)`) when its owner's state
    holds it already or another row gets it first (by old key). The keys before the rewrite
    are held too, so no row is updated onto a key another has not left yet."""
    given: dict[tuple[int, str, str], str] = {}
    held: dict[tuple[int, str], set[str]] = {}
    for session_id, owner, key in sorted(tuple(row) for row in rows):
        row = (int(session_id), str(owner), str(key))
        # A kept speaker's key is its message's position: a purge of "1" (a PIN, a fact's
        # value) took that member's name off the message, unsaid.
        own = owner == SPEAKERS_OWNER or is_own_state_key(owner, key)
        new = key if own else rewrite(key)
        if new == key:
            continue
        keys = held.get((session_id, owner))
        if keys is None:
            keys = held[session_id, owner] = {COVERS_KEY, *own_keys(owner), *(
                stored for (stored,) in db.execute(
                    "SELECT key FROM strategy_state WHERE session_id = ? AND strategy = ?",
                    [session_id, owner]).fetchall())}
        if new in keys:
            new = _apart(new, keys, str)
        keys.add(new)
        given[row] = new
    return given


def rewrite_json(value: str, rewrite: Rewrite, *, keys: bool) -> str:
    """A JSON text with `rewrite` applied to its strings, and with `keys` to its objects'
    keys too."""
    try:
        data = json.loads(value)
    except ValueError:
        return rewrite(value)
    new = _rewrite_in(data, rewrite, keys)
    return value if new == data else json_text(new)


def _rewrite_in(data: Any, rewrite: Rewrite, keys: bool) -> Any:
    if isinstance(data, str):
        return rewrite(data)
    if isinstance(data, list):
        return [_rewrite_in(item, rewrite, keys) for item in data]
    if not isinstance(data, dict):
        return data
    if not keys:
        return {key: _rewrite_in(item, rewrite, keys) for key, item in data.items()}
    # Keys only in a strategy's state, which may count by name ({"Zebulon": 2}, or a handle
    # {"@Zebulon": 2}); chatmem's own JSON (a turn's context, anchors) keys its fields by
    # name, and purging a value "Content" renamed every message's "content" there. Two keys
    # the rewrite makes one stay two, the later one numbered.
    renamed = {key: rewrite(key) for key in data}
    held = {key for key, new in renamed.items() if new == key}
    rewritten: dict[str, Any] = {}
    for key, item in data.items():
        new = renamed[key]
        if new != key:
            new = _apart(new, held, str) if new in held else new
            held.add(new)
        rewritten[new] = _rewrite_in(item, rewrite, keys)
    return rewritten


def _apart(key: str, held: Set[str], identity: Callable[[str], str]) -> str:
    """`key (2)`, or the first of `key (3)`, `key (4)`, ... not in `held`."""
    number = 2
    while identity(f"{key} ({number})") in held:
        number += 1
    return f"{key} ({number})"
