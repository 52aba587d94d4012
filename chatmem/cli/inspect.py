"""`chatmem inspect`: the exact context of a turn, what would be sent next, or a what-if.

`--json` prints one object (stable; add fields, never rename them):

    session          session name
    mode             "turn" (a recorded turn), "next" (--next under the session's
                     strategy) or "what-if" (--strategy/--param)
    command          "inspect"
    turn             the recorded turn: number, status, error, input, reply, strategy
                     {name, params, label}, provider, model, tokenizer, estimated_tokens,
                     prompt_tokens, completion_tokens, latency_ms, created_at (null for --next)
    strategy         name, params and label of the strategy of the context shown
    tokenizer        name, exact, recorded, note: what the context's counts were counted
                     with (the turn's own for a recorded turn; the session's recorded
                     tokenizer for --next and what-ifs unless --provider/--model)
    input            the user input the context ends with
    context          tokens, budget, dropped, warnings, parts[kind, reason, tokens,
                     messages[role, content, tokens, id, turn]]
    messages         the chat messages exactly as sent (role, content)
    rendered_prompt  the prompt text the local model rendered, or null
    replayed         for a what-if: turns replayed and model calls the strategy made (turns 0:
                     a strategy without summaries or facts builds from the stored history)

With --summaries: {"command": "inspect", "mode": "summaries", "session",
"summaries": [version, strategy, created_at, covered_messages, covered_turn, tokens,
anchors, dropped_anchors, model, text]};
covered_turn is the last turn the version covers (it covers turns 1 to it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from chatmem.cli.opening import open_store, reproducing_provider, settings_from, shared_embedder
from chatmem.cli.options import (
    ConfigOption,
    DbOption,
    JsonOption,
    ModelOption,
    ParamOption,
    ProviderOption,
    SessionAlias,
    StrategyOption,
    given_once,
    one_session,
    strategy_choice,
)
from chatmem.cli.output import consoles, handles_errors, print_json, strategy_json

if TYPE_CHECKING:
    from chatmem.config.settings import Settings
    from chatmem.evaluation.recording import Tokenizer
    from chatmem.memory.context import Context
    from chatmem.store import SessionRecord, Store, TurnRecord

TURN_FIELDS = ("number", "status", "error", "input", "reply", "provider", "model", "tokenizer",
               "estimated_tokens", "prompt_tokens", "completion_tokens", "latency_ms",
               "created_at", "superseded_by")


@handles_errors
def inspect(
    session: Annotated[str | None, typer.Argument(
        metavar="SESSION", show_default=False, help="Session name.")] = None,
    turn_word: Annotated[int | None, typer.Argument(
        metavar="TURN", min=1, show_default=False,
        help="Turn number, as --turn gives it (default: the last turn).")] = None,
    session_option: SessionAlias = None,
    turn: Annotated[
        int | None, typer.Option("--turn", "-t", min=1, show_default=False, metavar="N",
                                 help="Turn number (default: the last turn).")
    ] = None,
    next_text: Annotated[
        str | None, typer.Option("--next", show_default=False,
                                 help="Show what WOULD be sent for this input; no model call.")
    ] = None,
    strategy: StrategyOption = None,
    param: ParamOption = None,
    summaries: Annotated[
        bool, typer.Option("--summaries", help="List the session's summary versions.")
    ] = False,
    with_user_facts: Annotated[
        bool, typer.Option("--with-user-facts",
                           help="Let a what-if read your user-profile facts (default: this "
                                "session's own).")
    ] = False,
    json_out: JsonOption = False,
    provider: ProviderOption = None,
    model: ModelOption = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Show the exact context of a turn, part by part, with tokens, reasons and budget.

    --next and what-ifs count with the tokenizer the session was recorded with
    (and call its model for summaries or facts) unless --provider or --model is given.

    Example: chatmem inspect support 12 --strategy window --param k=2
    """
    from chatmem.errors import UsageError

    session = one_session(session, session_option)
    if session is None:
        raise UsageError("missing argument SESSION (or --session SESSION)")
    turn = given_once(turn_word, turn, noun="turn", flag="--turn")
    if next_text is not None and not next_text.strip():
        raise UsageError("--next needs the input to show (empty input)")
    settings = settings_from(config, db, provider, model)
    with open_store(settings, create=False) as store:
        record = store.session(session)
        if summaries:
            _summaries(store, record, json_out)
            return
        strategy, params = strategy_choice(strategy, param)
        explicit = provider is not None or model is not None
        if strategy is None and not params:
            if next_text is None:
                data, context, approximate = _recorded(store, record, turn)
            else:
                data, context, approximate = _next(store, record, settings, next_text, explicit)
        else:
            data, context, approximate = _what_if(
                store, record, settings, turn, next_text, strategy or record.strategy, params,
                explicit=explicit, with_user_facts=with_user_facts)
    if json_out:
        print_json(data)
        return
    _show(data, context, approximate)


