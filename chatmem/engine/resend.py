"""Sending the last turn again (/retry) or an edit of its input (/edit-last) in place.

Messages are append-only: the replaced turn keeps its row and its messages,
which only leave memory (history, recall, counts), and `inspect` names the
turn that replaced it. Its messages leave before the new context is built, so
the model does not read the answer it is asked to replace; if the new attempt
is not stored (failed, cancelled, refused), they come back as they were.

The files attached to the replaced turn go again (`sent_files`), rebuilt from what its
stored context sent, never read again from disk: the file may have changed or gone since.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chatmem.attachments import Attachment
from chatmem.engine.turns import Engine, TurnResult
from chatmem.images import read_image
from chatmem.memory.quoting import attached_from_block
from chatmem.store.records import TurnStatus

if TYPE_CHECKING:
    import threading

    from chatmem.store.protocols import TurnStore
    from chatmem.store.records import TurnRecord


def resend_last(engine: Engine[TurnStore], text: str | None = None, *,
                on_delta: Callable[[str], None] | None = None,
                on_reply_end: Callable[[], None] | None = None,
                attachments: Sequence[Attachment] = (),
                expected: int | None = None,
                cancel: threading.Event | None = None,
                speaker: str | None = None,
                on_stored: Callable[[TurnResult], None] | None = None,
                on_answering: Callable[[], None] | None = None,
                reply_begun: str | None = None) -> TurnResult:
    """Replace the session's last completed turn by a new one with `text` (None: the same
    input); raises UsageError when that turn cannot be replaced (see store.turns.hide_turn),
    or is not `expected` (the id of the turn the caller means: its own last). `on_stored`,
    `on_answering`, `reply_begun` (its reply cut short, continued): as Engine.run_turn's."""
    old = engine.store.turns.hide_turn(engine.session.id, expected)
    engine.state.caches.clear()  # recall's caches may hold the hidden messages
    try:
        result = engine.run_turn(old.input if text is None else text, on_delta, on_reply_end,
                                 attachments, supersedes=old.number, cancel=cancel,
                                 speaker=speaker, on_stored=on_stored,
                                 on_answering=on_answering, reply_begun=reply_begun)
    except BaseException:
        engine.store.turns.show_turn(old)
        raise
    if result.status != TurnStatus.OK:
        engine.store.turns.show_turn(old)
    return result


@dataclass(frozen=True)
class SentFiles:
    """The files a stored turn sent, as attachments to send them again."""

    attachments: tuple[Attachment, ...]
    lost: tuple[str, ...]
    """Names of images whose bytes the session no longer holds: not sent again (their
    text says an image goes with it)."""
    unread: int = 0
    """Files messages that are not a block this version quotes: nothing to send them as."""


def sent_files(store: TurnStore, record: TurnRecord) -> SentFiles:
    """The attachments `record` sent (its context's `files` part), with each image's bytes
    from the session's images by hash: quoted again they are the messages it sent."""
    attachments: list[Attachment] = []
    lost: list[str] = []
    unread = 0
    for part in record.context.get("parts", ()):
        if part.get("kind") != "files":
            continue
        for message in part.get("messages", ()):
            quoted = attached_from_block(message.get("content", ""))
            if quoted is None:
                unread += 1
                continue
            name, text = quoted
            ref = message.get("image")
            if not ref:
                attachments.append(Attachment(name, text))
                continue
            data = store.images.image_bytes(record.session_id, str(ref.get("sha256")))
            image = read_image(data) if data is not None else None
            if image is None:
                lost.append(name)
            else:
                attachments.append(Attachment(name, text, image))
    return SentFiles(tuple(attachments), tuple(lost), unread)
