"""Keys a purge rewrites, kept apart from the keys beside them.

A purge erases a value inside keys too: `annabel birthday` becomes `[forgotten] birthday`.
Two facts of one owner may then share a key (`zebulon birthday` purged too), and the store
keeps one live fact per key and owner (chatmem.store.fact_keys): the next write to that
key would update one and silently leave or retire the other. So a rewritten key that is
another live fact's is made distinct (`[forgotten] birthday (2)`), and the purge says so.
A strategy's state keyed by names ({"Annabel": 2, "Zebulon": 1}) keeps both counts alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Set
from typing import Any

from chatmem.store.backend import Backend
from chatmem.store.fact_keys import key_identity
from chatmem.store.stored_values import json_text

Rewrite = Callable[[str], str]
"""A stored text -> the same text with its mentions erased (unchanged when it has none)."""


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


def rewrite_json(value: str, rewrite: Rewrite, *, keys: bool) -> str:
    """A JSON text with `rewrite` applied to its strings, and with `keys` to its objects'
    keys too (but chatmem's own, starting "@")."""
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
    # Keys only in a strategy's state, which may count by name ({"Zebulon": 2}); chatmem's
    # own JSON (a turn's context, anchors) keys its fields by name, and purging a value
    # "Content" renamed every message's "content" there. "@" keys are chatmem's own
    # (@covers_turn). Two keys the rewrite makes one stay two, the later one numbered.
    renamed = {key: key if key.startswith("@") else rewrite(key) for key in data}
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
