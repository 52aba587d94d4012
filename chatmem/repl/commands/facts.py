"""REPL commands for facts: /facts, /remember, /forget."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from chatmem.app import facts as remembered
from chatmem.errors import NotFound, SessionGone
from chatmem.memory import pins
from chatmem.privacy.retention import parse_duration
from chatmem.render import when
from chatmem.render.facts import (
    RECENT_VALUES,
    fact_rows,
    facts_table,
    owner_text,
    pinned_row,
)
from chatmem.repl.chat import Chat
from chatmem.repl.table import SLASH, slash

if TYPE_CHECKING:
    from chatmem.memory.base import Strategy


@slash("/facts", "/facts [--all-history]",
       "list the facts this session uses (id, key, value, scope, source, age), pinned details "
       f"too; a value shows its last {RECENT_VALUES} earlier values, --all-history every one",
       example="/facts", args=(0, 1))
def _facts(repl: Chat, args: list[str]) -> None:
    if args and args[0] != "--all-history":
        raise SLASH["/facts"].usage_error(f"unknown option {args[0]}")
    listing = remembered.session_facts(repl.workspace, repl.engine.session)
    owners = {f.fact.id: f.owner for f in listing.facts}
    ends = {f.fact.id: f.expires_at for f in listing.facts}
    history = {f.fact.id: list(f.history) for f in listing.facts}
    facts = [f.fact for f in listing.facts]
    rows = fact_rows(facts, lambda f: owner_text(owners[f.id]), listing.session_names, history,
                     lambda f: ends[f.id], listing.speakers)
    rows += [pinned_row(p.pin, owner_text(p.owner), p.pinned_at) for p in listing.pins]
    repl.show(facts_table(rows, recent=None if args else RECENT_VALUES))
    note = _unused_facts_note(repl.engine.strategy) if facts else None
    if note:
        repl.notice(note)


@slash("/remember", "/remember [--user] [--for AGE] TEXT",
       "store a fact now (KEY: VALUE, or a statement like 'my name is Ana') in this "
       "session; --user puts it in your profile, for every session; --for 7d makes it "
       "expire; options go before TEXT (-- ends them), which is kept as typed; sensitive "
       "details are stored too, since you ask",
       example="/remember budget: 5000 EUR", args=(1, None))
def _remember(repl: Chat, args: list[str]) -> None:
    options, text = _leading_options(repl.raw_args)
    text = text.strip()
    if not text:
        raise SLASH["/remember"].usage_error("missing TEXT")
    lasting = options.lasting
    try:
        stored = remembered.remember(
            repl.workspace, repl.engine.session, text, in_profile=options.in_profile,
            lasting=parse_duration(lasting, "--for") if lasting is not None else None)
    except SessionGone as gone:
        raise gone.named(repl.engine.address) from None
    note = _unused_facts_note(repl.engine.strategy)
    for fact in stored:
        ends = fact.expires_at
        # In the user's zone, as every other time chatmem shows (it said UTC here alone).
        until = f", until {when(ends, repl.workspace.settings.zone)}" if ends else ""
        repl.notice(f"remembered fact {fact.id}: {fact.key} = {fact.value} ({fact.scope}"
                    f"{until})" + (f"; {note}" if note else ""))


def _unused_facts_note(strategy: Strategy) -> str | None:
    """Why a remembered fact will not reach the model, and what to switch to; None if it will
    (a strategy that `sends_facts`, or a combination with one)."""
    if strategy.sends_facts:
        return None
    return (f"note: strategy {strategy.name} does not send remembered facts"
            f" — try /strategy {strategy.name}+entity")


@dataclass(frozen=True)
class RememberOptions:
    in_profile: bool = False
    lasting: str | None = None
    """The --for DURATION as typed; None: the fact does not expire."""


def _leading_options(typed: str) -> tuple[RememberOptions, str]:
    """The options before the fact, and the rest of `typed`: the fact, as typed.

    Only words before the fact are options: a fact that mentions `--user` or `--for`
    (a command's usage, say) is kept whole, in this session. `--` ends the options, for
    a fact that itself starts with `--`. The fact is cut from the typed text, never split
    into words and joined again, so its quotes and spacing are what was typed.
    """
    in_profile, lasting = False, None
    rest = typed.lstrip()
    while rest.startswith("--"):
        word, rest = _first_word(rest)
        rest = rest.lstrip()
        if word == "--":
            break
        if word == "--user":
            in_profile = True
        elif word == "--session":
            in_profile = False
        elif word == "--for":
            lasting, rest = _first_word(rest)
            if not lasting:
                raise SLASH["/remember"].usage_error("--for needs a value, e.g. --for 7d")
            rest = rest.lstrip()
        else:
            raise SLASH["/remember"].usage_error(
                f"unknown option {word}; put -- before a fact that starts with --")
    return RememberOptions(in_profile, lasting), rest


def _first_word(text: str) -> tuple[str, str]:
    """(the first word of `text`, the rest of it as typed), split at any whitespace."""
    start = len(text) - len(text.lstrip())
    words = text.split(maxsplit=1)
    if not words:
        return "", ""
    return words[0], text[start + len(words[0]):]


@slash("/forget", "/forget ID|KEY|PIN",
       "forget a fact, or unpin a pinned detail (p3 or its text): it never reaches a context again",
       example="/forget order id", args=(1, None), completes="fact")
def _forget(repl: Chat, args: list[str]) -> None:
    ref = " ".join(args).strip()
    if not ref:
        raise SLASH["/forget"].usage_error("missing ID|KEY|PIN (see /facts)")
    session = repl.engine.session
    listing = remembered.session_facts(repl.workspace, session)
    try:
        chosen = remembered.one_to_forget(repl.workspace, ref,
                                          [f.fact for f in listing.facts],
                                          [p.pin for p in listing.pins],
                                          narrow="give an id (see /facts)")
    except NotFound:
        raise NotFound(f"no fact {ref!r} in this session; /facts lists them") from None
    remembered.forget(repl.workspace, chosen)
    if isinstance(chosen, pins.PinnedFact):
        repl.notice(f"unpinned {chosen.ref or chosen.text}: {chosen.text} ({chosen.source}); "
                    "not pinned again")
    else:
        repl.notice(f"forgot fact {chosen.id}: {chosen.key}")
