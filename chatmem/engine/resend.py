"""Sending the last turn again (/retry) or an edit of its input (/edit-last) in place.

Messages are append-only: the replaced turn keeps its row and its messages,
which only leave memory (history, recall, counts), and `inspect` names the
turn that replaced it. Its messages leave before the new context is built, so
the model does not read the answer it is asked to replace; if the new attempt
is not stored (failed, cancelled, refused), they come back as they were.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from chatmem.engine.turns import Engine, TurnResult
from chatmem.store.records import TurnStatus

if TYPE_CHECKING:
    import threading

    from chatmem.attachments import Attachment
    from chatmem.store.protocols import TurnStore


def resend_last(engine: Engine[TurnStore], text: str | None = None, *,
                on_delta: Callable[[str], None] | None = None,
                on_reply_end: Callable[[], None] | None = None,
                attachments: Sequence[Attachment] = (),
                expected: int | None = None,
                cancel: threading.Event | None = None) -> TurnResult:
    """Replace the session's last completed turn by a new one with `text` (None: the same
    input); raises UsageError when that turn cannot be replaced (see store.turns.hide_turn),
    or is not `expected` (the id of the turn the caller means: its own last)."""
    old = engine.store.turns.hide_turn(engine.session.id, expected)
    engine.state.caches.clear()  # recall's caches may hold the hidden messages
    try:
        result = engine.run_turn(old.input if text is None else text, on_delta, on_reply_end,
                                 attachments, supersedes=old.number, cancel=cancel)
    except BaseException:
        engine.store.turns.show_turn(old)
        raise
    if result.status != TurnStatus.OK:
        engine.store.turns.show_turn(old)
    return result
