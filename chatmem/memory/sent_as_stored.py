"""Whether the stored messages a plugin strategy's build sends are stored ones, as stored.

README ("What a strategy is"): `history` and `recalled` parts hold stored messages only,
each once, as the history gave them. chatmem's own strategies send what the history view
gave them; a plugin's build is checked here (memory.guards.wrong_context) before its context
reaches the model, the stored record and `inspect --json`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatmem.memory.context import Message, Part
from chatmem.memory.message_counts import sent_text

if TYPE_CHECKING:
    from chatmem.memory.base import ContextRequest


STORED_KINDS = frozenset({"recalled", "history"})
"""The parts that hold stored messages only, each sent once (README, What a strategy is)."""


def not_stored_once(part: Part, sent: set[int]) -> str | None:
    """What makes `part`'s messages other than stored ones, each sent once in the context
    (`sent`: the ids of the stored messages its earlier parts sent, added to), or None.
    A plugin's only: chatmem's own strategies send what the history view gave them."""
    for message in part.messages:
        if not isinstance(message, Message):  # (_wrong_message said so first)
            continue
        if not isinstance(message.id, int) or isinstance(message.id, bool):
            return (f"a {part.kind!r} part holding a message that is not a stored one (id "
                    f"{message.id!r}): text of its own goes in a 'summary' or 'facts' part")
        if message.id in sent:
            return (f"a {part.kind!r} part holding a stored message of turn {message.turn}"
                    f" a second time: each is sent once")
        sent.add(message.id)
    return None


AS_STORED = "plugin_sent_as_stored"
"""The key in SessionState.caches of the stored messages a plugin's build sent, checked: id →
hash of (role, text as sent). Emptied with the other caches when a stored text changes (a
purge, a replaced turn: Engine.follow_erasures), so a message is read once per process."""
AS_STORED_AT_MOST = 20_000
"""Checked messages kept (ints: ~2 MB), as recall keeps as many candidates (recall_sources)."""


def altered(parts: tuple[Part, ...], request: ContextRequest) -> str | None:
    """What makes a stored message a plugin's build sends other than the history gives it
    (its role or text changed, or no message of this session), or None. Caught only by
    `check_strategy` before, and sent as if the user had said it: a build that "tidies" a
    recalled message puts words in the user's mouth that inspect shows as stored. Each
    message is read from the store once per process (`AS_STORED`): a turn reads its new ones."""
    checked: dict[int, int] = request.state.caches.setdefault(AS_STORED, {})
    sent = [(part.kind, m) for part in parts if part.kind in STORED_KINDS
            for m in part.messages]
    unread = [m.id for _, m in sent if m.id not in checked and isinstance(m.id, int)]
    if unread:
        if len(checked) + len(unread) > AS_STORED_AT_MOST:
            # Emptied, so this build's messages are all read again: those checked before,
            # read no more, were refused as messages the session does not store.
            checked.clear()
            unread = [m.id for _, m in sent if isinstance(m.id, int)]
        state = request.state
        for message_id, (_, role, content) in state.store.history.placed(
                state.session_id, unread).items():
            checked[message_id] = hash((role, sent_text(role, content)))
    for kind, message in sent:
        held = checked.get(message.id) if isinstance(message.id, int) else None
        if held is None:
            return (f"a {kind!r} part holding message id {message.id} (turn {message.turn}),"
                    " which this session does not store: send the messages its history"
                    " gives; text of your own goes in a 'summary' or 'facts' part")
        if hash((message.role, message.content)) != held:
            return (f"a {kind!r} part holding stored message {message.id} (turn "
                    f"{message.turn}) with its role or text altered: send stored messages as"
                    " the history gives them, whole (dataclasses.replace for `said_on` and"
                    " `tokens` only); text of your own goes in a 'summary' or 'facts' part")
    return None
