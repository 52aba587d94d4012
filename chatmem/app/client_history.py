"""A client's copy of a conversation (another program's, sending its whole history each
time), matched to the session that stores it: whether a request replaces the last turn
(which session a chat no id names goes on is chat_openings', what a session adopts of
the history adopted_history's). Messages are compared as clients change them when they
show and send a reply back (whitespace around it or inside it, the reasoning block a model
wrote), so a chat that goes on is found again, and a regenerate is one, whatever the
client trimmed."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from chatmem.app.compared_text import (
    Said,
    comparable,
    comparable_all,
    copy_of_reply,
    grantee_label,
    history_digest,
    json_digest,
    unlabelled_all,
)
from chatmem.privacy.mentions import MARKER
from chatmem.speakers import unlabelled

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.store.protocols import HistoryRepository


def held_as_said(held: Sequence[tuple[str, str]], said: Sequence[tuple[str, str]]) -> bool:
    """Whether stored messages (`held`) are a client's (`said`), each in turn, compared as
    `comparable` gives them: the same, or the same but for values a purge has replaced by
    its marker since. The client keeps its copy and sends the value with each request: as
    a mismatch, its chat was taken for another that began alike, and its whole history,
    the purged value in it, stored again in a new session."""
    # Equal is compared in C first: a call a message made a 2,000-message history 5 ms a
    # request, where most hold no marker.
    return held == said or (len(held) == len(said) and all(map(purged_from, held, said)))


def purged_from(held: tuple[str, str], said: tuple[str, str]) -> bool:
    """`said` is `held` with some text (one character at least) in place of each marker."""
    if held == said:
        return True
    if held[0] != said[0] or MARKER not in held[1]:
        return False
    first, *pieces, last = held[1].split(MARKER)
    text = said[1]
    if not text.startswith(first):
        return False
    # Each piece found as early as it can be leaves the most room for the rest: a look
    # from left to right, never a pattern that could try every split of a client's text.
    at = len(first)
    for piece in pieces:
        found = text.find(piece, at + 1)
        if found < 0:
            return False
        at = found + len(piece)
    return len(text) - len(last) > at and text.endswith(last)


def erasures_kept(held: Sequence[Said], prior: Sequence[ClientMessage]) -> list[ClientMessage]:
    """A client's `prior` as the session it goes on or branched from (holding `held`) keeps
    it: each message of their common start that `held` holds with a purge's marker in place
    of a value (`held_as_said`) as held, the value left out. The client keeps its copy and
    sends the value with each request: stored as sent, an edit after a purge undid it."""
    kept = list(prior)
    for at in _erased_at(held, prior):
        kept[at] = ClientMessage(prior[at].role, held[at].content, prior[at].speaker)
    return kept


def as_sent(held: Sequence[Said], prior: Sequence[ClientMessage]) -> list[Said]:
    """A session's messages `held` as the client whose copy is `prior` sent them: each of
    their common start a purge's marker stands in as the client's (`erasures_kept` the
    other way), so its digest is the one a request sending them had (`AskedWith`)."""
    sent: list[Said] = list(held)
    for at in _erased_at(held, prior):
        sent[at] = prior[at]
    return sent


def _erased_at(held: Sequence[Said], prior: Sequence[Said]) -> list[int]:
    """Where, in the start `held` and `prior` share (`held_as_said`), the two differ."""
    erased = []
    for at, (stored, said) in enumerate(zip(held, prior, strict=False)):
        was, now = comparable(stored.role, stored.content), comparable(said.role, said.content)
        if was != now:
            if not purged_from(was, now):
                break
            erased.append(at)
    return erased


@dataclass(frozen=True)
class AskedWith:
    """What a server keeps of the history a request it answered sent: its `history_digest`
    and how many messages it held."""

    digest: str
    length: int
    each: bytes = b""
    """A short digest of each message, one after another (`_EACH` bytes each): what shows
    the session's messages are the ones it sent where a purge has since changed some the
    client no longer sends (it edited an earlier one), so the whole `digest` cannot match."""
    asked: bytes = b""
    """A short digest of the request's new message: a regenerate sends it again, an edit
    another, which a purge's marker in the stored one cannot tell apart (`input_kept`)."""
    replied: str | None = None
    """The reply it was answered with, in the compared form: a client whose user edited it,
    then went on, sends other words (`answered_by`)."""

    @classmethod
    def of(cls, prior: Sequence[Said], text: str | None = None,
           reply: str | None = None) -> AskedWith:
        said = comparable_all(prior)
        return cls(history_digest(prior), len(prior), b"".join(map(_message_digest, said)),
                   b"" if text is None else _message_digest(comparable("user", text)),
                   None if reply is None else comparable("assistant", reply)[1])

    @property
    def held_bytes(self) -> int:
        """About what it holds in memory: its digests and the reply's text, which grow with
        the history and the reply (a server keeps one for each of thousands of chats)."""
        return (len(self.digest) + len(self.each) + len(self.asked)
                + (0 if self.replied is None else sys.getsizeof(self.replied)))

    def answered_by(self, message: Said) -> bool:
        """Whether `message`, a client's copy of its reply, is the reply it was answered
        with, added to or trimmed (`copy_of_reply`; True when that was not kept)."""
        return self.replied is None or (message.role == "assistant" and copy_of_reply(
            comparable("assistant", message.content)[1], self.replied))

    def asked_again(self, text: str) -> bool | None:
        """Whether `text` is the message the request asked (None: not kept)."""
        return self.asked == _message_digest(comparable("user", text)) if self.asked else None

    def said_at(self, at: int, text: str) -> bool:
        """Whether this history held `text` as its message `at` (a user's)."""
        return self.each[at * _EACH:(at + 1) * _EACH] == _message_digest(comparable("user", text))

    def edited_at(self, prior: Sequence[Said], text: str) -> bool:
        """Whether this history began as `prior` and then held a message other than `text`
        (a user's): the client edited the one this server answered. False when it held less,
        or began otherwise (another chat's): no evidence."""
        at = len(prior)
        return (len(self.each) > at * _EACH
                and self.each[:at * _EACH] == b"".join(map(_message_digest,
                                                           comparable_all(prior)))
                and not self.said_at(at, text))

    def held_by(self, held: Sequence[Said], prior: Sequence[ClientMessage]) -> bool:
        """Whether a session's messages `held` are this history, but for values a purge has
        replaced by its marker since: the client's copy `prior` still holds those it sends
        again (`as_sent`), and a message it no longer sends is its own when the marker is in
        it (its other messages are the same, each)."""
        sent = as_sent(held, prior)
        if json_digest(comparable_all(sent)) == self.digest:
            return True
        return len(sent) == self.length and len(self.each) == _EACH * self.length and all(
            self.each[at * _EACH:(at + 1) * _EACH] == _message_digest(message)
            or (at >= len(prior) and MARKER in message[1])
            for at, message in enumerate(comparable_all(sent)))


