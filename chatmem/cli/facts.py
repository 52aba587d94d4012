"""`chatmem facts list|forget`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

import typer

from chatmem.cli.grammar import ChatmemTyper
from chatmem.cli.opening import open_store, settings_from
from chatmem.cli.options import (
    ConfigOption,
    DbOption,
    JsonOption,
    one_session,
    session_first,
    utf8_text,
)
from chatmem.cli.output import consoles, handles_errors, print_json

if TYPE_CHECKING:
    from chatmem.memory.pins import PinnedFact
    from chatmem.privacy.purge import Mentioned
    from chatmem.store import FactRecord, Redaction, Store

app = ChatmemTyper(help="List and forget the facts chatmem remembers.", no_args_is_help=True)
UserOption = Annotated[
    str | None, typer.Option("--user", "-u", help="Only this user profile's facts.",
                             show_default=False, callback=utf8_text)
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


def _select_pins(store: Store, user: str | None, session: str | None) -> list[PinnedFact]:
    """Drift-guard pins belong to sessions: a session's, or every session's unless --user."""
    from chatmem.memory.pins import pinned_facts

    if session is not None:
        return pinned_facts(store, store.session(session).id)
    return [] if user is not None else pinned_facts(store)


def _pin_owner(store: Store, pin: PinnedFact) -> str:
    return f"session {store.session_by_id(pin.session_id).name}"


def _owner(store: Store, fact: FactRecord) -> str:
    if fact.scope == "user":
        return f"user {fact.user}"
    return f"session {store.session_by_id(fact.session_id).name}" if fact.session_id else ""


@app.command("list")
@handles_errors
def list_(
    session_arg: Annotated[
        str | None, typer.Argument(metavar="SESSION", show_default=False,
                                   help="Only facts this session uses (as --session).")
    ] = None,
    user: UserOption = None,
    session: SessionOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
    json_out: JsonOption = False,
) -> None:
    """List remembered facts and pinned summary details with their scope, source and age.

    Example: chatmem facts list travel --json
    """
    session = one_session(session_arg, session)
    from chatmem.memory.facts import provenance
    from chatmem.memory.pins import pinned_at
    from chatmem.privacy.retention import expiry_of
    from chatmem.render.facts import fact_rows, facts_table, pinned_row

    settings = settings_from(config, db)
    with open_store(settings, create=False) as store:
        facts = _select(store, user, session)
        names, history = provenance(store, facts)
        # Its own end (/remember --for), or when it goes unused too long (fact_idle_days).
        rows: list[dict[str, Any]] = fact_rows(
            facts, lambda f: _owner(store, f), names, history,
            lambda f: expiry_of(f, settings.fact_idle_days))
        pins = _select_pins(store, user, session)
        made = pinned_at(store, pins)
        rows += [pinned_row(p, _pin_owner(store, p), made.get(p)) for p in pins]
    if json_out:
        print_json(rows)
        return
    consoles()[0].print(facts_table(rows))


@app.command("forget")
@handles_errors
def forget(
    words: Annotated[list[str], typer.Argument(
        metavar="[SESSION] ID|KEY|PIN", show_default=False,
        help="The session (optional) and a fact id or key, or a pinned detail (p3 or its "
             "text).")],
    purge: Annotated[
        bool, typer.Option("--purge", help=(
            "Erase the fact and replace its value by [forgotten] wherever it is mentioned"
            " (a whole word, any case; the exact string in Chinese; never inside a longer"
            " word or number) in every session of its user profile: messages, turns,"
            " summaries, anchors, pins, index; then rewrite the file so no old copy remains."
            " Values under 2 characters are not searched out."))
    ] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="With --purge: list each message that would change, the mention"
                          " marked [[like this]]; change nothing.")] = False,
    yes: Annotated[bool, typer.Option(
        "--yes", "-y", help="With --purge: do not ask for confirmation (it is only asked in"
                            " a terminal).")] = False,
    user: UserOption = None,
    session: SessionOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="With --dry-run: print the messages"
                                                           " as JSON for scripts.")] = False,
) -> None:
    """Forget a fact (or unpin a pinned detail) so no later context holds it; --purge erases it.

    Example: chatmem facts forget travel "order id" --purge --dry-run
    """
    session, ref = session_first(words, session, "chatmem facts forget [SESSION] ID|KEY|PIN")
    from chatmem.errors import NotFound, UsageError

    if dry_run and not purge:
        raise UsageError("--dry-run goes with --purge (forgetting without --purge changes no"
                         " stored text)")
    from chatmem.memory.facts import scrub_fact
    from chatmem.memory.forgetting import one_to_forget
    from chatmem.memory.pins import PinnedFact, unpin

    with open_store(settings_from(config, db), create=False) as store:
        chosen = one_to_forget(
            ref, _select(store, user, session, include_deleted=purge),
            _select_pins(store, user, session), owner=partial(_pin_owner, store),
            narrow="give an id, --user or --session")
        if chosen is None:
            raise NotFound(f"no fact {ref!r}; `chatmem facts list` shows ids and keys")
        if isinstance(chosen, PinnedFact):
            pin = chosen
            if purge:
                raise UsageError(
                    f"{ref!r} is a pinned detail, a quotation of the conversation: "
                    "unpin it without --purge (`chatmem sessions delete` erases the session)")
            unpin(store, pin)
            consoles()[1].print(f"unpinned {pin.ref or pin.text}: {pin.text} ({pin.source},"
                                f" {_pin_owner(store, pin)}); it is not pinned again")
            return
        fact = chosen
        redacted = ""
        if purge:
            from chatmem.privacy import purge as purging

            earlier = [h.value for h in store.fact_history([fact.id]).get(fact.id, [])]
            plan = purging.plan(store, fact, earlier)
            mentioned = purging.mentioned_messages(store, plan)
            if dry_run:
                _print_mentions(store, fact, mentioned, json_out)
                return
            if not yes and sys.stdin.isatty() and not typer.confirm(
                    f"Erase fact {fact.id} ({fact.key}) and {_mentions_text(mentioned)}"
                    " for good?"):
                consoles()[1].print("nothing was changed", markup=False)
                raise typer.Exit(1)
            store.forget_fact(fact.id, purge=True)
            scrub_fact(store, fact.id)
            redacted = _redacted_text(purging.erase(store, plan))
            store.vacuum()
        else:
            store.forget_fact(fact.id)
    verb = "erased" if purge else "forgot"
    consoles()[1].print(f"{verb} fact {fact.id}: {fact.key} ({_scope_word(fact)}){redacted}",
                        soft_wrap=True, markup=False)


def _mentions_text(mentioned: Sequence[Mentioned]) -> str:
    mentions = sum(len(m.spans) for m in mentioned)
    sessions = len({m.message.session_id for m in mentioned})
    return (f"{_count(mentions, 'mention')} in {_count(len(mentioned), 'message')}"
            f" of {_count(sessions, 'session')}")


def _print_mentions(store: Store, fact: FactRecord, mentioned: Sequence[Mentioned],
                    json_out: bool) -> None:
    from chatmem.render.facts import mention_line

    out, err = consoles()
    names = store.session_names({m.message.session_id for m in mentioned})
    if json_out:
        print_json([{"session": names[m.message.session_id], "turn": m.message.turn,
                     "position": m.message.position, "role": m.message.role,
                     "content": m.message.content,
                     "mentions": [[s.start, s.end] for s in m.spans]} for m in mentioned])
        return
    for m in mentioned:
        where = f"session {names[m.message.session_id]}, turn {m.message.turn}"
        out.print(mention_line(where, m.message.role, m.message.content,
                               [(s.start, s.end) for s in m.spans]), soft_wrap=True)
    err.print(f"would erase fact {fact.id} ({fact.key}) and {_mentions_text(mentioned)};"
              " nothing was changed", markup=False, soft_wrap=True)


def _redacted_text(done: Redaction) -> str:
    """`; its value was replaced by [forgotten] in 3 messages of 2 sessions, ...`."""
    from chatmem.store import Place

    words = {
        Place.MESSAGES: ("message", "messages"),
        Place.TURNS: ("recorded turn", "recorded turns"),
        Place.SUMMARIES: ("summary", "summaries"),
        Place.ANCHORS: ("summary's drift-guard anchors", "summaries' drift-guard anchors"),
        Place.STRATEGY_STATE: ("session's pinned details or strategy memory",
                               "sessions' pinned details or strategy memory"),
        Place.SYSTEM_PROMPTS: ("system prompt", "system prompts"),
        Place.PROBES: ("recall probe", "recall probes"),
        Place.FACTS: ("other fact", "other facts"),
        Place.FACT_HISTORY: ("earlier fact value", "earlier fact values"),
    }
    counts = done.counts
    parts = [_count(n, *words[place]) for place, n in counts.items() if place in words]
    if not parts:
        return ""
    text = (f"; its value was replaced by [forgotten] in {', '.join(parts)}"
            f" ({_count(len(done.sessions), 'session')})")
    if counts.get(Place.MESSAGES):
        text += "; the search index was updated"
    if vectors := counts.get(Place.VECTORS):
        text += f"; {_count(vectors, 'message vector')} dropped (`chatmem index` recomputes them)"
    return text


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _scope_word(fact: FactRecord) -> str:
    return f"user {fact.user}" if fact.scope == "user" else "session"
