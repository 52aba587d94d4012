"""The turn `chatmem serve` last answered in each conversation, and what it keeps of the
history its request sent (for a regenerate or an edit of it), bounded by count and bytes."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chatmem.app.client_history import AskedWith

ANSWERED_KEPT = 4096
"""Conversations whose last answered turn the server remembers (for a regenerate or an
edit of it); one beyond is regenerated only by asking its last question again."""
ANSWERED_BYTES = 32 * 1024 * 1024
"""What those notes hold at most (`AskedWith.held_bytes`: a digest of each message sent, the
reply's text), the oldest let go first as past ANSWERED_KEPT; the newest kept whatever its
size. 4,096 chats of 10,000 messages and 20,000-character replies held 450 MB."""

Note = tuple[int, "AskedWith", int]
"""The stored turn's row id, what is kept of the history its request sent, and when."""


class AnsweredNotes:
    """Notes by (location, conversation), the one noted least recently let go first past
    `most` notes or `most_bytes` held. Not thread-safe: its owner holds a lock."""

    def __init__(self, most: int = ANSWERED_KEPT, most_bytes: int = ANSWERED_BYTES) -> None:
        self.most, self.most_bytes = most, most_bytes
        self._notes: OrderedDict[tuple[str, str], Note] = OrderedDict()
        self.held_bytes = 0

    def get(self, key: tuple[str, str]) -> Note | None:
        return self._notes.get(key)

    def __len__(self) -> int:
        return len(self._notes)

    def note(self, key: tuple[str, str], note: Note) -> None:
        if (before := self._notes.pop(key, None)) is not None:
            self.held_bytes -= before[1].held_bytes
        self._notes[key] = note
        self.held_bytes += note[1].held_bytes
        while len(self._notes) > self.most or (
                self.held_bytes > self.most_bytes and len(self._notes) > 1):
            self.held_bytes -= self._notes.popitem(last=False)[1][1].held_bytes
