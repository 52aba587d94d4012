"""How much of a client's history a session already holds: the overlap of the session's
end with the client's start, so a history written after another front end's turn, or
halfway by a request that failed, is stored on without a message twice or one lost
(adopted_history.adopt_history)."""

from __future__ import annotations

from collections.abc import Sequence


def stored_up_to(held: Sequence[tuple[str, str]], said: Sequence[tuple[str, str]]) -> int:
    """How many of a client's messages `said` a session holding `held` already ends with:
    the longest start of `said` that is the end of `held` (all of `held` when it is the
    client's start; a start written after another front end's turn by a request that then
    failed halfway, so the next stores no message twice; 0: the client's whole history goes
    after the session's, nothing of either lost). Knuth-Morris-Pratt: linear, a session of
    a repeated "hi" too."""
    said = said[:len(held)]
    if not said:
        return 0
    back = [0] * len(said)  # for each start of `said`, its longest proper start-end
    k = 0
    for i in range(1, len(said)):
        while k and said[i] != said[k]:
            k = back[k - 1]
        if said[i] == said[k]:
            k += 1
        back[i] = k
    k = 0
    for message in held:
        while k and (k == len(said) or message != said[k]):
            k = back[k - 1]
        if message == said[k]:
            k += 1
    return k