_EACH = 8


def _message_digest(message: tuple[str, str]) -> bytes:
    # Kept in this process only (AskedWith): no JSON each, which was half of AskedWith.of.
    role, text = message
    return hashlib.blake2b(f"{len(role)}:{role}{text}".encode("utf-8", "surrogatepass"),
                           digest_size=_EACH).digest()


@dataclass(frozen=True)
class ClientMessage:
    """A message as another program's client sent it (its role and text, and in a group chat
    its speaker: its `name`, whose label `content` opens with)."""

    role: str
    content: str
    speaker: str | None = field(default=None, compare=False)
    """Kept with the message when stored (steps.keep_speakers): the label in its text is
    anyone's to type."""


class Replacing(Enum):
    """What a request whose history is a session's but for its last exchange does with that
    exchange."""

    NO = "no"
    """Its history is not that: the chat goes on (or the session's history is another)."""
    YES = "yes"
    """A regenerate, or an edit of the last message by the client that asked it."""
    UNPROVEN = "unproven"
    """An edit, or a message of another chat that shares the conversation's id: nothing
    shows the exchange is this client's, so it stays and the request is a turn of its own."""


def replaces_last_turn(workspace: Workspace, name: str, prior: Sequence[ClientMessage],
                       text: str, *, asked_with: AskedWith | None) -> Replacing:
    """Whether a client's request asks the session's last exchange again: the history it
    sends is the session's but for that exchange (compared as `comparable` words), and it
    either asks that exchange's question again (a regenerate, after a restart too; the
    first reply's too, its history then none) or this server answered that exchange for a
    request whose history was this one (`asked_with`; None: this server did not answer
    it): an edit of the last message. A message of another chat that shares the id (one
    whose history was another when it asked) or of another front end (the REPL, MCP's
    record_turn) is never taken for an edit: that exchange stays (`UNPROVEN`); nor is the
    second message of a client that sends only its new one (its history always none). The
    client's history is authoritative: the reply it dropped leaves memory, as /retry's
    does. Reads no more of the session than the request carries."""

    store = workspace.store
    session = store.sessions.find_session(name)
    if session is None:
        return Replacing.NO
    held = store.history.message_count(session.id, at_most=len(prior) + 3)
    if held < len(prior) + 2 or (held > len(prior) + 2 and not prior):
        return Replacing.NO
    # More held than the history carries: a client that trims its history (its window of
    # the session's end) regenerates or edits the last reply as a whole one does.
    stored: Sequence[Said] = (store.history.messages(session.id) if held == len(prior) + 2
                              else newest_said(store.history, session.id, len(prior) + 2))
    said: Sequence[Said] = prior
    if (member := grantee_label(store, session.id)) is not None:
        # His words are stored as `bob: …` (Engine.turn), which his client never sent.
        stored, said = unlabelled_all(stored, member), unlabelled_all(prior, member)
        text = unlabelled(text, member)
    if (len(stored) != len(prior) + 2
            or not held_as_said(comparable_all(stored[:len(prior)]), comparable_all(said))
            or [m.role for m in stored[len(prior):]] != ["user", "assistant"]):
        return Replacing.NO
    if purged_from(comparable("user", stored[len(prior)].content), comparable("user", text)):
        return Replacing.YES
    if not prior:
        # One that sends only its new message leaves the history to chatmem: another
        # message is its next turn, not an edit of its first.
        return Replacing.NO
    asked_this = asked_with is not None and asked_with.digest == history_digest(prior)
    return Replacing.YES if asked_this else Replacing.UNPROVEN


def session_of_shared_id(workspace: Workspace, address: str, made: str) -> str | None:
    """The session a client's id of the form `OWNER/NAME` names (`address`), as the CLI
    takes it: the one OWNER shares with the user, when row security shows it. A session of
    the user's own made from that very id (`made`: `session_name_of` of it) before such ids
    named shares is kept first: its conversation goes on there, and its history is never
    written into another's session. None: neither is there."""
    found = workspace.store.sessions
    if found.find_session(made) is not None:
        return made
    return address if found.find_session(address) is not None else None


def newest_said(history: HistoryRepository, session_id: int, n: int) -> Sequence[Said]:
    """A session's newest `n` messages (fewer when it holds fewer), read turns back."""
    # Each turn holds a message or more: as many turns back as `n` reach far enough (fewer
    # when turn numbers have gaps: then fewer are read, and nothing is taken for a match).
    first = max(1, history.turn_count(session_id) - n)
    return history.messages(session_id, first)[-n:] if n else []
