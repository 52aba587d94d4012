"""Which conversation a `/v1/chat/completions` request belongs to: the id a header, its
metadata or its `user` gives (one of the form `OWNER/NAME` names a shared session), else a
fingerprint of how the conversation began."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chatmem.errors import RequestError

if TYPE_CHECKING:
    from chatmem.app.client_history import Said


CONVERSATION_HEADERS = ("x-chatmem-conversation", "x-openwebui-chat-id")
"""Headers that name the conversation: chatmem's own, and Open WebUI's (sent with
ENABLE_FORWARD_USER_INFO_HEADERS=true)."""
METADATA_KEYS = ("conversation_id", "chat_id", "session_id", "thread_id")
"""Where clients put a conversation's id in a request's metadata (Open WebUI: chat_id)."""
_UNFILLED = re.compile(r"\{\{[^{}]*\}\}|\$\{[^{}]*\}|undefined|null|None")
"""An id a front end left unfilled: its template (LibreChat's `{{LIBRECHAT_BODY_…}}` for a
request without that field, `${VAR}`), or a missing value's spelling in JavaScript or
Python; or only spaces. It is the same text for every chat, so it names none."""


@dataclass(frozen=True)
class SharedId:
    """A client's conversation id of the form `OWNER/NAME`, as the CLI names a session
    another role shares: on PostgreSQL it names that session (`Turn` looks it up)."""

    address: str
    field: str
    """Where the request gave it (a header, `metadata.chat_id`, `user`): what an error names."""


def header_text(value: str) -> str:
    """A header's text as the client wrote it: HTTP servers read header bytes as Latin-1, so
    UTF-8 (`旅行` sent as is) is read back as UTF-8; a percent-encoded value (as chatmem's own
    response headers carry a name) is decoded."""
    from urllib.parse import unquote

    try:
        text = value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        text = value
    if "%" in text:
        try:
            return unquote(text, errors="strict")
        except UnicodeDecodeError:
            return text
    return text


def _id_text(value: Any, field: str) -> str:
    """A conversation id given as a string or a number, as text; RequestError naming `field`
    for anything else (an object's Python spelling is no name a client chose)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return str(value)
    raise RequestError(f"{field} must be a string or a number", "metadata")


def conversation_of(body: Mapping[str, Any], headers: Mapping[str, str],
                    read: Sequence[Said]) -> tuple[str, bool, SharedId | None, bool]:
    """The session a request belongs to, whether no id named it, the id when it has the
    form `OWNER/NAME`, and whether the id names one chat (not `user`): the header, the
    request's `user` or a conversation id in its metadata (the fields Open WebUI and
    LibreChat send), else a fingerprint of how the
    conversation began (its first user message, which every later request of it repeats;
    not a system message: a RAG front end sends new documents in one each time). Two ids
    never share a session (`session_name_of`); chats that began alike are told apart by
    their history (`session_of_opening`). Chats of one `user` share its session: one's
    message is never taken for an edit of another's (`replaces_last_turn`)."""
    from chatmem.app.client_history import history_digest
    from chatmem.app.compared_text import opening_name
    from chatmem.app.sessions import session_name_of, shared_address

    named, field = next(((text, h) for h in CONVERSATION_HEADERS if h in headers
                         for text in [header_text(headers[h])] if not _unfilled(text)),
                        (None, ""))
    if not named:
        metadata = body.get("metadata")
        if isinstance(metadata, Mapping):
            key = next((k for k in METADATA_KEYS if metadata.get(k)
                        and not _unfilled(metadata[k])), None)
            field = f"metadata.{key}"
            named = None if key is None else _id_text(metadata[key], field)
    if not named and isinstance(body.get("user"), str) and not _unfilled(body["user"]):
        named, field = body["user"], "user"
    if named:
        address = shared_address(named)
        return (session_name_of(named), False,
                None if address is None else SharedId(address, field), field != "user")
    # Compared as a client's copies are (`comparable`): the same opening, retyped with
    # another space, is the same chat.
    opening = [m for m in read if m.role == "user"][:1]
    return ("chat-" + history_digest(opening)[:12] if not opening else opening_name(opening[0]),
            True, None, False)


def _unfilled(value: Any) -> bool:
    """Whether an id is one a front end left unfilled (_UNFILLED), which every chat sends
    alike: each chat is then known by its history, as one that sends no id."""
    return isinstance(value, str) and (not value.strip()
                                       or _UNFILLED.fullmatch(value.strip()) is not None)


def fingerprint_with_system_prompt(read: Sequence[Said]) -> str:
    """The name chatmem gave a conversation no id names until 541a179: a digest of its
    first system message and first user message, roles and text exactly as sent. Its
    sessions are continued after an upgrade (`session_of_opening`), not begun again."""
    from chatmem.app.client_history import json_digest

    opening = [m for m in read if m.role == "system"][:1] + [
        m for m in read if m.role == "user"][:1]
    return "chat-" + json_digest([(m.role, m.content) for m in opening])[:12]
