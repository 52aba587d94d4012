"""Sessions written under unfinished names until they are whole: `replay --save-as`'s, a
`sessions import`'s, and the long history a served client sends for a new conversation
(written as an import is).

A session saved turn by turn under its wanted name looked finished in every
listing the moment the process stopped (kill -9, a SIGTERM, a closed terminal)
and took that name from the next run; an import written in one transaction held
the history's write lock for as long as it wrote (13 s for 80,000 messages), so
every other writer waited for it. So each session is made under a name that says
it is unfinished, what made it and whose process
(`unfinished-KIND.PID.HOST.RANDOM`, HOST a digest of the host name), written in
as many transactions as suit, and all get their wanted names in one short
transaction at the end: the names appear together, finished, or not at all.
Listings leave unfinished sessions out; the next replay or import removes those
whose process is gone (on another host, where that cannot be seen: those
untouched for a day, as a live one writes at every turn or batch).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from datetime import timedelta

from chatmem.errors import ChatmemError
from chatmem.store.leases import LeaseHolder
from chatmem.store.protocols import TurnStore
from chatmem.store.session_names import UNFINISHED, UNFINISHED_KINDS
from chatmem.store.session_names import is_unfinished as is_unfinished
from chatmem.timestamps import parse_time

ELSEWHERE_IDLE = timedelta(days=1)
"""How long another host's unfinished session stays untouched before it counts as left over."""


def unfinished_name(kind: str) -> str:
    """A new session name of this process's `kind` of work (UNFINISHED_KINDS: "replay",
    "import"), never taken by a finished session."""
    if kind not in UNFINISHED_KINDS:
        raise ValueError(f"no unfinished names for {kind!r}")
    return f"unfinished-{kind}.{os.getpid()}.{host_mark()}.{secrets.token_hex(4)}"


def remove_leftovers(store: TurnStore) -> list[str]:
    """Delete the unfinished sessions of replays and imports that are no longer running;
    their names."""
    now = parse_time(store.now())
    removed = []
    for row in store.sessions.list_sessions():
        found = UNFINISHED.fullmatch(row.name)
        if found is None or row.shared_by is not None:
            continue
        if found["host"] == host_mark():
            gone = LeaseHolder.on_this_host(int(found["pid"])).is_gone()
        else:
            gone = now - parse_time(row.updated_at) > ELSEWHERE_IDLE
        if gone:
            removed += _delete(store, [(row.name, row.id)])
    return removed


def publish(store: TurnStore, made: Sequence[tuple[str, int]], names: Sequence[str],
            taken: Callable[[str], ChatmemError], then: Callable[[], None] | None = None,
            *, in_place_of: Mapping[str, int] | None = None) -> None:
    """Give each session `made` (unfinished name, id) its name in `names`, all in one
    transaction with what `then` writes (an archive's facts): a name another process took
    meanwhile fails them all, raising `taken(name)`. A name `in_place_of` maps to a session
    (its id) that holds nothing (`discard_empty_session`: no message, turn, fact, state,
    pin, probe, image…) is taken from it, that session deleted (a served conversation's
    history written in batches replaces the session opened for it); holding anything by
    then (a /remember in a REPL open on it), it is taken: nothing of it is lost."""
    with store.write():
        for (_, session_id), name in zip(made, names, strict=True):
            held = store.sessions.find_session(name)
            if (held is not None and held.id == (in_place_of or {}).get(name)
                    and store.sessions.discard_empty_session(held.id)):
                held = None
            if held is not None:
                raise taken(name)
            store.sessions.update_session(session_id, name=name)
        if then is not None:
            then()


def discard(store: TurnStore, made: Sequence[tuple[str, int]]) -> None:
    """Delete the sessions a stopped replay or import made (name, id), each only while that
    name is still its own."""
    _delete(store, made)


def _delete(store: TurnStore, made: Sequence[tuple[str, int]]) -> list[str]:
    deleted = []
    for name, session_id in made:
        with suppress(ChatmemError):
            found = store.sessions.find_session(name)
            if found is not None and found.id == session_id:
                store.sessions.delete_session(name)
                deleted.append(name)
    return deleted


def host_mark() -> str:
    """Eight hex digits of the host name: a name has room for no long host name."""
    return hashlib.sha256(socket.gethostname().encode("utf-8", "surrogatepass")).hexdigest()[:8]
