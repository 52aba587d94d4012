"""`chatmem inspect`: the exact context of a turn, what would be sent next, or a what-if.

`--json` prints one object (stable; add fields, never rename them):

    session          session name
    mode             "turn" (a recorded turn), "next" (--next under the session's
                     strategy) or "what-if" (--strategy/--param)
    command          "inspect"
    turn             the recorded turn: number, status, error, input, reply, strategy
                     {name, params, label}, provider, model, tokenizer, estimated_tokens,
                     prompt_tokens, completion_tokens, latency_ms, created_at (null for --next,
                     and for a what-if at an imported or forked turn, none recorded)
    history_turn     that imported or forked turn's number in the history, else null
    strategy         name, params and label of the strategy of the context shown
    tokenizer        name, exact, recorded, note: what the context's counts were counted
                     with (the turn's own for a recorded turn; the session's recorded
                     tokenizer for --next and what-ifs unless --provider/--model)
    input            the user input the context ends with
    context          tokens, budget, dropped, warnings, parts[kind, reason, tokens,
                     messages[role, content, tokens, id, external_id, turn]]; id is
                     the stored row's, external_id the transcript's (what eval's found_ids
                     name; null for a message without one)
    messages         the chat messages exactly as sent (role, content)
    rendered_prompt  the prompt text the local model rendered, or null
    replayed         for a what-if: the turns its summaries or facts were rebuilt from in one
                     catch-up (not turn by turn as replay and eval: they can differ) and
                     the model calls that made (turns 0: a strategy without summaries or
                     facts builds from the stored history, as a replay would); for --next,
                     the catch-up the next turn starts with when none is stored yet

With --summaries: {"command": "inspect", "mode": "summaries", "session",
"summaries": [version, strategy, created_at, covered_messages, covered_turn, tokens,
anchors, dropped_anchors, model, text]};
covered_turn is the last turn the version covers (it covers turns 1 to it).
"""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from chatmem.cli.completion import session_names
from chatmem.cli.opening import open_workspace, say_notice, settings_from
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
from chatmem.cli.output import consoles, handles_errors, print_json

if TYPE_CHECKING:
    from datetime import tzinfo

    from chatmem.app.summaries import SummaryVersion
    from chatmem.memory.context import Context


