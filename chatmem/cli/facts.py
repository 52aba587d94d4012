"""`chatmem facts list|forget`."""

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from chatmem.cli.completion import session_names
from chatmem.cli.grammar import ChatmemTyper
from chatmem.cli.opening import open_workspace, settings_from
from chatmem.cli.options import (
    ConfigOption,
    DbOption,
    JsonOption,
    one_session,
    session_first,
)
from chatmem.cli.output import consoles, handles_errors, print_json, say_passed_over

if TYPE_CHECKING:
    from chatmem.privacy.phones import NumberForm
    from chatmem.privacy.purge import LeftMentions, Mentioned
    from chatmem.store import FactRecord, Redaction

app = ChatmemTyper(help="List and forget the facts chatmem remembers.\n\n"
                        "\b\nExample: chatmem facts list trip", no_args_is_help=True)
UserOption = Annotated[
    str | None, typer.Option("--user", "-u", help="Only this user profile's facts.",
                             show_default=False)
]
SessionOption = Annotated[
    str | None, typer.Option("--session", "-s", help="Only facts this session uses.",
                             show_default=False)
]


@app.command("list")
@handles_errors
def list_(
    session_arg: Annotated[
        str | None, typer.Argument(metavar="SESSION", show_default=False,
                                   autocompletion=session_names,
                                   help="Only facts this session uses (as --session).")
    ] = None,
    user: UserOption = None,
    session: SessionOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
    all_history: Annotated[bool, typer.Option(
        "--all-history", help="Show every earlier value of a fact (default: the last "
                              "few and how many older; --json lists all).")] = False,
    json_out: JsonOption = False,
) -> None:
    """List remembered facts and pinned summary details with their scope, source and age.

    \b
    Example: chatmem facts list travel --json
    """
    session = one_session(session_arg, session)
    from chatmem.app.facts import list_facts
    from chatmem.render.facts import (
        RECENT_VALUES,
        fact_rows,
        facts_table,
        owner_text,
        pinned_row,
    )

    settings = settings_from(config, db)
    with open_workspace(settings, create=False) as ws:
        listing = list_facts(ws, user=user, session=session)
    say_passed_over((row.address, row.shared_by, row.strategy) for row in listing.skipped)
    facts = [listed.fact for listed in listing.facts]
    owners = {listed.fact.id: listed.owner for listed in listing.facts}
    ends = {listed.fact.id: listed.expires_at for listed in listing.facts}
    history = {listed.fact.id: list(listed.history) for listed in listing.facts}
    rows: list[dict[str, Any]] = fact_rows(
        facts, lambda f: owner_text(owners[f.id]), listing.session_names, history,
        lambda f: ends[f.id], listing.speakers)
    rows += [pinned_row(p.pin, owner_text(p.owner), p.pinned_at) for p in listing.pins]
    if json_out:
        print_json(rows)
        return
    if not rows:
        # Said, not listed (as `logs` does): `chatmem facts list | wc -l` counts facts.
        consoles()[1].print(facts_table(rows), soft_wrap=True)
        return
    consoles()[0].print(facts_table(rows, recent=None if all_history else RECENT_VALUES))


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
            " (a whole word, any case; the exact string in Chinese, 臺 read as 台 but never"
            " 乾 as 干 nor 於 as 于, simplified characters too; never inside a longer"
            " word or number) in every session of its user profile: messages, turns,"
            " summaries, anchors, pins, index; then rewrite the file so no old copy remains."
            " Values under 2 characters are not searched out."))
    ] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="With --purge: list each message that would change, the mention"
                          " marked [[like this]] with the words around it; change"
                          " nothing.")] = False,
    yes: Annotated[bool, typer.Option(
        "--yes", "-y", help="With --purge: do not ask for confirmation (it is only asked in"
                            " a terminal).")] = False,
    user: UserOption = None,
    session: SessionOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="With --dry-run: print what the purge"
                                                           " would change, as JSON.")] = False,
) -> None:
    """Forget a fact (or unpin a pinned detail) so no later context holds it; --purge erases it.

    \b
    Example: chatmem facts forget travel "order id" --purge --dry-run
    """
    session, ref = session_first(words, session, "chatmem facts forget [SESSION] ID|KEY|PIN")
    from chatmem.errors import NotFound, UsageError

    if dry_run and not purge:
        raise UsageError("--dry-run goes with --purge (forgetting without --purge changes no"
                         " stored text)")
    if json_out and not dry_run:
        # Refused before anything is forgotten: a script asking for JSON would otherwise get
        # an empty stdout and exit 0 with the fact gone.
        raise UsageError("--json goes with --dry-run (forgetting prints no JSON: it says what"
                         " it did in one line on stderr)")
    from chatmem.app import facts as remembered
    from chatmem.memory.pins import PinnedFact
    from chatmem.render.facts import (
        kept_numbers_text,
        kept_spellings_text,
        left_text,
        mentions_text,
        redacted_text,
    )

    with open_workspace(settings_from(config, db), create=False) as ws:
        candidates = remembered.select_facts(ws, user=user, session=session,
                                             include_deleted=purge)
        read = remembered.select_pins(ws, user=user, session=session)
        pins = read.pins
        say_passed_over((row.address, row.shared_by, row.strategy) for row in read.skipped)
        try:
            chosen = remembered.one_to_forget(
                ws, ref, candidates, pins,
                owner=lambda pin: f"session {remembered.session_address_of(ws, pin.session_id)}",
                narrow="give an id, --user or --session")
        except NotFound:
            raise NotFound(f"no fact {ref!r}; `chatmem facts list` shows ids and keys") from None
        if isinstance(chosen, PinnedFact):
            pin = chosen
            if purge:
                raise UsageError(
                    f"{ref!r} is a pinned detail, a quotation of the conversation: "
                    "unpin it without --purge (`chatmem sessions delete` erases the session)")
            remembered.forget(ws, pin)
            owner = remembered.session_address_of(ws, pin.session_id)
            consoles()[1].print(f"unpinned {pin.ref or pin.text}: {pin.text} ({pin.source},"
                                f" session {owner}); it is not pinned again", markup=False,
                                soft_wrap=True)
            return
        fact = chosen
        redacted = ""
        named: tuple[str, ...] = ()
        by_opening: tuple[str, ...] = ()
        left: tuple[LeftMentions, ...] = ()
        spelled: tuple[tuple[str, str], ...] = ()
        number_part: str | None = None
        number_forms: frozenset[NumberForm] = frozenset()
        if purge:
            if dry_run:
                mentioned = remembered.purge_mentions(ws, fact)
                names = remembered.session_addresses(ws, {m.message.session_id for m in mentioned})
                _print_mentions(names, fact, mentioned, remembered.purge_preview(ws, fact),
                                json_out)
                for leaving in remembered.purge_left(ws, fact):
                    consoles()[1].print(left_text(leaving, done=False), markup=False,
                                        soft_wrap=True)
                return
            # The mentions are read only to be shown: --yes (or no terminal) goes ahead.
            if not yes and sys.stdin.isatty() and not typer.confirm(
                    f"Erase fact {fact.id} ({fact.key}) and "
                    f"{mentions_text(remembered.purge_mentions(ws, fact))} for good?"):
                consoles()[1].print("nothing was changed", markup=False, soft_wrap=True)
                raise typer.Exit(1)
            purged = remembered.purge(ws, fact)
            named, redacted = purged.still_named, redacted_text(purged.redaction)
            by_opening = purged.opening_named
            named = tuple(n for n in named if n not in by_opening)
            left, spelled = purged.left, purged.spelled_otherwise
            number_part, number_forms = purged.number_part, purged.number_forms
        else:
            remembered.forget(ws, fact)
    verb = "erased" if purge else "forgot"
    consoles()[1].print(f"{verb} fact {fact.id}: {fact.key} ({_scope_word(fact)}){redacted}",
                        soft_wrap=True, markup=False)
    for each in left:
        consoles()[1].print(left_text(each, done=True), soft_wrap=True, markup=False)
    if spelled:
        consoles()[1].print(kept_spellings_text(fact.value, spelled), soft_wrap=True,
                            markup=False)
    if number_part:
        consoles()[1].print(kept_numbers_text(number_part, number_forms),
                            soft_wrap=True, markup=False)
    if purge and named:
        consoles()[1].print(
            f"still in the name of {'session' if len(named) == 1 else 'sessions'} "
            f"{', '.join(named)}: a purge leaves names as they are; `chatmem sessions rename "
            f"{named[0]} NEW` renames it", soft_wrap=True, markup=False)
    for name in by_opening:
        # Renamed alone, the client's next message there stores its copy, the value in it,
        # under the same name again (serve names the chat by its opening).
        consoles()[1].print(
            f"still in the name of session {name}, a digest of its first message: delete "
            f"that chat in its client first, then `chatmem sessions rename {name} NEW` "
            "(its next message would store its copy anew, the value with it)",
            soft_wrap=True, markup=False)


