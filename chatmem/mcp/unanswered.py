"""A record_turn whose client stopped waiting after its turn was stored, and the same call
sent again.

A record_turn stores its turn, then updates the conversation's memory (a summary, facts),
which asks the helper model: a slow one outlasts a client's timeout (the SDK's ClientSession
then sends `notifications/cancelled`, and so do Claude Desktop and Cursor). The turn was
stored by then, but the SDK sends no answer to a cancelled call, so the client, told
nothing was done, sends the same call again, and the exchange was stored twice (turns 2
and 3 both "My cat is Tom."), sent to the model twice ever after. The call sent again is
therefore answered with the turn already stored, when nothing was recorded since.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass

ALREADY_STORED = ("turn {turn} already held this exchange: it was stored by a call of it "
                  "that was cancelled (or timed out) before its answer came; not stored again")
"""The notice of a record_turn answered with the turn an unanswered call of it stored."""


@dataclass(frozen=True)
class _Stored:
    exchange: bytes
    turn: int
    context_tokens: int
    cancelled: threading.Event
    """Set when the call that stored it was cancelled (CallSteps.cancellation)."""


def _exchange(user: str, assistant: str) -> bytes:
    return hashlib.sha256(f"{len(user)}:{user}{assistant}".encode("utf-8", "replace")).digest()


class UnansweredTurns:
    """The last turn each conversation's record_turn stored, until its call is answered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[Hashable, _Stored] = {}

    def stored(self, key: Hashable, user: str, assistant: str, turn: int,
               context_tokens: int, cancelled: threading.Event) -> None:
        """Turn `turn` was stored by a call (on the conversation's own thread, in order)."""
        with self._lock:
            self._last[key] = _Stored(_exchange(user, assistant), turn, context_tokens,
                                      cancelled)

    def answered(self, key: Hashable, cancelled: threading.Event) -> None:
        """The call whose flag is `cancelled` was answered: its turn is not sent again."""
        with self._lock:
            last = self._last.get(key)
            if last is not None and last.cancelled is cancelled:
                del self._last[key]

    def sent_again(self, key: Hashable, user: str, assistant: str,
                   turns_now: Callable[[], int],
                   cancelled: threading.Event) -> tuple[int, int] | None:
        """(turn, context tokens) when this exchange is the one a cancelled call stored as
        the conversation's last turn, still its last (`turns_now`, asked only then: a query
        every record_turn would pay for): it now waits for this call's answer (`cancelled`
        its flag). None otherwise: the call is a turn of its own."""
        with self._lock:
            last = self._last.pop(key, None)
        # Outside the lock (every conversation's): only this conversation's thread, busy
        # here, stores under `key`.
        if (last is None or not last.cancelled.is_set()
                or last.exchange != _exchange(user, assistant) or last.turn != turns_now()):
            return None
        with self._lock:
            self._last[key] = _Stored(last.exchange, last.turn, last.context_tokens, cancelled)
        return last.turn, last.context_tokens
