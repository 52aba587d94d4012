"""`chatmem sessions list|show|delete`."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from chatmem.cli.common import (
    ConfigOption,
    DbOption,
    JsonOption,
    consoles,
    handles_errors,
    open_store,
    print_json,
    settings_from,
)

app = typer.Typer(help="List, show and delete sessions.", no_args_is_help=True)
NameArgument = Annotated[str, typer.Argument(help="Session name.")]


@app.command("list")
@handles_errors
def list_(db: DbOption = None, config: ConfigOption = None, json_out: JsonOption = False) -> None:
    """List sessions, most recent first.

    Example: chatmem sessions list --json
    """
    from chatmem import render

    with open_store(settings_from(config, db)) as store:
        rows = store.list_sessions()
    for row in rows:
        row["params"] = json.loads(row["params"])
    if json_out:
        print_json(rows)
        return
    shown = [{**r, "params": " ".join(f"{k}={v}" for k, v in r["params"].items())} for r in rows]
    consoles()[0].print(render.table(
        shown, ["name", "strategy", "params", "messages", "turns", "updated_at"]
    ))


@app.command("show")
@handles_errors
def show(
    name: NameArgument, db: DbOption = None, config: ConfigOption = None,
    json_out: JsonOption = False,
) -> None:
    """Show a session's settings and messages.

    Example: chatmem sessions show support
    """
    from chatmem import render

    with open_store(settings_from(config, db)) as store:
        session = store.session(name)
        messages = [
            {"turn": m.turn, "role": m.role, "content": m.content, "id": m.id}
            for m in store.messages(session.id)
        ]
    info = {k: v for k, v in session.__dict__.items() if k != "id"}
    if json_out:
        print_json({**info, "messages": messages})
        return
    out = consoles()[0]
    out.print(render.key_values(info, title=f"session {name}"))
    out.print(render.transcript(messages))


@app.command("delete")
@handles_errors
def delete(
    name: NameArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Erase a session for good: messages, turns, summaries, facts and index rows.

    Example: chatmem sessions delete scratch --yes
    """
    with open_store(settings_from(config, db)) as store:
        store.session(name)
        if not yes and not typer.confirm(f"Erase session {name!r} and all its data?"):
            raise typer.Exit(1)
        store.delete_session(name)
    consoles()[1].print(f"deleted session {name}")
