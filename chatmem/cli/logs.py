"""`chatmem logs`: recent turns across sessions, and a search of what was said."""

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from chatmem.cli.completion import session_names
from chatmem.cli.opening import open_workspace, settings_from
from chatmem.cli.options import ConfigOption, DbOption, JsonOption
from chatmem.cli.output import consoles, handles_errors, print_json

if TYPE_CHECKING:
    from chatmem.config.options import Cost
    from chatmem.store import LogEntry


@handles_errors
def logs(
    count: Annotated[int, typer.Option("--count", "-n", min=1, max=10_000, metavar="N",
                                       help="How many turns to list.")] = 20,
    query: Annotated[str | None, typer.Option(
        "--query", "-q", metavar="TEXT", show_default=False,
        help="Only turns whose question or reply match TEXT (the full-text index; "
             "English and Chinese), best match first.")] = None,
    session: Annotated[str | None, typer.Option(
        "--session", metavar="SESSION", show_default=False,
        autocompletion=session_names, help="Only this session's turns.")] = None,
    response: Annotated[bool, typer.Option(
        "--response", "-r", help="Print only the last reply (of --session, or matching -q), "
                                 "as the model sent it.")] = False,
    full: Annotated[bool, typer.Option(
        "--full", help="Show each turn whole: its question and its reply.")] = False,
    json_output: JsonOption = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """List recent turns across sessions: time, session, model, strategy, tokens, cost, question;
    -r prints the last reply, --full whole turns.

    \b
    Example: chatmem logs -n 5 -q 杭州 --full
    """
    from chatmem.app.sessions import holds_history, recent_turns
    from chatmem.config.options import price_of
    from chatmem.errors import NotFound, UsageError
    from chatmem.render import printable
    from chatmem.render.logs import full_turns, logs_table
    from chatmem.render.terminal import on_screen

    if query is not None and not query.strip():
        raise UsageError("-q needs words to search for")
    if response and full:
        raise UsageError("-r prints one reply, --full whole turns: give one of them")
    settings = settings_from(config, db)
    with open_workspace(settings, create=False) as ws:
        entries = recent_turns(ws, count=1 if response else count, session=session,
                               query=query, replied=response)
        if response and not entries and not json_output:  # --json: [], as logs --json
            where = f"session {session!r}" if session is not None else ws.store.location
            matching = f" matching {query!r}" if query is not None else ""
            if session is not None and holds_history(ws, session):
                # "yet" would be wrong: its replies are there, only not as turns had here.
                raise NotFound(f"no reply{matching} in the logs of {where}: its history was "
                               "imported or copied, and the logs hold only turns had with "
                               f"chatmem (chatmem sessions show {session} shows it)")
            raise NotFound(f"no reply{matching} in {where} yet")
        # A session whose history was imported or copied has no turn had here: "no turns
        # found" read as an empty session.
        imported = (not entries and session is not None and query is None
                    and holds_history(ws, session))
    costs = []
    for entry in entries:
        price = price_of(settings.prices, entry.model)
        costs.append(price.cost(entry.prompt_tokens, entry.reply_tokens) if price else None)
    if json_output:
        print_json([_entry_json(entry, cost, reply=response or full)
                    for entry, cost in zip(entries, costs, strict=True)])
        return
    out = consoles()[0]
    if response:
        # The reply alone, as sent: `chatmem logs -r | pbcopy` copies what the model wrote.
        # On a terminal its escape sequences are shown, never obeyed, as everywhere else.
        reply = entries[0].reply or ""
        sys.stdout.write((printable(reply) if sys.stdout.isatty() else reply) + "\n")
        return
    if not entries:
        # Said, not listed: `chatmem logs | wc -l` counts turns, and a script reads none.
        said = (f"no turns in the logs of session {session!r}: its history was imported or "
                "copied, and the logs hold only turns had with chatmem (chatmem sessions show"
                f" {session} shows it)" if imported else "no turns found")
        consoles()[1].print(said, markup=False, soft_wrap=True)
        return
    zone = settings.zone  # the timezone setting's, else the system's: as every table's times
    if full:
        # In a pipe or a file each message stays as written: no newline added at 80 columns.
        out.print(full_turns(entries, costs, zone=zone), soft_wrap=not on_screen(out))
    else:
        out.print(logs_table(entries, costs, zone=zone))


def _entry_json(entry: "LogEntry", cost: "Cost | None", *, reply: bool) -> dict[str, Any]:
    import json

    from chatmem.render.payloads import strategy_json, tokens_json

    shown = {"reply": entry.reply} if reply else {}
    return {
        # `turn` and `time` came first; `number` and `created_at` say the same as the keys
        # every other output uses (docs/json.md: fields are added, never renamed).
        "session": entry.address, "shared_by": entry.shared_by, "turn": entry.number,
        "number": entry.number, "request": entry.request, "time": entry.created_at,
        "created_at": entry.created_at,
        "status": entry.status, "provider": entry.provider, "model": entry.model,
        "strategy": strategy_json(entry.strategy, json.loads(entry.params or "{}")),
        "tokens": {"prompt": entry.prompt_tokens,
                   **tokens_json(entry.counted_tokens, entry.reported_tokens, entry.reply_tokens)},
        "cost": None if cost is None else {"amount": cost.amount, "currency": cost.currency},
        "input": entry.input, "superseded_by": entry.superseded_by, **shown,
    }
