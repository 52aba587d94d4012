"""Stored messages as the memory core sees them: as sent, with their token counts.

A stored reply keeps the reasoning the model wrote into it (`<think>…</think>`: inspect
and exports show what it said); it is sent back without it, as reasoning models expect
their history and at a fraction of the tokens.

A count comes from the store where a turn's commit wrote it; a message without
one (imported, forked under another tokenizer, counted with another model) is
counted here and remembered for this process only. Building a context never
writes to the history file: `inspect --next`, what-ifs and replays leave it
byte-identical.
"""

from __future__ import annotations

from collections.abc import Sequence

from chatmem.memory import quoting
from chatmem.memory.context import Message
from chatmem.reasoning import sent_reply
from chatmem.store import MessageRecord
from chatmem.store.protocols import MemoryStore
from chatmem.store.recall import CandidateRow
from chatmem.tokens import TokenCounter


class MessageCounts:
    """Counts under one tokenizer: the store's, else computed once in this process."""

    def __init__(self, store: MemoryStore, counter: TokenCounter) -> None:
        self.store = store
        self.counter = counter
        self._computed: dict[tuple[int, int], int] = {}
        """(message id, hash of the text sent) → tokens, for messages the store has no
        count for; keyed by the text too, so a message erased meanwhile is counted anew."""

    def counted(self, rows: Sequence[tuple[MessageRecord, int | None]]) -> list[Message]:
        """The records as sent, with their tokens: the store's counts, read with them
        (`store.history.counted_messages`; None: none stored under this tokenizer), else
        counted once in this process."""
        messages = []
        for record, tokens in rows:
            text = as_sent(record)
            if record.stored_text is not None or not _as_stored(record.role, record.content,
                                                                   text):
                # A reply's stored count holds the reasoning it is sent without; a
                # message read after its writer's label (MessageRecord) was counted without.
                tokens = None
            if tokens is None:
                tokens = self._counted(record.id, record.role, text)
            messages.append(Message(record.role, text, tokens, record.id, record.turn))
        return messages

    def tokens_of(self, rows: Sequence[CandidateRow]) -> list[int]:
        """Each candidate's tokens as sent: its stored count, else counted once per process."""
        counts = []
        computed, count = self._computed, self.counter.count_message
        for _, message_id, _, role, content, stored, _ in rows:
            # A user's message is sent as stored, and its count is of that: no calls for
            # the most of 150-300 candidates a build (`sent_text`, `_as_stored` inline).
            if role == "user":
                sent = content
                if "[" in content or "［" in content or "【" in content:  # a call only then
                    sent = quoting.day_lines_escaped(content)
                    if sent != content:
                        stored = None  # its stored count is of the text as said
            else:
                sent = sent_text(role, content)
                if stored is not None and not _as_stored(role, content, sent):
                    stored = None
            if stored is None:
                # `_counted`, inline: a session's first builds meet 150 new candidates each.
                key = (message_id, hash(sent))
                stored = computed.get(key)
                if stored is None:
                    stored = computed[key] = count(role, sent)
            counts.append(stored)
        return counts

    def sent_tokens(self, message_id: int, role: str, text: str) -> int:
        """The tokens of a message sent as `text` (recall's with the day it was said above
        it), counted once per process."""
        return self._counted(message_id, role, text)

    def _counted(self, message_id: int, role: str, text: str) -> int:
        key = (message_id, hash(text))
        tokens = self._computed.get(key)
        if tokens is None:
            tokens = self._computed[key] = self.counter.count_message(role, text)
        return tokens


def as_sent(record: MessageRecord) -> str:
    """A message's content as the model gets it: a stored system message only as a quotation.

    Only transcripts put system messages into history (the session's own system
    prompt is not a message); an imported one must not instruct the model.
    """
    return sent_text(record.role, record.content)


def sent_text(role: str, content: str) -> str:
    """`as_sent` of a message with this role and content: a reply without the reasoning it
    opens with (reasoning.sent_reply), and no line of it that reads as a day line
    (quoting.day_lines_escaped: recall puts those above messages)."""
    if role == "system":
        return quoting.imported_system_block(quoting.day_lines_escaped(content))
    return quoting.day_lines_escaped(sent_reply(content) if role == "assistant" else content)


def _as_stored(role: str, content: str, sent: str) -> bool:
    """Whether the store's count of a message stored as `content` is of `sent`: a system
    message's is of its quotation, a reply's of what the model said, its reasoning too (a
    turn's commit), which it is sent without; a day line escaped is a text of its own."""
    if role == "system":
        return sent == quoting.imported_system_block(content)
    return sent == content