def _print_mentions(names: dict[int, str], fact: "FactRecord", mentioned: "Sequence[Mentioned]",
                    preview: "Redaction", json_out: bool) -> None:
    from chatmem.render.facts import (
        kept_kind,
        mention_line,
        mentions_text,
        number_forms_text,
        redacted_text,
    )

    out, err = consoles()
    if json_out:
        print_json({
            "fact": {"id": fact.id, "key": fact.key},
            "messages": [{"session": names[m.message.session_id], "turn": m.message.turn,
                          "position": m.message.position, "role": m.message.role,
                          "content": m.message.content,
                          "mentions": [[s.start, s.end] for s in m.spans],
                          "unsure": [[s.start, s.end] for s in m.unsure],
                          "kept": [[s.start, s.end] for s in m.kept],
                          "spelled_otherwise": [[s.start, s.end]
                                                for s in m.spelled_otherwise],
                          "other_numbers": [[s.start, s.end] for s in m.other_numbers]}
                         for m in mentioned],
            # What the purge then changes, row by row, from the plan it applies.
            "changes": {place.value: n for place, n in preview.counts.items()},
            "sessions": len(preview.sessions),
            "deleted_facts": list(preview.deleted_facts.values()),
            "dropped_pins": preview.dropped_pins,
            "distinct_keys": list(preview.distinct_keys.values())})
        return
    forms = [form for m in mentioned for form in m.number_forms]
    # What is erased; then, apart, what is erased but may be the start of a longer name,
    # and what is kept as part of a longer name the profile has stored.
    for title, pick in (("", lambda m: m.spans),
                        ("erased, though a longer name may go on after it:", lambda m: m.unsure),
                        ("kept, inside a longer stored name:", lambda m: m.kept),
                        ("kept, unsure: spelled otherwise (乾 for 干, 於 for 于), perhaps"
                         " someone else:",
                         lambda m: m.spelled_otherwise),
                        (f"kept, unsure: the {kept_kind(forms)} written"
                         f" {number_forms_text(forms)}, perhaps another {kept_kind(forms)}:",
                         lambda m: m.other_numbers)):
        shown = [(m, spans) for m in mentioned if (spans := pick(m))]
        if shown and title:
            out.print(title, markup=False, soft_wrap=True)
        for m, spans in shown:
            where = f"session {names[m.message.session_id]}, turn {m.message.turn}"
            out.print(mention_line(where, m.message.role, m.message.content,
                                   [(s.start, s.end) for s in spans]), soft_wrap=True)
    err.print(f"would erase fact {fact.id} ({fact.key}) and {mentions_text(mentioned)}"
              f"{redacted_text(preview, dry_run=True)}; nothing was changed", markup=False,
              soft_wrap=True)


def _scope_word(fact: "FactRecord") -> str:
    from chatmem.store.records import FactScope

    return f"user {fact.user}" if fact.scope == FactScope.USER else "session"
