"""Messages as a client's copies of them are compared (`comparable`), and the digest that
tells one client's history from another's (`history_digest`): chatmem.app.client_history's,
each history compared once on a turn's thread however often it is asked."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple, Protocol

from chatmem.lazy_patterns import lazy
from chatmem.reasoning import blocks_replaced
from chatmem.speakers import unlabelled

if TYPE_CHECKING:
    from collections.abc import Sequence

    from chatmem.store import Store


class Said(Protocol):
    @property
    def role(self) -> str: ...

    @property
    def content(self) -> str: ...


class Plain(NamedTuple):
    role: str
    content: str


def comparable(role: str, content: str) -> tuple[str, str]:
    """A message as its copies are compared: its role, and its words (every run of
    whitespace one space, none around them; an assistant's reasoning blocks left out)."""
    # Clients drop the reasoning block chatmem stored with a reply from the history they send.
    text = blocks_replaced(content, " ") if role == "assistant" else content
    return role, " ".join(text.split())


_compared = threading.local()
"""A turn's thread's last history compared, its compared form and digest: a request's
history is compared three or four times (leaves_history, replaces_last_turn, AskedWith),
110 ms of CPU a request at 1,000 turns where once is 30. Per thread: a served turn's ends
with its request, and what it held goes with it."""


def comparable_all(messages: Iterable[Said]) -> list[tuple[str, str]]:
    if isinstance(messages, tuple):  # immutable: the same one is the same history
        held = getattr(_compared, "last", None)
        if held is None or held[0] is not messages:
            held = _compared.last = [messages, [comparable(m.role, m.content)
                                                for m in messages], None]
        return list(held[1])
    return [comparable(m.role, m.content) for m in messages]


def history_digest(messages: Iterable[Said]) -> str:
    """What tells one client's history from another's, in the compared form: a server keeps
    it for the turn it answered, not the history itself."""
    said = comparable_all(messages)
    held = getattr(_compared, "last", None)
    if held is None or held[0] is not messages:
        return json_digest(said)
    if held[2] is None:
        held[2] = json_digest(said)
    return str(held[2])


def json_digest(value: object) -> str:
    """A SHA-256 of `value` as JSON (Chinese as itself, a lone surrogate kept as its bytes)."""
    text = json.dumps(value, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def opening_name(opening: Said) -> str:
    """The session name a chat no id names is given by its first user message (`serve`):
    a digest of it, as `comparable` gives it (a second chat that began alike is NAME-2…)."""
    return "chat-" + history_digest([opening])[:12]


_SPEAKER_LABEL = lazy(r"[^\s:：][^:：]{0,39}[:：] ?")
"""A speaker's "Name: " a client puts before a reply it sends back (SillyTavern's names)."""


def copy_of_reply(copy: str, reply: str) -> bool:
    """Whether a client's `copy` of `reply` (both compared) is that reply, added to (a
    speaker's label, sources) or trimmed (an unfinished last sentence, the model's own
    label), or both: other words are its user's edit (a trim by its user reads as a
    client's)."""
    if reply in copy or copy in reply:
        return True
    label = _SPEAKER_LABEL.match(copy)
    return label is not None and copy[label.end():] in reply


def grantee_label(store: Store, session_id: int) -> str | None:
    """The label a write grantee's words carry in this session (engine.turn_rows)."""
    from chatmem.errors import UsageError
    from chatmem.speakers import speaker_of
    from chatmem.store.records import AccessLevel

    access = store.sessions.session_access(session_id)
    if access.level is not AccessLevel.WRITE:
        return None
    try:
        return speaker_of(access.role, "role", UsageError)
    except UsageError:
        return None


def unlabelled_all(messages: Sequence[Said], member: str) -> list[Said]:
    """`messages` with `member`'s label left out of the user's (speakers.unlabelled)."""
    return [Plain(m.role, unlabelled(m.content, member) if m.role == "user"
                  else m.content) for m in messages]