def _turn_json(turn: TurnRecord) -> dict[str, Any]:
    return {**{k: getattr(turn, k) for k in TURN_FIELDS},
            "strategy": strategy_json(turn.strategy, turn.params)}


def _payload(session: str, mode: str, context: Context, *, text: str, strategy: str,
             params: dict[str, Any], tokenizer: Tokenizer, turn: TurnRecord | None = None,
             replayed: dict[str, Any] | None = None) -> dict[str, Any]:
    from chatmem.render.notices import notice_text
    from chatmem.render.reasons import dropped_text, reason_text, verdict_text

    stored = context.to_json()
    return {
        "command": "inspect",
        "session": session,
        "mode": mode,
        "turn": _turn_json(turn) if turn else None,
        "strategy": strategy_json(strategy, params),
        "tokenizer": tokenizer.to_json(),
        "input": text,
        # Reasons, notes and warnings as the user reads them; the stored turn keeps values.
        "context": {**stored,
                    "dropped": dropped_text(context.dropped) or None,
                    "warnings": [notice_text(w) for w in context.warnings],
                    "parts": [{**part, "reason": reason_text(p.reason)}
                              for part, p in zip(stored["parts"], context.parts, strict=True)],
                    **({"recall": [{**row, "why": verdict_text(row)} for row in context.recall]}
                       if context.recall else {})},
        "messages": context.messages(),
        "rendered_prompt": turn.rendered_prompt if turn else None,
        "replayed": replayed,
    }


def _recorded(store: Store, session: SessionRecord,
              number: int | None) -> tuple[dict[str, Any], Context, bool]:
    from chatmem.evaluation.recording import Tokenizer
    from chatmem.memory.context import Context

    turn = store.turn(session.id, number)
    context = Context.from_json(turn.context)
    approximate = bool(turn.context.get("approximate", False))
    tokenizer = Tokenizer(turn.tokenizer or "unknown", not approximate, turn.tokenizer)
    data = _payload(session.name, "turn", context, text=turn.input, strategy=turn.strategy,
                    params=turn.params, tokenizer=tokenizer, turn=turn)
    return data, context, approximate


def _next(store: Store, session: SessionRecord, settings: Settings,
          text: str, explicit: bool) -> tuple[dict[str, Any], Context, bool]:
    from chatmem.engine import Engine, resolve_strategy
    from chatmem.evaluation.recording import describe_counter

    chosen = resolve_strategy(settings, None, {}, session)
    with reproducing_provider(settings, session, explicit) as llm:
        engine = Engine(store, session, llm, chosen, budget=settings.context_budget,
                        embedder=shared_embedder(settings, [chosen]))
        context = engine.build_context(text)
        tokenizer = describe_counter(engine.counter, session.tokenizer)
    data = _payload(session.name, "next", context, text=text, strategy=chosen.name,
                    params=dict(chosen.params), tokenizer=tokenizer)
    return data, context, not tokenizer.exact


def _history_before(store: Store, session: SessionRecord, turn: TurnRecord) -> int:
    """How many history turns existed when `turn` was sent."""
    if turn.history_turn is not None:
        return turn.history_turn - 1
    earlier = [t.history_turn for t in store.turns(session.id, status="ok")
               if t.number < turn.number and t.history_turn is not None]
    return max(earlier, default=0)


