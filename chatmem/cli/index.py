"""`chatmem index [SESSION]`: embed the messages that have no vector yet, with a progress bar."""

from typing import Annotated

import typer

from chatmem.cli.completion import more_sessions
from chatmem.cli.opening import open_workspace, settings_from
from chatmem.cli.options import ConfigOption, DbOption, JsonOption
from chatmem.cli.output import consoles, handles_errors, print_json


@handles_errors
def index(
    sessions: Annotated[
        list[str] | None, typer.Argument(
            help="Session names, embedded in that order (default: every session).",
            show_default=False, autocompletion=more_sessions, metavar="SESSION...")
    ] = None,
    json_out: JsonOption = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Embed stored messages so `retrieval` can recall them by meaning (new turns: as you chat).

    \b
    Example: chatmem index support
    """
    from chatmem.app.indexing import index_sessions, pending_vectors
    from chatmem.render import notice_line
    from chatmem.render.notices import notice_text
    from chatmem.render.progress import task_progress

    settings = settings_from(config, db, None, None)
    out, err = consoles()
    with open_workspace(settings, create=False) as ws:
        pending = pending_vectors(ws, sessions)
        model = pending.model
        if pending.resized is not None:
            err.print(notice_line(notice_text(pending.resized)), soft_wrap=True)
        with task_progress(err, f"embedding with {model}", pending.total) as bar:
            report = index_sessions(ws, pending, progress=bar.update)
    done, seconds, rate, held_elsewhere = (report.embedded, report.seconds, report.per_second,
                                           report.elsewhere)
    if json_out:
        print_json({"session": sessions[0] if sessions and len(sessions) == 1 else None,
                    "sessions": sessions or [], "model": model, "embedded": done,
                    "seconds": round(seconds, 3), "per_second": round(rate, 1),
                    "elsewhere": [{"session": name, "pid": lease.holder.pid,
                                   "host": lease.holder.host}
                                  for name, lease in held_elsewhere]})
        return
    where = (f"session {sessions[0]}" if sessions and len(sessions) == 1
             else f"sessions {', '.join(sessions)}" if sessions else "every session")
    for name, lease in held_elsewhere:
        out.print(f"session {name}: left to process {lease.holder.pid} on {lease.holder.host},"
                  " which is embedding it", soft_wrap=True)
    if held_elsewhere and not done:
        return
    if not done:
        out.print(f"{where}: every message already has a vector for {model}", soft_wrap=True)
    else:
        out.print(f"{where}: embedded {done:,} messages with {model} in {seconds:.1f} s"
                  f" ({rate:.1f}/s)", soft_wrap=True)
