"""Which session a chat no id names goes on, known by how it began (its opening's name,
`NAME`, `NAME-2`…): the one whose history is the client's, one it regenerates or whose cut
off reply it kept, else a new one; and the branch an edit of the chat leaves. Matched as
client_history compares a client's copies."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from enum import Enum
from itertools import count
from typing import TYPE_CHECKING

from chatmem.app.client_history import ClientMessage, held_as_said
from chatmem.app.compared_text import Said, comparable, comparable_all, copy_of_reply
from chatmem.errors import NotFound

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace


def branched_from(workspace: Workspace, first: str, prior: Sequence[ClientMessage], *,
                  named_before: str | None = None) -> tuple[str | None, list[Said]]:
    """The name and history (up to `prior`'s length) of the session a chat no id names began alike
    with (`first`, `first-2`…, then `named_before`'s, as `session_of_opening` looks) whose
    start is the longest of the client's `prior` (`held_as_said`): the one an edit of the
    chat leaves, whose erasures its new session keeps (`erasures_kept`), and its message
    after all of `prior` (a regenerate's: `earlier_input_kept`). Read only for a chat's new
    session, which stores all of `prior` anyway."""
    said = comparable_all(prior)
    best: list[Said] = []
    longest = 0
    name: str | None = None
    looked: list[tuple[str, int]] = []
    for stem in dict.fromkeys([first, named_before or first]):
        numbered = workspace.store.sessions.numbered(stem, at_most=0)
        looked += [(name, numbered[name][0]) for name in _in_order(stem, numbered)]
    # Every branch's start in one read, as their names: one each grew with the edits.
    histories = workspace.store.history.messages_of([i for _, i in looked], len(prior) + 1)
    for session_name, session_id in looked:
        held = histories.get(session_id, [])[:len(prior) + 1]
        start = next((i for i, pair in enumerate(zip(comparable_all(held), said,
                                                     strict=False))
                      if not held_as_said([pair[0]], [pair[1]])), min(len(held), len(said)))
        # All of `prior` held (none: its first message, the opening it was named by),
        # the message after it too.
        if start > longest or (start == longest == len(prior) and len(held) > len(best)):
            best, longest = list(held[:start + (start == len(prior))]), start
            name = session_name
    return name, best


def session_of_opening(workspace: Workspace, first: str, prior: Sequence[ClientMessage],
                       text: str, *, taken: Collection[str] = (),
                       named_before: str | None = None) -> tuple[str, bool]:
    """The session of a conversation no id names, known by how it began (`first`, the name
    its opening gives): of `first`, `first-2`, `first-3`…, then of `named_before` (the name
    an older chatmem gave that opening), the one whose history is the client's `prior`,
    else one holding `prior` but its last exchange, a reply cut off (its last request,
    cancelled or failed, asked it: the client kept what came), else one whose history is
    `prior` and then `text` asked again (a regenerate), else the first free name not
    `taken`; and whether it is that new one. Such a client sends its whole history every
    time, so a chat that merely began alike (two chats opened with 你好) is a session of its
    own, and one never sees another's messages; an edit of an earlier message is a new one
    too. A chat that goes on wins over one asked again: two chats alike so far cannot be
    told apart, and a regenerate taken for the other's next turn adds a turn, where the
    other way round one chat's turn would replace another's."""
    store = workspace.store
    asked_again: str | None = None
    cut_off: str | None = None
    free: str | None = None
    for stem in dict.fromkeys([first, named_before or first]):
        # All names and lengths in one read (one a name grew with a chat's edits), those
        # past a deleted name too (their chats began again, their memory left behind).
        numbered = store.sessions.numbered(stem, at_most=len(prior) + 3)
        looked = [(name, *numbered[name]) for name in _in_order(stem, numbered)
                  if name not in taken]
        free = free or next(name for n in count(1)
                            for name in [stem if n == 1 else f"{stem}-{n}"]
                            if name not in taken and name not in numbered)
        # The last two turns of all as long as `prior` (or with an exchange, or without
        # the one cut off) in one read.
        fits = (len(prior), len(prior) + 2, len(prior) - 2)
        tails = store.history.last_turns_of(
            [i for _, i, held in looked if held in fits], 2) if prior else {}
        for name, session_id, held in looked:
            if not prior:
                # A session whose history is still empty (its first reply was cut off, so
                # nothing but a cancelled turn's record was kept) is this chat's, sent
                # again: not another chat that began alike, which would leave it empty
                # for good and go on in `-2`.
                match = _Match.GOES_ON if held == 0 else _Match.NONE
            elif held not in fits:
                match = _Match.NONE
            elif held == len(prior) - 2:
                # Its last reply cut off (a stop button) and kept by the client, which
                # went on: the chat's own when the session's last request was that one
                # (read only for a session whose history matches). A chat that goes on
                # as sent wins over it; it wins over one asked again.
                if cut_off is None and _continues(
                        tails.get(session_id, []), prior[:held], text, held=held
                        ) is _Match.GOES_ON and _cut_off_as_sent(
                            workspace, session_id, prior[held], prior[held + 1]):
                    cut_off = name
                continue
            else:
                match = _continues(tails.get(session_id, []), prior, text, held=held)
            if match is _Match.GOES_ON:
                return name, False
            if match is _Match.ASKED_AGAIN and asked_again is None:
                asked_again = name
    assert free is not None
    went_on = cut_off or asked_again
    return (free, True) if went_on is None else (went_on, False)


def _cut_off_as_sent(workspace: Workspace, session_id: int, asked: ClientMessage,
                     kept: ClientMessage) -> bool:
    """Whether a session's last request, its reply never whole (cancelled, failed), asked
    what the client's `asked` says and was given the reply it `kept` as far as either went:
    that exchange, not one of another chat alike so far stopped at the same question."""
    from chatmem.store.records import TurnStatus

    try:
        last = workspace.store.turns.turn(session_id, expanded=False)
    except NotFound:
        return False
    return (last.status != TurnStatus.OK and (asked.role, kept.role) == ("user", "assistant")
            and held_as_said([comparable("user", last.input)],
                             [comparable("user", asked.content)])
            and (not last.reply or kept.content.strip() in last.reply  # stopped mid-<think>
                 or copy_of_reply(comparable("assistant", kept.content)[1],
                                  comparable("assistant", last.reply)[1])))


def _in_order(stem: str, numbered: Collection[str]) -> list[str]:
    """The names of `numbered` (`stem`, `stem-2`…: sessions.numbered) in their numbers'."""
    return sorted(numbered, key=lambda name: 1 if name == stem else int(name[len(stem) + 1:]))


class _Match(Enum):
    """How a session's history matches a client's: not, as its history (the chat goes on),
    or as its history with its new message asked and answered (a regenerate)."""

    NONE = "none"
    GOES_ON = "goes on"
    ASKED_AGAIN = "asked again"


def _continues(last_turns: Sequence[Said], prior: Sequence[ClientMessage], text: str, *,
               held: int) -> _Match:
    """Whether a session's history (`held` messages, counted no further than `prior`'s
    length and three; `last_turns`: the messages of its last two turns) is `prior`, or
    `prior` then `text` and a reply: its length, and its last two turns, which the client's
    history must end with (the opening they share already, by its name), compared as
    `comparable` words (a client that trimmed a reply goes on)."""
    if held not in (len(prior), len(prior) + 2):
        return _Match.NONE

    tail = comparable_all(last_turns)
    if held == len(prior) + 2:
        if not held_as_said(tail[-2:-1], [comparable("user", text)]):
            return _Match.NONE
        tail = tail[:-2]
    said = comparable_all(prior)
    if tail and not held_as_said(tail, said[len(said) - len(tail):]):
        return _Match.NONE
    return _Match.GOES_ON if held == len(prior) else _Match.ASKED_AGAIN