def _what_if(store: Store, session: SessionRecord, settings: Settings, number: int | None,
             text: str | None, strategy: str, params: dict[str, str], *, explicit: bool,
             with_user_facts: bool) -> tuple[dict[str, Any], Context, bool]:
    from chatmem.engine import Engine
    from chatmem.evaluation.recording import describe_counter
    from chatmem.evaluation.replay import StrategySpec
    from chatmem.evaluation.whatif import what_if
    from chatmem.render.progress import ConsoleActivity

    spec = StrategySpec(strategy, params)
    chosen = spec.create()  # bad names or params fail before any work is done
    turn = None
    if text is None:
        turn = store.turn(session.id, number)
        text = turn.input
        history_turns = _history_before(store, session, turn)
    else:
        history_turns = store.turn_count(session.id)
    # The system prompt the turn was sent with (for --next, the one in effect now).
    system = store.system_for_turn(session.id, history_turns + 1)
    user = session.user if with_user_facts else None
    with reproducing_provider(settings, session, explicit) as llm:
        if turn is None and strategy == session.strategy:
            # The session already keeps this strategy's state: use it as it is.
            engine = Engine(store, session, llm, chosen, budget=settings.context_budget,
                            embedder=shared_embedder(settings, [chosen]))
            context = engine.build_context(text)
            replayed = None
        else:
            facts = [f for f in store.facts(user=user) if f.scope == "user"] if user else []
            result = what_if(store, session, chosen, text, history_turns=history_turns,
                             system=system, chat_provider=llm,
                             budget=settings.context_budget, user=user, user_facts=facts,
                             embedder=shared_embedder(settings, [chosen]),
                             activity=ConsoleActivity(consoles()[1], "Ctrl-C stops it"))
            context = result.context
            replayed = {"turns": result.replayed, "strategy_model_calls": result.model_calls}
        tokenizer = describe_counter(llm.token_counter(), session.tokenizer)
    data = _payload(session.name, "what-if", context, text=text, strategy=chosen.name,
                    params=dict(chosen.params), tokenizer=tokenizer, turn=turn,
                    replayed=replayed)
    return data, context, not tokenizer.exact


def _summaries(store: Store, session: SessionRecord, json_out: bool) -> None:
    from chatmem.render.inspect import summaries_view
    from chatmem.render.summary import covered_turn
    from chatmem.tokens import counter_for_model

    counter = counter_for_model(session.model)
    turn_of = {m.id: m.turn for m in store.messages(session.id)}
    rows = [
        {"version": s.version, "strategy": s.strategy, "created_at": s.created_at,
         "covered_messages": len(s.covered_ids),
         "covered_turn": covered_turn(s, turn_of),
         "tokens": counter.count_text(s.text),
         "anchors": s.anchors, "dropped_anchors": s.dropped_anchors, "model": s.model,
         "text": s.text}
        for s in store.summaries(session.id)
    ]
    if json_out:
        print_json({"command": "inspect", "mode": "summaries", "session": session.name,
                    "summaries": rows})
        return
    out = consoles()[0]
    if not rows:
        out.print(f"session {session.name!r} has no summaries yet", markup=False)
        return
    out.print(summaries_view(rows))


def _show(data: dict[str, Any], context: Context, approximate: bool) -> None:
    from chatmem.render.inspect import inspect_view

    turn = data["turn"] or {}
    tokenizer = data["tokenizer"]
    counted = f"{tokenizer['name']} ({'exact' if tokenizer['exact'] else 'approximate'})"
    info = {
        "session": data["session"],
        "turn": turn.get("number"),
        "status": turn.get("status"),
        "error": turn.get("error"),
        # Replaced by /retry or /edit-last: stored, out of memory.
        "superseded by": f"turn {turn['superseded_by']}" if turn.get("superseded_by") else None,
        "strategy": data["strategy"]["label"],
        "model": " / ".join(str(v) for v in (turn.get("provider"), turn.get("model")) if v),
        "tokenizer": f"{counted}; {tokenizer['note']}" if tokenizer["note"] else counted,
        "latency": f"{turn['latency_ms'] / 1000:.2f} s" if turn.get("latency_ms") else None,
        "input": data["input"],
    }
    replayed = data["replayed"]
    if replayed and replayed["turns"]:
        info["what-if"] = (f"replayed {replayed['turns']:,} turns in memory; "
                           f"{replayed['strategy_model_calls']:,} strategy model calls")
    elif replayed:
        info["what-if"] = "built from the stored history (nothing to replay)"
    title = {"turn": "recorded turn", "next": "would be sent next",
             "what-if": "what-if"}[data["mode"]]
    estimated, reported = turn.get("estimated_tokens"), turn.get("prompt_tokens")
    rendered, label = data["rendered_prompt"], "estimated"
    if data["mode"] == "what-if":
        # The recorded turn's counts belong to another context: label them, don't mix them in.
        if turn:
            info["recorded turn"] = _recorded_counts(turn)
        estimated = reported = rendered = None
        label = "what-if estimated"
    consoles()[0].print(inspect_view(
        info, context, approximate=approximate, estimated=estimated, reported=reported,
        rendered_prompt=rendered, title=title, estimate_label=label,
    ))


def _recorded_counts(turn: dict[str, Any]) -> str:
    """`turn 30 (summary-buffer): estimated 1,193 · provider reported 1,201`."""
    def count(value: int | None) -> str:
        return "–" if value is None else f"{value:,}"

    return (f"turn {turn['number']} ({turn['strategy']['name']}): estimated"
            f" {count(turn['estimated_tokens'])} · provider reported"
            f" {count(turn['prompt_tokens'])}")
