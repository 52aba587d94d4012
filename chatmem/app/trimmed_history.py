"""A client that trims its history (it keeps the last N exchanges, as LangChain's
trim_messages and many bots do): the session whose end its window is, found by what this
server filed the sessions it answered under (`window_key`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from chatmem.app.client_history import ClientMessage, newest_said, purged_from
from chatmem.app.compared_text import Said, comparable, comparable_all, json_digest

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace


WINDOW_EXCHANGES = 2
"""The fewest whole exchanges a window must carry to go on a session whose end it is
(`session_of_window`): one is too little to tell chats apart ("hi", "Hello! How can I
help?" ends many), two with the same system prompt rarely are."""


def window_key(system: str | None, exchange: Sequence[Said]) -> str:
    """What a server files a session under after answering it: the system prompt its
    request sent and the exchange it ends with, compared as `comparable` words. A window
    whose last exchange and system prompt give the same key may be that session's end."""
    return json_digest([system or "", comparable_all(exchange)])


def session_of_window(workspace: Workspace, candidates: Iterable[str],
                      prior: Sequence[ClientMessage], text: str) -> str | None:
    """The session a client that trims its history (it keeps the last N exchanges, as
    LangChain's trim_messages and many bots do) goes on when its opening no longer names
    it: the one among `candidates` (sessions this server answered whose last exchange, or
    the one before it, and system prompt are the request's, `window_key`) whose newest
    messages, its last reply included, are the whole of the client's `prior`, of
    WINDOW_EXCHANGES exchanges or more; else the one whose newest are `prior` then `text`
    asked and answered (a regenerate of its last reply). None when no candidate or more
    than one is that (two chats alike so far cannot be told apart: neither gets the other's
    messages). Reads no more of each than `prior` holds and one exchange."""
    if any(sum(m.role == role for m in prior) < WINDOW_EXCHANGES
           for role in ("user", "assistant")):
        return None
    said = comparable_all(prior)
    names = list(dict.fromkeys(candidates))
    # One that goes on wins over one asked again, as for a whole history (session_of_opening).
    for tail in (said, [*said, comparable("user", text), ("assistant", None)]):
        found = [name for name in names if _ends_with(workspace, name, tail)]
        if found:
            return found[0] if len(found) == 1 else None
    return None


def _ends_with(workspace: Workspace, name: str,
               said: Sequence[tuple[str, str | None]]) -> bool:
    """Whether session `name`'s newest messages are `said` (a None text: any of that role)."""
    store = workspace.store
    session = store.sessions.find_session(name)
    if session is None:
        return False
    newest = comparable_all(newest_said(store.history, session.id, len(said)))
    return len(newest) == len(said) and all(
        role == held[0] and (text is None or purged_from(held, (role, text)))
        for (role, text), held in zip(said, newest, strict=True))
