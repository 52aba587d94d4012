"""How the history's own notices are worded (chatmem.history_notices): a file moved, an
upgrade run or awaited, a write lock held, retention applied. chatmem.render.notices words
every notice and hands these here; none of them has REPL-only advice.
"""

from __future__ import annotations

from functools import singledispatch

from chatmem.history_notices import (
    HistoryMoved,
    HistoryUpgrading,
    HistoryWritableByOthers,
    OldHistoryLeft,
    RestoredPastRetention,
    RetentionApplied,
    RetentionSkipped,
    TaughtFacts,
    WaitingForUpgrade,
    WaitingForWrite,
)
from chatmem.render.counts import counted, listed

HistoryNotice = (HistoryMoved | OldHistoryLeft | HistoryUpgrading | WaitingForUpgrade
                 | WaitingForWrite | RetentionApplied | RetentionSkipped
                 | HistoryWritableByOthers)


def history_notice_text(notice: HistoryNotice) -> str:
    """One line for `notice`, as the user reads it."""
    return _said(notice)


@singledispatch
def _said(notice: object) -> str:
    raise TypeError(f"no wording for {type(notice).__name__}")


@_said.register
def _(n: HistoryMoved) -> str:
    return f"moved the history file from {n.old} to {n.new} (the platform's data directory)"


@_said.register
def _(n: OldHistoryLeft) -> str:
    return (f"an older chatmem's history is still at {n.old} and is not read (this one is "
            f"{n.new}): `chatmem sessions copy --from {n.old} --to {n.new}` brings its "
            "sessions here; then remove it")


@_said.register
def _(n: HistoryWritableByOthers) -> str:
    if n.owner is not None:
        return (f"warning: the history file {n.path} belongs to another account (uid"
                f" {n.owner}), who can read every message in it and slip messages or system"
                f" prompts into your chats ({n.fix})")
    how = (f"other users can write the history file {n.path} (mode {n.mode:04o})"
           if n.mode is not None else f"history file {n.path}: {n.problem}")
    return (f"warning: {how}; they could slip messages or system prompts into your chats"
            f" ({n.fix})")


def migrations_text(n: HistoryUpgrading) -> str:
    return n.first if n.count == 1 else f"{n.first}–{n.last}, {n.count} steps"


@_said.register
def _(n: HistoryUpgrading) -> str:
    return f"upgrading history {n.location} ({migrations_text(n)}) …"


@_said.register
def _(n: WaitingForUpgrade) -> str:
    return (f"waiting for another chatmem holding history {n.location} alone (an upgrade,"
            f" encrypt or rekey; at most {n.seconds} s) …")


@_said.register
def _(n: WaitingForWrite) -> str:
    keep = ("the reply waits to be stored; Ctrl-C gives it up" if n.replied
            else "the input waits to be sent; Ctrl-C gives it up")
    return (f"waiting for another process's write to history {n.location} to end"
            f" ({_held_by(n)}at most {n.seconds} s): {keep} …")


def _held_by(n: WaitingForWrite) -> str:
    """`held by pid 4242, role eve, psql; `: whom to ask, or what an administrator ends."""
    return "" if n.holder is None else f"held by {n.holder.about}; "


@_said.register
def _(n: RetentionApplied) -> str:
    return retention_applied_text(n, "session")


def retention_applied_text(n: RetentionApplied, noun: str) -> str:
    parts = []
    if n.sessions:
        parts.append(f"{counted(len(n.sessions), noun)} ({counted(n.messages, 'message')})")
    if n.facts:
        parts.append(counted(n.facts, "fact"))
    names = f" ({listed(n.sessions)})" if n.sessions else ""
    done = ("the file was vacuumed" if n.vacuumed
            else "the server frees their space at its next vacuum")
    taught = "".join(f"; {taught_text(t)}" for t in n.taught)
    return (f"retention: erased {' and '.join(parts)} past their retention{names}; {done}"
            f"{taught}")


def taught_text(taught: TaughtFacts, *, dry_run: bool = False) -> str:
    """`2 facts session old taught the profile of user default stay (name, city): …`."""
    keys = taught.keys
    stay = "would stay" if dry_run else "stay" if len(keys) > 1 else "stays"
    return (f"{counted(len(keys), 'fact')} session {taught.session} taught the profile of user"
            f" {taught.user} {stay} ({', '.join(keys)}): `chatmem facts forget KEY --purge`"
            " erases one")


def restored_past_retention_text(n: RestoredPastRetention) -> str:
    """What an import says of the sessions it restored already past their retention, and how
    to keep them before the next chat (in another session) or prune erases them."""
    from chatmem.render.sessions import days_text

    each = [f"{s.name} (idle {days_text(s.idle_days, measured=True)}, retention"
            f" {days_text(s.keep_days)})" for s in n.sessions]
    if len(n.sessions) == 1:
        return (f"session {each[0]} is past its retention already: a chat started in another"
                " session, or `chatmem sessions prune`, erases it; `chatmem sessions retention"
                f" {n.sessions[0].name} forever` keeps it")
    return (f"{counted(len(n.sessions), 'session')} are past their retention already:"
            f" {', '.join(each)}; a chat started in another session, or `chatmem sessions"
            " prune`, erases them; `chatmem sessions retention NAME forever` keeps one"
            " (`chatmem sessions prune --dry-run` lists what a prune erases)")


@_said.register
def _(n: RetentionSkipped) -> str:
    return f"retention not applied this time: {n.reason}"
