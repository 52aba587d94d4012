"""Searching memory: the messages recall would bring back for a query, ranked by words and
by meaning, with every score part, in one session or across the sessions where the words
are found."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from chatmem.errors import UsageError
from chatmem.memory.reasons import RecallRoute

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.engine import Engine
    from chatmem.store import Store

SESSIONS_SEARCHED = 5
"""Across sessions: the sessions whose words match best are ranked, this many at most."""
SEARCH_HITS = 50
"""The most messages one session's search returns (a server pages them)."""
SEARCH_ROOM = 200_000
"""Tokens a search may return: what was said is found whatever its length (a pasted contract
of 7,000 tokens), not only what a context's budget would hold; callers page it."""


@dataclass(frozen=True)
class Found:
    """A stored message recall would bring back for the query, and why."""

    session: str
    """What names its session in a command: `OWNER/NAME` when shared with the user."""
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
    """The score recall ranks by: words and meaning fused; None (and no other score) for
    a message found as one of the newest saying words too common to rank."""
    route: str | None = None
    """What brought it (words, meaning, neighbour, …) when the ranking says."""


def search_memory(workspace: Workspace, query: str, session: str | None = None, *,
                  limit: int = 10) -> list[Found]:
    """The best `limit` messages for `query`: in `session`, else in the sessions where its
    words are found (at most SESSIONS_SEARCHED), best first. Reading only."""
    names = sessions_to_search(workspace, query, session)
    return best_found([hit for name in names
                       for hit in found_in(search_engine(workspace, name), query)], limit)


def check_query(query: str) -> None:
    if not query.strip():
        raise UsageError("nothing to search for (empty query)")


def sessions_to_search(workspace: Workspace, query: str, session: str | None) -> list[str]:
    """`session`, else the sessions whose words match `query` best (SESSIONS_SEARCHED)."""
    check_query(query)
    if session is not None:
        return [session]
    return workspace.store.logs.sessions_matching(query, limit=SESSIONS_SEARCHED)


def search_engine(workspace: Workspace, session: str) -> Engine[Store]:
    """An engine that ranks the session as recall would for a query after its last turn
    (retrieval with recent=0: every turn is a candidate, none held back as the recent
    window), in SEARCH_ROOM rather than a context's budget; it only builds, never sends."""
    from chatmem.engine.opening import engine_over

    store = workspace.store
    record = store.sessions.session(session)
    recall = workspace.registries.strategies.create(workspace.registries.strategies.parse(
        "retrieval", {"recent": "0", "max_tokens": str(SEARCH_ROOM), "top_k": str(SEARCH_HITS)}))
    return engine_over(store, record, workspace.reproducing(record, explicit=False), recall,
                       budget=SEARCH_ROOM, embedder=workspace.recall_embedder([recall]),
                       zone=workspace.settings.zone)


def found_in(engine: Engine[Store], query: str) -> list[Found]:
    """What `engine` (search_engine's, perhaps kept open by a server) recalls for `query`;
    when recall finds nothing by its words, the newest messages saying them."""
    address = engine.store.sessions.address(engine.session.id)
    found = recalled_for(engine, query, address)
    if any(f.bm25 is not None for f in found):
        return found
    # Recall scores only words rare enough to rank in a bounded read: a word said in
    # hundreds of messages leaves it nothing to score, yet a search for it must find them.
    seen = {f.message_id for f in found}
    newest = engine.store.recall.newest_matches(engine.session.id, query, limit=SEARCH_HITS)
    return found + [Found(address, m.turn, m.role, m.content, m.id, None, None,
                          None, None, RecallRoute.WORDS.value)
                    for m in newest if m.id not in seen]


_NEAR_A_MATCH = (RecallRoute.NEIGHBOUR.value, RecallRoute.SITTING.value)


def recalled_for(engine: Engine[Store], query: str, address: str) -> list[Found]:
    """What `engine` recalls for `query`, as recall ranks it; each found in `address` (what
    names its session: `OWNER/NAME` when shared, as a client's next call must name it)."""
    context = engine.build_context(query)
    recalled = {m.id: m for p in context.parts if p.kind == "recalled" for m in p.messages}
    found = []
    for row in context.recall:
        message = recalled.get(row.get("id"))
        if message is None or not row.get("kept"):
            continue
        if row.get("route") in _NEAR_A_MATCH and row.get("dense") is None:
            continue  # kept only near a match: it does not hold what was asked for
        found.append(Found(address, message.turn, message.role, message.content,
                           message.id, row.get("bm25"), row.get("words"), row.get("dense"),
                           row.get("fused"), row.get("route")))
    return found


def best_found(found: list[Found], limit: int) -> list[Found]:
    """The best `limit` of what several sessions found, best first."""
    return sorted(found, key=lambda f: -(f.fused or 0.0))[:limit]
