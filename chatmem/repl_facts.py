"""REPL commands for facts: /facts, /remember, /forget."""

from __future__ import annotations

from chatmem import render
from chatmem.errors import NotFound, UsageError
from chatmem.memory.facts import find_facts, split_key_value
from chatmem.render.facts import fact_row, facts_table
from chatmem.repl import Repl, slash


@slash("/facts", "/facts", "list the facts this session uses (id, key, value, scope, source, age)")
def _facts(repl: Repl, args: list[str]) -> None:
    session = repl.engine.session
    rows = [
        fact_row(f, owner=f"user {f.user}" if f.scope == "user" else f"session {session.name}")
        for f in repl.engine.state.live_facts()
    ]
    repl.console.print(facts_table(rows))


@slash("/remember", "/remember [--session] TEXT",
       "store a fact now (KEY: VALUE, or a statement like 'my name is Ana'); scope user")
def _remember(repl: Repl, args: list[str]) -> None:
    from chatmem.providers.scripted_facts import extract

    session_scope = "--session" in args
    text = " ".join(a for a in args if a != "--session").strip()
    if not text:
        raise UsageError("usage: /remember [--session] TEXT, e.g. /remember budget: 5000 EUR")
    state = repl.engine.state
    pair = split_key_value(text)
    pairs = [pair] if pair else extract(text)[0]
    if not pairs:
        taken = {f.key for f in state.live_facts()}
        key = next(k for n in range(1, len(taken) + 2) if (k := f"note {n}") not in taken)
        pairs = [(key, text)]
    scope = "session" if session_scope or not state.user else "user"
    for key, value in pairs:
        existing = find_facts(state.live_facts(), key)
        fact = state.store.upsert_fact(
            existing[0].key if existing else key, value,
            scope=existing[0].scope if existing else scope,
            user=state.user, session_id=state.session_id,
        )
        repl.console.print(render.notice_line(
            f"remembered fact {fact.id}: {fact.key} = {fact.value} ({fact.scope})"
        ))


@slash("/forget", "/forget ID|KEY", "forget a fact: it never reaches a context again")
def _forget(repl: Repl, args: list[str]) -> None:
    ref = " ".join(args).strip()
    if not ref:
        raise UsageError("usage: /forget ID|KEY, e.g. /forget order id (see /facts)")
    state = repl.engine.state
    matched = find_facts(state.live_facts(), ref)
    if not matched:
        raise NotFound(f"no fact {ref!r} in this session; /facts lists them")
    for fact in matched:
        state.store.forget_fact(fact.id)
        repl.console.print(render.notice_line(f"forgot fact {fact.id}: {fact.key}"))
