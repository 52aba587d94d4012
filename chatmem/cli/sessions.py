"""`chatmem sessions list|show|rename|reset-state|fork|delete|export|import`; export and
import are in session_files."""

from typing import Annotated

import typer

from chatmem.cli.completion import session_names
from chatmem.cli.grammar import ChatmemTyper
from chatmem.cli.opening import open_workspace, registries, settings_from
from chatmem.cli.options import ConfigOption, DbOption, JsonOption, YesOption
from chatmem.cli.output import confirm_erasure, consoles, handles_errors, print_json
from chatmem.cli.session_files import export, import_

app = ChatmemTyper(help="List, show, rename, fork, delete, export and import sessions.\n\n"
                         "\b\nExample: chatmem sessions show trip --turns 1-10",
                 no_args_is_help=True)
SHOW_LAST = 50
"""Turns `sessions show` prints when none are asked for: the newest page, read alone."""
PRINTED_AT_ONCE = 500
"""Messages `sessions show` lays out per print."""
NameArgument = Annotated[str, typer.Argument(metavar="SESSION", help="Session name.",
                                             autocompletion=session_names)]


@app.command("list")
@handles_errors
def list_(db: DbOption = None, config: ConfigOption = None, json_out: JsonOption = False) -> None:
    """List sessions, most recent first.

    \b
    Example: chatmem sessions list --json
    """
    from dataclasses import replace

    from chatmem import render
    from chatmem.app.sessions import list_sessions
    from chatmem.render.payloads import session_summary_json

    with open_workspace(settings_from(config, db), create=False) as ws:
        rows = list_sessions(ws)
        zone = ws.settings.zone
    if json_out:
        print_json([session_summary_json(row) for row in rows])
        return
    if not rows:
        # Said, not listed (as `logs` does): `chatmem sessions list | wc -l` counts sessions.
        consoles()[1].print(render.sessions_table(rows), soft_wrap=True)
        return
    # Defaults are what `chatmem strategies` lists; a row shows what was chosen.
    changed_params = registries().strategies.changed_params
    consoles()[0].print(render.sessions_table(
        [replace(row, params=changed_params(row.strategy, row.params or {})) for row in rows],
        zone=zone))


@app.command("show")
@handles_errors
def show(
    name: NameArgument,
    turns: Annotated[
        str | None, typer.Option("--turns", metavar="FIRST-LAST", show_default=False,
                                 help="Show these turns only, e.g. 1-40 or 120- "
                                      f"(default: the last {SHOW_LAST}).")
    ] = None,
    all_turns: Annotated[bool, typer.Option("--all", help="Show every turn.")] = False,
    db: DbOption = None, config: ConfigOption = None,
    json_out: JsonOption = False,
) -> None:
    """Show a session's settings and messages, a page of turns at a time.

    \b
    Example: chatmem sessions show support --turns 1-20
    """
    from chatmem import render
    from chatmem.app.sessions import TurnRange, show_session
    from chatmem.render.payloads import sharing_json, strategy_json
    from chatmem.render.sessions import days_text, sharing_rows
    from chatmem.render.terminal import on_screen

    chosen = TurnRange.parse(turns) if turns is not None and not all_turns else None
    with open_workspace(settings_from(config, db), create=False) as ws:
        page = show_session(ws, name, chosen, every_turn=all_turns, newest=SHOW_LAST)
        zone = ws.settings.zone
    session = page.session
    messages = [{"turn": m.turn, "role": m.role, "content": m.content, "id": m.id,
                 "external_id": m.external_id} for m in page.messages]
    info = {k: v for k, v in session.__dict__.items() if k != "id"}
    shown_turns = {"first": page.first, "last": page.last, "total": page.total}
    if json_out:
        shown = {**info, "strategy": strategy_json(session.strategy, session.params),
                 **sharing_json(page.access, page.shares)}
        shown.pop("params")
        print_json({**shown, "turns": shown_turns, "messages": messages})
        return
    out = consoles()[0]
    from chatmem.memory.params import format_params

    info["params"] = format_params(session.params) or "—"
    # As every table shows a time (docs/json.md): the user's zone, no seconds; --json keeps UTC.
    info["created_at"] = render.when(session.created_at, zone)
    info["updated_at"] = render.when(session.updated_at, zone)
    own = info.pop("retention_days")
    info["retention"] = ("default (retention_days)" if own is None
                         else "kept for good" if own == 0 else f"{days_text(own)} idle")
    info.update(sharing_rows(page.access, page.shares))
    out.print(render.key_values(info, title=f"session {name}"))
    # A few hundred messages at a time: Rich lays out what one print is given at once, and
    # `--all` of 50,000 messages held them all laid out (197 MB).
    for start in range(0, max(len(messages), 1), PRINTED_AT_ONCE):
        # In a pipe or a file a message stays as written: a long URL was cut over three lines.
        out.print(render.transcript(messages[start:start + PRINTED_AT_ONCE]),
                  soft_wrap=not on_screen(out))
    if page.partial:
        which = f"turn {page.first}" if page.first == page.last else \
            f"turns {page.first}–{page.last}"
        consoles()[1].print(
            f"{which} of {page.total} shown; --turns FIRST-LAST or --all for others",
            markup=False, soft_wrap=True)


