"""`chatmem logs`: recent turns across sessions, and a search of what was said."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from chatmem.cli.opening import open_workspace, settings_from
from chatmem.cli.options import ConfigOption, DbOption, JsonOption, utf8_text
from chatmem.cli.output import consoles, handles_errors, print_json

if TYPE_CHECKING:
    from chatmem.config.options import Cost
    from chatmem.store import LogEntry


@handles_errors
def logs(
    count: Annotated[int, typer.Option("--count", "-n", min=1, max=10_000,
                                       help="How many turns to list.")] = 20,
    query: Annotated[str | None, typer.Option(
        "--query", "-q", metavar="TEXT", show_default=False, callback=utf8_text,
        help="Only turns whose question or reply match TEXT (the full-text index; "
             "English and Chinese), best match first.")] = None,
    session: Annotated[str | None, typer.Option(
        "--session", metavar="SESSION", show_default=False, callback=utf8_text,
        help="Only this session's turns.")] = None,
    json_output: JsonOption = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """List recent turns across sessions: time, session, model, strategy, tokens, cost, question.

    Example: chatmem logs -n 5 -q 杭州
    """
    from chatmem.app.sessions import recent_turns
    from chatmem.config.options import price_of
    from chatmem.errors import UsageError
    from chatmem.render.logs import logs_table

    if query is not None and not query.strip():
        raise UsageError("-q needs words to search for")
    settings = settings_from(config, db)
    with open_workspace(settings, create=False) as ws:
        entries = recent_turns(ws, count=count, session=session, query=query)
    costs = []
    for entry in entries:
        price = price_of(settings.prices, entry.model)
        costs.append(price.cost(entry.prompt_tokens, entry.reply_tokens) if price else None)
    if json_output:
        print_json([_entry_json(entry, cost) for entry, cost in zip(entries, costs,
                                                                    strict=True)])
        return
    consoles()[0].print(logs_table(entries, costs))


def _entry_json(entry: LogEntry, cost: Cost | None) -> dict[str, Any]:
    import json

    from chatmem.render.payloads import strategy_json

    return {
        "session": entry.session, "turn": entry.number, "time": entry.created_at,
        "status": entry.status, "provider": entry.provider, "model": entry.model,
        "strategy": strategy_json(entry.strategy, json.loads(entry.params or "{}")),
        "tokens": {"prompt": entry.prompt_tokens, "reply": entry.reply_tokens},
        "cost": None if cost is None else {"amount": cost.amount, "currency": cost.currency},
        "input": entry.input, "superseded_by": entry.superseded_by,
    }
