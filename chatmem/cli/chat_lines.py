"""What `chatmem chat` and `chatmem ask` (cli/chat.py) say on stderr around their turns:
once the session is open, of a piped standard input attached, and on finishing."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from chatmem.app.workspace import Workspace
    from chatmem.attachments import Attachment
    from chatmem.engine import Engine
    from chatmem.store import Store


def _one_line(err: "Console") -> bool:
    """A line stays one line off a screen (a pipe, a file: scripts read it); on a screen
    Rich wraps it between words, where the terminal would fold it at its edge, mid-word."""
    from chatmem.render.terminal import on_screen

    return not on_screen(err)


def say_opened(ws: "Workspace", engine: "Engine[Store]", err: "Console", *,
               lookalikes: bool = True) -> None:
    """What chat and ask say once their session is open: a role row security does not
    bind, what opening it did, and (`lookalikes`) a name that reads as another's."""
    _warn_if_unguarded(ws, err)
    _print_notices(engine, err)
    if lookalikes:
        _note_lookalikes(ws, engine, err)


def say_stdin_attached(attachments: "list[Attachment]", err: "Console") -> None:
    """A pipe meant for the question cannot be told from one shared with a `while read`
    loop (whose next lines would go too): say what goes, and how not to. Said once the
    session is open, so a refusal before it stays the one line it is."""
    from chatmem.attachments import STDIN
    from chatmem.render.counts import counted

    piped = next((a for a in attachments if a.name == STDIN), None)
    if piped is not None:
        what = ("an image" if piped.image is not None
                else counted(len(piped.text.splitlines()), "line"))
        err.print(f"attached standard input ({what});"
                  " --no-stdin leaves it unread", markup=False, soft_wrap=_one_line(err))


def finish_and_say(engine: "Engine[Store]", err: "Console") -> None:
    """Finish the engine the chat ended on (it stops embedding earlier messages after the
    batch at hand) and say what is left."""
    from chatmem.render import notice_line
    from chatmem.render.indexing_notices import failure_text

    for left in engine.finish():
        name = engine.session.name
        why = f" after an error ({failure_text(left.error)})" if left.error else ""
        if left.elsewhere is not None and left.error is None:
            err.print(notice_line(
                f"{left.missing:,} messages of session {name} have no vector for {left.model}"
                f" yet: process {left.elsewhere.pid} is embedding them"), soft_wrap=_one_line(err))
            continue
        err.print(notice_line(
            f"indexing stopped{why}: {left.missing:,} messages of session {name} have no "
            f"vector for {left.model} yet and are recalled by words only; the next chat "
            f"goes on, or run `chatmem index {name}`"), soft_wrap=_one_line(err))


def _warn_if_unguarded(ws: "Workspace", err: "Console") -> None:
    """One line when row security does not bind the role chatting (chat and ask only:
    admin commands need such a role): what it writes and reads is every person's."""
    from chatmem.app.team import row_security_exemption

    exempt = row_security_exemption(ws)
    if exempt is not None:
        role, why = exempt
        err.print(f"warning: connected as {role}, {why}: row security does not bind it, so "
                  "every person's sessions are open to it; chat as your own role (chatmem "
                  "admin add-user NAME makes one)", markup=False, soft_wrap=_one_line(err))


def _print_notices(engine: "Engine[Store]", err: "Console") -> None:
    from chatmem.render import notice_line
    from chatmem.render.notices import notice_text

    for notice in engine.notices:
        err.print(notice_line(notice_text(notice)), soft_wrap=_one_line(err))


def _note_lookalikes(ws: "Workspace", engine: "Engine[Store]", err: "Console") -> None:
    """A session this command created beside one whose name reads the same (ｔｒｉｐ beside
    trip): said in one line, and the command goes on in the new one, as it was named."""
    from chatmem.app.sessions import lookalike_sessions
    from chatmem.render import notice_line

    if not engine.created:
        return
    name = engine.session.name
    existing = lookalike_sessions(ws, name)
    if existing:
        which = (f"session {existing[0]!r} exists" if len(existing) == 1 else
                 f"sessions {', '.join(map(repr, existing))} exist")
        err.print(notice_line(f"note: {which}; this creates {name!r}"), soft_wrap=_one_line(err))