@app.command("delete")
@handles_errors
def delete(
    name: NameArgument,
    yes: YesOption = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Erase a session for good: messages, turns, summaries, session facts and index rows.

    Facts learned into the user's profile stay (`facts forget --purge` erases one).

    \b
    Example: chatmem sessions delete scratch --yes
    """
    from chatmem.app.sessions import deletable_session, delete_session

    with open_workspace(settings_from(config, db), create=False) as ws:
        # A name that is not there, or another's, is said before the question.
        deletable_session(ws, name)
        if not yes:
            confirm_erasure(f"Erase session {name!r} and all its data?")
        deleted = delete_session(ws, name)
    session, learned = deleted.session, deleted.profile_facts
    err = consoles()[1]
    err.print(f"deleted session {name}", markup=False, soft_wrap=True)
    if learned:
        from chatmem.history_notices import TaughtFacts
        from chatmem.render.history_notices import taught_text

        # Worded as a prune and retention word it (one wording of one fact).
        err.print(taught_text(TaughtFacts(name, session.user, tuple(learned))), markup=False,
                  soft_wrap=True)


# Registered here, between delete and rename, so `sessions --help` lists them where it did.
app.command("export")(export)
app.command("import")(import_)


OldNameArgument = Annotated[str, typer.Argument(metavar="SESSION", help="Session name.",
                                                autocompletion=session_names)]


@app.command("rename")
@handles_errors
def rename(
    name: OldNameArgument,
    new_name: Annotated[str, typer.Argument(
        metavar="NEW", help="The new name (letters, digits, - _ . +).")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Rename a session; everything it owns follows.

    \b
    Example: chatmem sessions rename default trip-planning
    """
    from chatmem.app.sessions import rename_session

    with open_workspace(settings_from(config, db), create=False) as ws:
        rename_session(ws, name, new_name)
    consoles()[1].print(f"renamed session {name} → {new_name}", markup=False, soft_wrap=True)


@app.command("reset-state")
@handles_errors
def reset_state(
    name: OldNameArgument,
    strategy: Annotated[str, typer.Argument(
        metavar="STRATEGY", help="The strategy whose state to drop, as the error names it"
                                 " (e.g. summary-buffer).")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Drop a strategy's memory state in one of your sessions; it is built again from the turns.

    The way out when a state row cannot be read (edited by hand, or by someone the session
    is shared with for writing) and every turn stops on it. Only derived memory goes: that
    strategy's state and summary versions (its pinned details with them). The turns,
    messages and facts stay, and so does the list of details you unpinned; a summarising
    strategy summarises the turns again on the next one (model calls). chatmem's own notes
    (`sensitive`: which turns said a secret; `pins`: the last pin id) are built again at once.

    \b
    Example: chatmem sessions reset-state trip summary-buffer
    """
    from chatmem.app.state_reset import reset_state as reset
    from chatmem.render.counts import counted

    with open_workspace(settings_from(config, db), create=False) as ws:
        done = reset(ws, name, strategy)
    consoles()[1].print(
        f"dropped the {done.strategy} state of session {done.session}"
        f" ({counted(done.rows, 'value')}, {counted(done.summaries, 'summary version')});"
        + (" built again from every turn now" if done.rebuilt else
           " it is built again from the turns on the next one"), markup=False, soft_wrap=True)


@app.command("fork")
@handles_errors
def fork(
    name: OldNameArgument,
    new_name: Annotated[str, typer.Argument(metavar="NEW", help="Name of the new session.")],
    at_turn: Annotated[
        int | None, typer.Option("--at-turn", metavar="N", show_default=False,
                                 help="Copy turns 1–N only (default: all; 0 copies none).")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
    json_out: JsonOption = False,
) -> None:
    """Copy a session, up to a turn, into a new one to branch from.

    \b
    Example: chatmem sessions fork trip trip-b --at-turn 4
    """
    from chatmem.app.sessions import fork_session
    from chatmem.render.progress import counted_progress

    err = consoles()[1]
    with open_workspace(settings_from(config, db), create=False) as ws, counted_progress(
            err, f"forking {name}") as progress:
        report = fork_session(ws, name, new_name, at_turn=at_turn, progress=progress)
    if json_out:
        print_json(report.to_json())
        return
    from chatmem.render.sessions import fork_lines

    # Another's share as it was named (OWNER/NAME); one's own by its stored name.
    for line in fork_lines(report, name if "/" in name else None):
        err.print(line, markup=False, soft_wrap=True)
