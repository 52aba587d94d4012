"""REPL commands for facts: /facts, /remember, /forget."""

from __future__ import annotations

from chatmem.errors import NotFound
from chatmem.memory import pins
from chatmem.memory.facts import find_facts, provenance, split_key_value, unused_facts_note
from chatmem.memory.forgetting import one_to_forget
from chatmem.privacy.retention import expiry_of, parse_duration
from chatmem.render.facts import fact_rows, facts_table, pinned_row
from chatmem.repl.chat import Chat
from chatmem.repl.table import SLASH, slash
from chatmem.timestamps import stamp


@slash("/facts", "/facts",
       "list the facts this session uses (id, key, value, scope, source, age), pinned details too",
       example="/facts")
def _facts(repl: Chat, args: list[str]) -> None:
    session = repl.engine.session
    facts = repl.engine.state.live_facts()
    names, history = provenance(repl.engine.store, facts)
    idle = repl.engine.settings.fact_idle_days if repl.engine.settings else None
    rows = fact_rows(
        facts, lambda f: f"user {f.user}" if f.scope == "user" else f"session {session.name}",
        names, history, lambda f: expiry_of(f, idle))
    pinned = pins.pinned_facts(repl.engine.store, session.id)
    made = pins.pinned_at(repl.engine.store, pinned)
    rows += [pinned_row(p, f"session {session.name}", made.get(p)) for p in pinned]
    repl.show(facts_table(rows))
    note = unused_facts_note(repl.engine.strategy.name) if facts else None
    if note:
        repl.notice(note)


@slash("/remember", "/remember [--user] [--for DURATION] TEXT",
       "store a fact now (KEY: VALUE, or a statement like 'my name is Ana') in this "
       "session; --user puts it in your profile, for every session; --for 7d makes it "
       "expire; sensitive details are stored too, since you ask",
       example="/remember budget: 5000 EUR", args=(1, None))
def _remember(repl: Chat, args: list[str]) -> None:
    from chatmem.providers.scripted_facts import extract

    args, lasting = _option_value(args, "--for")
    ends = None
    if lasting is not None:
        ends = stamp(repl.engine.store.clock() + parse_duration(lasting, "--for"))
    user_scope = "--user" in args
    text = " ".join(a for a in args if a not in ("--user", "--session")).strip()
    if not text:
        raise SLASH["/remember"].usage_error("missing TEXT")
    state = repl.engine.state
    pair = split_key_value(text)
    pairs = [pair] if pair else extract(text)[0]
    if not pairs:
        taken = {f.key for f in state.live_facts()}
        key = next(k for n in range(1, len(taken) + 2) if (k := f"note {n}") not in taken)
        pairs = [(key, text)]
    scope = "user" if user_scope and state.user else "session"
    note = unused_facts_note(repl.engine.strategy.name)
    for key, value in pairs:
        # Read afresh: an earlier pair of this very line may have stored the key.
        existing = find_facts(state.live_facts(), key)
        if existing and scope == "user" and existing[0].scope == "session":
            state.store.forget_fact(existing[0].id)  # promoted: one fact, one key
            existing = []
        fact = state.store.upsert_fact(
            existing[0].key if existing else key, value,
            scope=existing[0].scope if existing else scope,
            user=state.user, session_id=state.session_id, source_session_id=state.session_id,
        )
        # Stated again without --for, a fact is kept until forgotten.
        fact = repl.engine.store.set_fact_expiry(fact.id, ends)
        until = f", until {ends[:16].replace('T', ' ')} UTC" if ends else ""
        repl.notice(f"remembered fact {fact.id}: {fact.key} = {fact.value} ({fact.scope}"
                    f"{until})" + (f"; {note}" if note else ""))


def _option_value(args: list[str], option: str) -> tuple[list[str], str | None]:
    """`args` without `option VALUE`, and VALUE (None when the option is not there)."""
    if option not in args:
        return args, None
    at = args.index(option)
    if at + 1 >= len(args):
        raise SLASH["/remember"].usage_error(f"{option} needs a value, e.g. {option} 7d")
    return args[:at] + args[at + 2:], args[at + 1]


@slash("/forget", "/forget ID|KEY|PIN",
       "forget a fact, or unpin a pinned detail (p3 or its text): it never reaches a context again",
       example="/forget order id", args=(1, None), completes="fact")
def _forget(repl: Chat, args: list[str]) -> None:
    ref = " ".join(args).strip()
    if not ref:
        raise SLASH["/forget"].usage_error("missing ID|KEY|PIN (see /facts)")
    state = repl.engine.state
    chosen = one_to_forget(ref, state.live_facts(),
                           pins.pinned_facts(state.store, state.session_id),
                           narrow="give an id (see /facts)")
    if chosen is None:
        raise NotFound(f"no fact {ref!r} in this session; /facts lists them")
    if isinstance(chosen, pins.PinnedFact):
        pins.unpin(state.store, chosen)
        repl.notice(f"unpinned {chosen.ref or chosen.text}: {chosen.text} ({chosen.source}); "
                    "not pinned again")
    else:
        state.store.forget_fact(chosen.id)
        repl.notice(f"forgot fact {chosen.id}: {chosen.key}")
