"""`chatmem facts list|forget`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

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

if TYPE_CHECKING:
    from chatmem.store import FactRecord, Store

app = typer.Typer(help="List and forget the facts chatmem remembers.", no_args_is_help=True)
UserOption = Annotated[
    str | None, typer.Option("--user", "-u", help="Only this user profile's facts.",
                             show_default=False)
]
SessionOption = Annotated[
    str | None, typer.Option("--session", "-s", help="Only facts this session uses.",
                             show_default=False)
]


def _select(store: Store, user: str | None, session: str | None,
            include_deleted: bool = False) -> list[FactRecord]:
    """Facts of a user, of a session (with its user's), or every fact in the file."""
    if session is None and user is None:
        return store.facts(include_deleted=include_deleted)
    chosen: dict[int, FactRecord] = {}
    if session is not None:
        record = store.session(session)
        for fact in store.facts(user=record.user, session_id=record.id,
                                include_deleted=include_deleted):
            chosen[fact.id] = fact
    if user is not None:
        for fact in store.facts(user=user, include_deleted=include_deleted):
            chosen[fact.id] = fact
    return [chosen[i] for i in sorted(chosen)]


def _owner(store: Store, fact: FactRecord) -> str:
    if fact.scope == "user":
        return f"user {fact.user}"
    return f"session {store.session_by_id(fact.session_id).name}" if fact.session_id else ""


@app.command("list")
@handles_errors
def list_(
    user: UserOption = None,
    session: SessionOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
    json_out: JsonOption = False,
) -> None:
    """List remembered facts with their scope, source turn and age.

    Example: chatmem facts list --session travel --json
    """
    from chatmem.render.facts import fact_row, facts_table

    with open_store(settings_from(config, db)) as store:
        rows: list[dict[str, Any]] = [
            fact_row(f, owner=_owner(store, f)) for f in _select(store, user, session)
        ]
    if json_out:
        print_json(rows)
        return
    consoles()[0].print(facts_table(rows))


@app.command("forget")
@handles_errors
def forget(
    ref: Annotated[str, typer.Argument(metavar="ID|KEY", help="A fact id or key.")],
    purge: Annotated[
        bool, typer.Option("--purge", help="Erase physically and vacuum the file (no trace left).")
    ] = False,
    user: UserOption = None,
    session: SessionOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Forget a fact so no later context holds it; --purge erases it from the file.

    Example: chatmem facts forget "order id" --session travel --purge
    """
    from chatmem.errors import NotFound, UsageError
    from chatmem.memory.facts import find_facts, scrub_fact

    with open_store(settings_from(config, db)) as store:
        matched = find_facts(_select(store, user, session, include_deleted=purge), ref)
        if not matched:
            raise NotFound(f"no fact {ref!r}; `chatmem facts list` shows ids and keys")
        if len(matched) > 1:
            ids = ", ".join(str(f.id) for f in matched)
            raise UsageError(
                f"key {ref!r} names {len(matched)} facts (ids {ids}); "
                "give an id, --user or --session"
            )
        fact = matched[0]
        store.forget_fact(fact.id, purge=purge)
        if purge:
            scrub_fact(store, fact.id)
            store.vacuum()
    verb = "erased" if purge else "forgot"
    consoles()[1].print(f"{verb} fact {fact.id}: {fact.key} ({_scope_word(fact)})")


def _scope_word(fact: FactRecord) -> str:
    return f"user {fact.user}" if fact.scope == "user" else "session"