@handles_errors
def inspect(
    session: Annotated[str | None, typer.Argument(
        metavar="SESSION", show_default=False, help="Session name.",
        autocompletion=session_names)] = None,
    turn_word: Annotated[int | None, typer.Argument(
        metavar="TURN", min=1, show_default=False,
        help="Turn number, as --turn gives it (default: the last turn).")] = None,
    session_option: SessionAlias = None,
    turn: Annotated[
        int | None, typer.Option("--turn", "-t", min=1, show_default=False, metavar="N",
                                 help="Turn number (default: the last turn).")
    ] = None,
    request: Annotated[
        int | None, typer.Option("--request", min=1, show_default=False, metavar="N",
                                 help="The Nth request sent in the session, as logs --json "
                                      "numbers it: also a failed or replaced attempt, which "
                                      "a turn number no longer reaches.")
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

    \b
    Example: chatmem inspect support 12 --strategy window --param k=2
    """
    from chatmem.app.inspection import inspect_next, inspect_turn, inspect_what_if
    from chatmem.app.summaries import summary_versions
    from chatmem.errors import NotFound, TurnNotRecorded, UsageError
    from chatmem.render.payloads import inspection_json
    from chatmem.render.progress import ConsoleActivity

    session = one_session(session, session_option)
    if session is None:
        raise UsageError("missing argument SESSION (or --session SESSION)")
    turn = given_once(turn_word, turn, noun="turn", flag="--turn")
    if request is not None and (turn is not None or next_text is not None or strategy
                                or param or summaries):
        raise UsageError("--request shows one recorded request as it was sent: give it"
                         " without a turn, --next, --strategy, --param or --summaries")
    if next_text is not None and not next_text.strip():
        raise UsageError("--next needs the input to show (empty input)")
    settings = settings_from(config, db, provider, model)
    spec, params = strategy_choice(strategy, param)
    explicit = provider is not None or model is not None
    with open_workspace(settings, create=False) as ws:
        if summaries:
            address, versions = summary_versions(ws, session)
            _summaries(address, versions, json_out, ws.settings.zone)
            return
        if spec is not None or params:
            seen = inspect_what_if(
                ws, session, spec, params, number=turn, text=next_text, explicit=explicit,
                with_user_facts=with_user_facts,
                activity=ConsoleActivity(consoles()[1], "Ctrl-C stops it"))
        elif next_text is not None:
            seen = inspect_next(ws, session, next_text, explicit=explicit, catch_up=True,
                                activity=ConsoleActivity(consoles()[1], "Ctrl-C stops it"))
        else:
            try:
                seen = inspect_turn(ws, session, turn, request=request)
            except TurnNotRecorded as error:
                raise NotFound(f"{error}; --strategy NAME shows what a strategy would send"
                               " at it, --next TEXT what would be sent next") from None
    for notice in seen.notices:  # on stderr: --json stays one document
        say_notice(notice)
    data = inspection_json(seen)
    if json_out:
        print_json(data)
        return
    _show(data, seen.context, seen.approximate, seen.recall_texts)


def _summaries(address: str, versions: "list[SummaryVersion]", json_out: bool,
               zone: "tzinfo") -> None:
    from chatmem.render.inspect import summaries_view
    from chatmem.render.payloads import summaries_json, summary_row

    if json_out:
        print_json(summaries_json(address, versions))
        return
    if not versions:
        # An empty list said on stderr, stdout left empty, as logs and sessions list do.
        consoles()[1].print(f"session {address!r} has no summaries yet", markup=False,
                            soft_wrap=True)
        return
    consoles()[0].print(summaries_view([summary_row(v) for v in versions], zone))


def _show(data: dict[str, Any], context: "Context", approximate: bool,
          recall_texts: Mapping[int, str]) -> None:
    from chatmem.render.counts import counted
    from chatmem.render.inspect import inspect_view

    turn = data["turn"] or {}
    tokenizer = data["tokenizer"]
    how = f"{tokenizer['name']} ({'exact' if tokenizer['exact'] else 'approximate'})"
    info = {
        "session": data["session"],
        "turn": turn.get("number") or _history_turn(data["history_turn"]),
        "status": turn.get("status"),
        "error": turn.get("error"),
        # Replaced by /retry or /edit-last: stored, out of memory.
        "superseded by": (f"request {turn['superseded_by']}, a later attempt at this turn"
                          if turn.get("superseded_by") else None),
        "strategy": data["strategy"]["label"],
        "model": " / ".join(str(v) for v in (turn.get("provider"), turn.get("model")) if v),
        "tokenizer": f"{how}; {tokenizer['note']}" if tokenizer["note"] else how,
        "latency": f"{turn['latency_ms'] / 1000:.2f} s" if turn.get("latency_ms") else None,
        "input": data["input"],
        # A group chat's member, as the request named them: the label in the text is anyone's.
        "speaker": data["speaker"],
    }
    replayed = data["replayed"]
    if replayed and data["mode"] == "next":
        # The session holds none of its strategy's memory yet: the next turn makes it first.
        info["memory"] = (f"none stored yet: rebuilt in memory from "
                          f"{counted(replayed['turns'], 'turn')}, as the next turn first does"
                          f" ({counted(replayed['strategy_model_calls'], 'strategy model call')})")
    elif replayed and replayed["turns"]:
        # One catch-up over every turn, not an update after each as replay and eval make:
        # a summary of 79 turns at once is not the one they had at turn 80.
        info["what-if"] = (f"rebuilt in memory from {counted(replayed['turns'], 'turn')} in one"
                           " catch-up ("
                           f"{counted(replayed['strategy_model_calls'], 'strategy model call')}); "
                           "replay and eval update turn by turn, so their summaries can differ")
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
        recall_texts=recall_texts,
    ))


def _history_turn(number: int | None) -> str | None:
    return None if number is None else f"{number} (imported or forked: no context recorded)"


def _recorded_counts(turn: dict[str, Any]) -> str:
    """`turn 30 (summary-buffer): estimated 1,193 · provider reported 1,201`."""
    def count(value: int | None) -> str:
        return "–" if value is None else f"{value:,}"

    return (f"turn {turn['number']} ({turn['strategy']['name']}): estimated"
            f" {count(turn['estimated_tokens'])} · provider reported"
            f" {count(turn['prompt_tokens'])}")
