"""REPL commands for sessions: /new /sessions /switch /fork /undo /retry /export.

Messages are append-only: /undo and /retry never delete or replace a stored
turn; they branch with a fork instead. Switching builds the other session's
engine the way `chatmem chat SESSION` does (`Chat.open`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from chatmem import render
from chatmem.app import sessions
from chatmem.app.sessions import check_session_name, session_name_from
from chatmem.config.paths import user_path
from chatmem.errors import NotFound, TurnNotReplaceable, UsageError
from chatmem.memory.assembly import span
from chatmem.memory.spec import StrategySpec
from chatmem.render.counts import counted, listed
from chatmem.repl.blocks import trimmed
from chatmem.repl.chat import Chat, strategy_label
from chatmem.repl.table import SLASH, QuitRepl, slash
from chatmem.store.records import TurnStatus
from chatmem.text import whole_number

if TYPE_CHECKING:
    from collections.abc import Sequence

    from chatmem.attachments import Attachment
    from chatmem.store import TurnRecord


def describe(repl: Chat) -> str:
    engine = repl.engine
    turns = sessions.turn_count(repl.workspace, engine.session)
    return (f"session {repl.address} · {strategy_label(engine)}"
            f" · {counted(turns, 'turn')}")


@slash("/new", "/new SESSION",
       "start a new session with the current strategy and system prompt",
       example="/new trip-b", args=(1, 1))
def _new(repl: Chat, args: list[str]) -> None:
    name = args[0]
    check_session_name(name)
    if sessions.find_session(repl.workspace, name) is not None:
        raise UsageError(f"a session named {name!r} already exists; /switch {name} resumes it")
    current = repl.engine
    # A prompt cleared with /system "" stays cleared: None would mean the configured one.
    repl.open(name, strategy=StrategySpec.of(current.strategy),
              system=current.session.system or "")
    repl.notice(f"new {describe(repl)}")


@slash("/sessions", "/sessions", "list the sessions in this history file (* = this one)",
       example="/sessions")
def _sessions(repl: Chat, args: list[str]) -> None:
    from dataclasses import replace

    # As `chatmem sessions list` shows them, fitting a narrow terminal; the current one is
    # told by id: a session shared with the user (OWNER/NAME) may have the name of their own.
    changed_params = repl.workspace.registries.strategies.changed_params
    rows = [replace(r, params=changed_params(r.strategy, r.params or {}))
            for r in sessions.list_sessions(repl.workspace)]
    repl.show(render.sessions_table(rows, current=repl.engine.session.id,
                                    zone=repl.workspace.settings.zone))


@slash("/switch", "/switch SESSION", "resume another session, with its own strategy",
       example="/switch trip-b", args=(1, 1), completes="session")
def _switch(repl: Chat, args: list[str]) -> None:
    name = args[0]
    # Looked up first: the current session may have been deleted by another process.
    found = sessions.find_session(repl.workspace, name)
    if found is None:
        # OWNER/NAME is a share to find, never a name /new could give.
        raise NotFound(f"no session named {name!r}; /sessions lists them"
                       + ("" if "/" in name else f", /new {name} creates it"))
    if found.id == repl.engine.session.id:
        repl.notice(f"already in session {name}")
        return
    repl.open(name)
    repl.notice(f"switched to {describe(repl)}")


def _fork_and_switch(repl: Chat, name: str, at_turn: int | None) -> None:
    from chatmem.render.sessions import fork_lines

    report = sessions.fork_session(repl.workspace, repl.address, name,
                                   at_turn=at_turn)
    for line in fork_lines(report, repl.address):
        repl.notice(line)
    repl.open(name)
    repl.notice(f"switched to {describe(repl)}")


@slash("/fork", "/fork SESSION [--at-turn N]",
       "copy this session (up to turn N) into a new session and switch to it",
       example="/fork trip-b --at-turn 3", args=(1, 3))
def _fork(repl: Chat, args: list[str]) -> None:
    command = SLASH["/fork"]
    at_turn: int | None = None
    rest = list(args)
    if "--at-turn" in rest:
        i = rest.index("--at-turn")
        if i + 1 >= len(rest):
            raise command.usage_error("--at-turn needs a turn number")
        value = rest[i + 1]
        number = whole_number(value.removeprefix("-"))
        if number is None:
            raise command.usage_error(f"--at-turn must be a whole number, got {value!r}")
        at_turn = -number if value.startswith("-") else number
        del rest[i:i + 2]
    if len(rest) != 1:
        raise command.usage_error(f"unexpected argument {' '.join(rest[1:])!r}" if rest
                                  else "missing argument")
    _fork_and_switch(repl, rest[0], at_turn)


@slash("/undo", "/undo SESSION",
       "messages are append-only: fork the session before its last turn into a new session "
       "and switch to it; the original keeps every turn",
       example="/undo trip-b", args=(0, 1))
def _undo(repl: Chat, args: list[str]) -> None:
    session = repl.engine.session
    last = sessions.turn_count(repl.workspace, session)
    if last == 0:
        raise UsageError(f"nothing to undo: session {repl.address} has no messages")
    if not args:
        raise UsageError(
            f"messages are append-only, so /undo never deletes turn {last}; /undo SESSION "
            f"copies {span(range(1, last))} into a new session and switches to it "
            f"(same as /fork SESSION --at-turn {last - 1})" if last > 1 else
            "messages are append-only, so /undo never deletes turn 1; /undo SESSION starts a "
            "new session with the same settings and no messages (same as /fork SESSION "
            "--at-turn 0)"
        )
    address = repl.address
    _fork_and_switch(repl, args[0], last - 1)
    repl.notice(f"turn {last} stays in session {address}")


def _last_turn(repl: Chat, doing: str) -> TurnRecord:
    session = repl.engine.session
    record = sessions.last_turn(repl.workspace, session)
    if record is None:
        copied = sessions.turn_count(repl.workspace, session)
        if copied:
            # The toolbar counts these turns: "has no turns" read as if they were lost.
            raise UsageError(
                f"nothing to {doing} here: session {repl.address}'s {counted(copied, 'turn')}"
                " came in by a copy (/fork, /undo) or an import, and only a turn sent in this"
                " session is replaced; press Up to recall your last input and send it as a new"
                " turn instead")
        raise UsageError(f"nothing to {doing}: session {repl.address} has no turns")
    if record.id != repl.seen_last_turn:
        # Another chat's turn (a REPL, serve, MCP's record_turn) is not this one's to replace.
        raise TurnNotReplaceable.not_yours(record.turn)
    return record


def _check_replaceable(repl: Chat) -> None:
    """Refuse now what replacing the last turn would refuse (a summary or a fact already
    drawn from it), before a notice says it is under way or an editor opens."""
    sessions.check_replaceable(repl.workspace, repl.engine.session,
                               repl.replacing or repl.seen_last_turn)


def _files_again(repl: Chat, record: TurnRecord) -> tuple[Sequence[Attachment], str]:
    """The files `record` sent, to send with it again, and the words naming them for the
    notice (" with inv.txt"); a file attached since under the same path goes in its place.
    An image whose bytes are gone is said in a line of its own."""
    from chatmem.engine.resend import sent_files

    files = sent_files(repl.engine.store, record)
    for name in files.lost:
        repl.notice(f"{name}: its image is no longer stored, so it is not sent again "
                    "(/attach it, then /retry, to send it)")
    if files.unread:
        repl.notice(f"{counted(files.unread, 'attached file')} of turn {record.turn} cannot be "
                    "read back from what it stored; not sent again (/attach it, then /retry)")
    pending = {_where(a.name) for a in repl.attached}
    again = [a for a in files.attachments if _where(a.name) not in pending]
    return again, (f" with {listed([a.name for a in again])}" if again else "")


def _where(name: str) -> Path:
    return user_path(name).resolve()


@slash("/retry", "/retry",
       "send the last input again, with its files: a failed or cancelled turn is retried, a "
       "completed one regenerated in its place (the old reply stays stored, out of memory; "
       "inspect shows it); not once memory holds it (a summary or a fact from it): /fork asks "
       "again on a branch",
       example="/retry")
def _retry(repl: Chat, args: list[str]) -> None:
    record = _last_turn(repl, "retry")
    if record.status == TurnStatus.OK:
        _check_replaceable(repl)
        files, named = _files_again(repl, record)
        repl.notice(f"regenerating turn {record.turn}{named}; it stays stored, out of memory")
        repl.turn(None, files, replace_last=True)
        return
    if repl.replacing is not None:
        _check_replaceable(repl)
    why = f": {record.error}" if record.error else ""
    files, named = _files_again(repl, record)
    repl.notice(f"retrying turn {record.turn}{named} ({record.status}{why})")
    # A failed regenerate or edit is retried in place of the turn it was to replace.
    repl.turn(record.input, files, replace_last=repl.replacing is not None)


@slash("/edit-last", "/edit-last [TEXT]",
       "edit the last input (or replace it by TEXT) and send it in place of the last turn, "
       "which stays stored, out of memory; not once memory holds it (as /retry)",
       example="/edit-last what about Hangzhou in May?", args=(0, None))
def _edit_last(repl: Chat, args: list[str]) -> None:
    record = _last_turn(repl, "edit")
    if record.status == TurnStatus.OK or repl.replacing is not None:
        _check_replaceable(repl)
    try:
        text = repl.raw_args.strip() if args else trimmed(repl.edit_line(record.input))
    except (KeyboardInterrupt, EOFError) as e:
        # Ctrl-C said only "(interrupted)"; Ctrl-D on the emptied line left the chat with
        # "aborted" and exit 1. Ctrl-D leaves, as at the prompt, once this is said.
        repl.notice(f"edit cancelled: turn {record.turn} stays as it was; nothing was sent")
        if isinstance(e, EOFError):
            raise QuitRepl from None
        return
    if not text:
        raise UsageError("/edit-last: the edited input is empty; nothing was sent")
    if not args and text.lstrip().startswith("/"):
        # A line typed at the prompt means what it means at any prompt: a command runs,
        # and the last turn stays as it was.
        repl.command(text.lstrip())
        return
    files, named = _files_again(repl, record)
    if named:
        repl.notice(f"sending the edit of turn {record.turn}{named}")
    if record.status != TurnStatus.OK and repl.replacing is None:
        # A failed or cancelled turn is not in memory: nothing to replace.
        repl.turn(text, files)
        return
    # A completed turn, or the one a failed regenerate or edit was to replace.
    repl.turn(text, files, replace_last=True)


@slash("/export", "/export [FILE] [--force]",
       "write this session to FILE in the format its extension names: .jsonl (imports back), "
       ".json or .md; default SESSION.jsonl here; --force overwrites",
       example="/export trip.md", args=(0, 2), completes="path")
def _export(repl: Chat, args: list[str]) -> None:
    from chatmem.app.session_export import export_session
    from chatmem.render.sessions import files_left_out_line

    force = "--force" in args
    files = [a for a in args if a != "--force"]
    if len(files) > 1 or len(args) - len(files) > 1:
        raise SLASH["/export"].usage_error(f"unexpected argument {' '.join(files[1:])!r}")
    session = repl.engine.session
    path = (user_path(files[0]) if files
            else Path(f"{session_name_from(repl.address)}.jsonl"))
    done = export_session(repl.workspace, session, path, force=force)
    plain = "; the file is not encrypted" if done.unencrypted_copy else ""
    repl.notice(f"exported {counted(done.messages, 'message')} of session "
                f"{repl.address} to {path} ({done.format}){plain}")
    if line := files_left_out_line(done.files_left_out):
        repl.notice(line)
