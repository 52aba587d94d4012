"""Writing a client's history into a session: what a session adopts of the history a
client sends before its new message (how much of it the session already holds, so none is
stored twice or lost), whether that history leaves the session's (an earlier
message edited), and the session such a history branches into. Compared as
client_history compares a client's copies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from chatmem.app.client_history import (
    AskedWith,
    ClientMessage,
    Said,
    as_sent,
    comparable,
    comparable_all,
    erasures_kept,
    held_as_said,
    history_digest,
    json_digest,
)

if TYPE_CHECKING:
    from chatmem.app.session_files import ImportProgress
    from chatmem.app.workspace import Workspace


def adopt_history(workspace: Workspace, name: str, prior: Sequence[ClientMessage], *,
                  progress: ImportProgress | None = None, opened: bool = False,
                  branched: Sequence[Said] = ()) -> bool:
    """Make session `name`'s history hold what a client says came before its new message
    (the client's is authoritative): what of it the session does not end with is stored
    after the session's (`stored_up_to`). Its new suffix when the session holds its start,
    or began as it does and was edited since without evidence the client may change it
    (`leaves_history`): nothing stored changed; all of it when the session holds others'
    (another front end's turn stored while the request that was to store it failed). One
    that sends less (its window) stores nothing. The session is read only when the client's
    history is longer: a request costs what it carries, whatever the session holds.

    IMPORT_BATCH messages a transaction, as an import (`progress` told after each): 400,000
    in one held the write lock 35 s. A session the caller `opened` (created) for this very
    request, holding nothing yet, gets a long history under an unfinished name that takes
    its place at the end (store.unfinished; a failure, or anything stored in it meanwhile,
    leaves it as it was): True, its engine to be opened anew. Any other gets them after its
    own (an empty one that holds facts, a prompt, a strategy's state keeps them: only its
    settings would go with a copy); a failure halfway leaves a start of them, and the
    client's next request stores the rest (what the session does not end with).

    `branched`: the history of the session the client's chat left (`branched_from`), whose
    erasures the messages it shares with the client's are stored with (`erasures_kept`)."""
    from chatmem.app.client_sessions import adopt_in_place_of
    from chatmem.app.session_files import IMPORT_BATCH
    from chatmem.store.sharing import shared_address

    store = workspace.store
    session = store.sessions.find_session(name)
    if session is None:
        return False
    prior = erasures_kept(branched, prior)
    total = held = store.history.message_count(session.id, at_most=len(prior))
    if 0 < held < len(prior):
        # Past what the session holds only if the session is the client's: another front
        # end's turn stored while a new conversation's history was written (and refused,
        # "send the request again") is not, and counting it dropped as many of the client's
        # first messages on the retry. One that begins as the client's is, edited since.
        # Its copy holds what a purge erased here since: the session's start all the same.
        held_now = store.history.messages(session.id)
        prior = erasures_kept(held_now, prior)
        stored, said = comparable_all(held_now), comparable_all(prior)
        total = stored_up_to(stored, said) or (held if stored[0] == said[0] else 0)
    new = [_stored(m) for m in prior[total:]]
    batch = IMPORT_BATCH
    if (opened and len(new) > batch and held == 0 and not shared_address(name)
            and not store.turns.turns(session.id, expanded=False)):
        adopt_in_place_of(workspace, session, new, progress, batch)
        return True
    for start in range(0, len(new), batch):
        store.history.import_messages(session.id, new[start : start + batch])
        if progress is not None:
            progress(min(start + batch, len(new)), len(new))
    return False


def _stored(message: ClientMessage) -> dict[str, str]:
    """`message` as the store takes it, with its speaker when a group chat's member said it."""
    kept = {"role": message.role, "content": message.content}
    if message.speaker:
        kept["speaker"] = message.speaker
    return kept


def stored_up_to(held: Sequence[tuple[str, str]], said: Sequence[tuple[str, str]]) -> int:
    """How many of a client's messages `said` a session holding `held` already ends with:
    the longest start of `said` that is the end of `held` (all of `held` when it is the
    client's start; a start written after another front end's turn by a request that then
    failed halfway, so the next stores no message twice; 0: the client's whole history goes
    after the session's, nothing of either lost). Knuth-Morris-Pratt: linear, a session of
    a repeated "hi" too."""
    said = said[:len(held)]
    if not said:
        return 0
    back = [0] * len(said)  # for each start of `said`, its longest proper start-end
    k = 0
    for i in range(1, len(said)):
        while k and said[i] != said[k]:
            k = back[k - 1]
        if said[i] == said[k]:
            k += 1
        back[i] = k
    k = 0
    for message in held:
        while k and (k == len(said) or message != said[k]):
            k = back[k - 1]
        if message == said[k]:
            k += 1
    return k


def leaves_history(workspace: Workspace, name: str, prior: Sequence[ClientMessage], *,
                   asked_with: AskedWith | None) -> bool:
    """Whether a client's history leaves the session's before its last exchange: an earlier
    message edited or its reply asked again (the client then sends its history up to
    there), the chat begun anew. Only on evidence that the session's history is this
    client's: this server answered its last exchange (`asked_with`; None: it did not) for
    a request whose history was all the session held before it. A client that sends what
    it sent then (only its new message, a regenerate), goes on from there, sends a window
    of the session's end or more than it holds does not leave it, nor does one whose
    history is the session's but for its last exchange (`replaces_last_turn` decides).
    Reads the session only when the history is none of those, and then no more than the
    request this server answered carried."""
    if asked_with is None:
        return False
    if asked_with.digest == history_digest(prior) or (
            len(prior) >= 2 and asked_with.digest == json_digest(comparable_all(prior)[:-2])
            and asked_with.answered_by(prior[-1])):
        return False  # unless its user edited the reply it was answered with, and went on
    store = workspace.store
    session = store.sessions.find_session(name)
    if session is None or store.history.message_count(
            session.id, at_most=asked_with.length + 3) != asked_with.length + 2:
        return False
    stored = store.history.messages(session.id)
    # As the client sent them: a value purged since is in its copy still.
    if not asked_with.held_by(stored[:-2], prior):
        return False  # another front end or another chat wrote some of it
    held, said = comparable_all(as_sent(stored, prior)), comparable_all(prior)
    if said and any(len(said) <= end and held[end - len(said):end] == said
                    for end in (len(held), len(held) - 2)):
        return False  # its window of the session's end (the last exchange asked again)
    kept = next((i for i, (a, b) in enumerate(zip(held, said, strict=False)) if a != b),
                min(len(held), len(said)))
    return kept < len(held) and not kept == len(said) == len(held) - 2


def branch_session(workspace: Workspace, name: str, prior: Sequence[ClientMessage], *,
                   progress: ImportProgress | None = None) -> str:
    """Make `name` a new session holding a client's history `prior` (`leaves_history`),
    with the strategy, parameters, model, retention and shares the session of that name
    had: the memory it built (summaries, facts, a strategy's state) is of a history the
    client left, and is not carried over. That session stays, whole, under its `kept_name`,
    returned: nothing stored is lost or changed but its name. What a purge erased from the
    history they share stays erased (`erasures_kept`). A long history is written as
    `adopt_history` writes one (`branch_in_batches`)."""
    from chatmem.app import client_sessions as made
    from chatmem.app.session_files import IMPORT_BATCH

    store = workspace.store
    sessions = store.sessions
    held = store.history.messages(sessions.session(name).id)[:len(prior)]
    said = [_stored(m) for m in erasures_kept(held, prior)]
    if len(said) > IMPORT_BATCH:
        return made.branch_in_batches(workspace, sessions.session(name), said, progress,
                                      IMPORT_BATCH)
    # One transaction: a failure halfway must not leave the chat's id naming an empty
    # session while its history sits under the kept name.
    with store.write():
        old = sessions.session(name)
        kept = made.kept_name(workspace, name)
        sessions.rename_session(name, kept)
        _, new_id = made.session_like(workspace, old, name)
        # The chat is shared as it was under its id; the kept copy keeps its shares too (who
        # could read or write that history still can).
        made.carry_over(workspace, old, new_id)
        if said:
            store.history.import_messages(new_id, said)
    return kept


def input_kept(workspace: Workspace, name: str, text: str,
               asked_with: AskedWith | None) -> str:
    """What a request that asks session `name`'s last exchange again (`replaces_last_turn`)
    sends in its place: the client's `text`, or the session's last input when that is `text`
    but for values a purge has replaced by its marker since, unless this server answered
    that exchange for a message other than `text` (`asked_with`: an edit). The client's copy
    holds those values: sent as it is, a regenerate stored the erased value again."""
    from chatmem.privacy.mentions import MARKER

    history = workspace.store.history
    session = workspace.store.sessions.find_session(name)
    if session is None:
        return text
    last = [m for m in history.messages(session.id, max(1, history.turn_count(session.id)))
            if m.role == "user"][-1:]
    if last and MARKER in last[0].content and held_as_said(
            [comparable("user", last[0].content)], [comparable("user", text)]) and (
            asked_with is None or asked_with.asked_again(text) is not False):
        return last[0].content
    return text


def earlier_input_kept(workspace: Workspace, name: str, prior: Sequence[ClientMessage],
                       text: str, left: Sequence[Said] = (), *,
                       asked_with: AskedWith | None = None) -> str:
    """What a request whose history is the start of session `name`'s, ended before its last
    exchange, sends as its turn of its own: the client's `text`, or the session's message
    after that start when that is `text` but for values a purge has replaced by its marker
    since (a regenerate of an earlier reply, taken for a new turn as nothing shows it an
    edit: this server answered it before a restart, or for another chat of a `user`). The
    client's copy holds those values: sent as it is, the purged value was stored again. A
    chat no id names begins a session of its own there: `left` is the history of the one it
    left (`branched_from`), that message after `prior` when it holds it; a named one's
    branched (`branch_session`): `name` is then the one it left, kept. `asked_with`: what
    this server last answered the session it left with (in this process), which tells a
    regenerate from an edit (`edited_at`: the words of one fitting around the marker are
    the client's); without it, one fitting around the marker is taken for a regenerate.
    Reads no more of the session than the request carries (its first turns), and only of
    one holding more than the request and an exchange."""
    at = len(prior)
    if asked_with is not None and asked_with.edited_at(prior, text):
        return text
    if len(left) == at + 1:
        return _kept_input(left, prior, text)
    history = workspace.store.history
    session = workspace.store.sessions.find_session(name)
    if session is None or history.message_count(session.id, at_most=at + 3) <= at + 2:
        return text  # the chat goes on, or asks its last exchange again (`input_kept`)
    return _kept_input(history.messages(session.id, 1, at + 1)[:at + 1], prior, text)


def _kept_input(held: Sequence[Said], prior: Sequence[ClientMessage], text: str) -> str:
    """`held`'s message after `prior` when `held` is `prior` and then `text`, but for a
    purge's markers in it; else `text`."""
    from chatmem.privacy.mentions import MARKER

    at = len(prior)
    if (len(held) == at + 1 and held[at].role == "user" and MARKER in held[at].content
            and held_as_said([comparable("user", held[at].content)],
                             [comparable("user", text)])
            and held_as_said(comparable_all(held[:at]), comparable_all(prior))):
        return held[at].content
    return text
