"""Searching memory: the messages recall would bring back for a query, ranked by words and
by meaning, with every score part, in one session or across the sessions where the words
are found."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from chatmem.errors import UsageError

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace

SESSIONS_SEARCHED = 5
"""Across sessions: the sessions whose words match best are ranked, this many at most."""


@dataclass(frozen=True)
class Found:
    """A stored message recall would bring back for the query, and why."""

    session: str
    turn: int | None
    role: str
    content: str
    message_id: int | None
    bm25: float | None
    """The full-text index's raw score (lower is better in SQLite's BM25)."""
    words: float | None
    """The word score scaled 0–1 by what the query could score."""
    dense: float | None
    """Cosine of the query with the message (and its context) by meaning; None without
    an embedder."""
    fused: float | None
    """The score recall ranks by: words and meaning fused."""
    route: str | None = None
    """What brought it (words, meaning, neighbour, …) when the ranking says."""


def search_memory(workspace: Workspace, query: str, session: str | None = None, *,
                  limit: int = 10) -> list[Found]:
    """The best `limit` messages for `query`: in `session`, else in the sessions where its
    words are found (at most SESSIONS_SEARCHED), best first. Reading only."""
    if not query.strip():
        raise UsageError("nothing to search for (empty query)")
    if session is not None:
        names = [session]
    else:
        names = workspace.store.logs.sessions_matching(query, limit=SESSIONS_SEARCHED)
    found = [hit for name in names for hit in _ranked(workspace, name, query)]
    found.sort(key=lambda f: -(f.fused or 0.0))
    return found[:limit]


def _ranked(workspace: Workspace, session: str, query: str) -> list[Found]:
    from chatmem.app.inspection import inspect_what_if

    # recent=0: every turn is a candidate, none held back as the recent window.
    recall = workspace.registries.strategies.parse("retrieval", {"recent": "0"})
    seen = inspect_what_if(workspace, session, recall, text=query)
    recalled = {m.id: m for p in seen.context.parts if p.kind == "recalled" for m in p.messages}
    found = []
    for row in seen.context.recall:
        message = recalled.get(row.get("id"))
        if message is None or not row.get("kept"):
            continue
        found.append(Found(session, message.turn, message.role, message.content, message.id,
                           row.get("bm25"), row.get("words"), row.get("dense"),
                           row.get("fused"), row.get("route")))
    return found
