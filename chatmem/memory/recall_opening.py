"""How a recalled context opens: never on an assistant reply (chatmem.memory.retrieval)."""

from __future__ import annotations

from collections.abc import Callable

from chatmem.memory.packing import Ranked
from chatmem.memory.reasons import RecallRoute, RecallVerdict


def open_with_user(kept: list[Ranked], ranked: list[Ranked],
                   ranked_at: Callable[[int], Ranked], room: int) -> list[Ranked]:
    """A context never opens on an assistant reply: a recalled reply that would
    comes with the question of its turn, the least relevant other messages making
    room for it if they must; else (the reply and its question alone do not fit)
    it is left out. The session's first message is no reply even when an assistant
    says it (a character app's greeting): it opens the context as it opened the
    conversation (assembly.fit_newest_turns)."""
    used = sum([r.tokens for r in kept])
    while kept and kept[0].role != "user" and kept[0].position > 1:
        first = kept[0]
        opener = next((r for r in ranked if r.position == first.position - 1), None)
        if opener is None:
            opener = ranked_at(first.position - 1)
            if opener.turn == first.turn and opener.role == "user":
                ranked.append(opener)
        # A better-ranked reply is not dropped for worse-ranked messages, nor a
        # better-ranked message for it (ties stay: equals keep their places).
        freed, left = [], used
        for other in sorted((r for r in kept[1:] if r.fused < first.fused),
                            key=lambda r: r.fused):
            if left + opener.tokens <= room:
                break
            freed.append(other)
            left -= other.tokens
        if (opener.turn == first.turn and opener.role == "user"
                and left + opener.tokens <= room):
            for other in freed:
                other.kept, other.why = False, RecallVerdict.MADE_ROOM
            opener.kept, opener.why = True, RecallVerdict.KEPT_AS_QUESTION
            opener.route = RecallRoute.NEIGHBOUR  # its reply brought it
            return [opener, *(r for r in kept if r.kept)]
        first.kept, first.why = False, RecallVerdict.REPLY_FIRST
        used -= first.tokens
        kept = kept[1:]
    return kept
