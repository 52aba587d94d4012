"""REPL commands for sessions: /new /sessions /switch /fork /undo /retry /system /export /budget.

Messages are append-only: /undo and /retry never delete or replace a stored
turn; they branch with a fork instead. Switching builds the other session's
engine through `chatmem.engine.open_session`, the path `chatmem chat` takes.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from chatmem import render
from chatmem.errors import ChatmemError, NotFound, UsageError
from chatmem.memory.params import format_params
from chatmem.repl.chat import Chat, strategy_label
from chatmem.repl.table import slash


def _notice(repl: Chat, text: str) -> None:
    # Status goes to stderr like the turn's token line: stdout carries replies and listings.
    repl.errors.print(render.notice_line(text), soft_wrap=True)


def _raw_text(repl: Chat, args: list[str]) -> str:
    # The line as typed (quotes and spacing kept) when the REPL recorded it.
    return repl.raw_args or " ".join(args)


def _describe(repl: Chat) -> str:
    engine = repl.engine
    turns = engine.store.turn_count(engine.session.id)
    return (f"session {engine.session.name} · {strategy_label(engine)}"
            f" · {turns} turn{'' if turns == 1 else 's'}")


def open_in_repl(
    repl: Chat, name: str, *, strategy: str | None = None,
    params: dict[str, Any] | None = None, system: str | None = None,
    model: str | None = None,
) -> None:
    """Make `name` the REPL's session, built the way `chatmem chat NAME` builds it.

    With `model`, the chat runs on a new provider for that model (/model).
    """
    from chatmem.engine import open_session
    from chatmem.providers import create_provider

    old = repl.engine
    if old.settings is None:
        raise ChatmemError("this chat was started without settings; restart it with chatmem chat")
    settings, provider = old.settings, old.provider
    if model is not None:
        settings = dataclasses.replace(settings, provider=provider.name, model=model)
        if provider.name == "local":
            settings.local = {**old.settings.local, "model_path": model}
        provider = create_provider(settings)  # a bad name fails here, the chat goes on as it was
        repl.opened.append(provider)
    new = open_session(old.store, settings, provider, name, strategy=strategy,
                       params=params, system=system)
    if new.helper_model is not new.provider and new.helper_model is not old.helper_model:
        if model is None:
            # The same [summary] settings give the same model; keep the one already
            # open, which `chatmem chat` closes when the REPL ends.
            new.helper_model.close()
            new.helper_model = old.helper_model
        else:
            # Built for the new model's settings: the REPL closes it when it ends.
            repl.opened.append(new.helper_model)
    new.budget = old.budget
    repl.engine = new
    repl.last = None
    for notice in new.notices:
        _notice(repl, notice)


def _one_name(args: list[str], usage: str) -> str:
    if len(args) != 1 or not args[0].strip():
        raise UsageError(f"usage: {usage}")
    return args[0]


@slash("/new", "/new NAME",
       "start a new session with the current strategy and system prompt")
def _new(repl: Chat, args: list[str]) -> None:
    name = _one_name(args, "/new NAME, e.g. /new trip-b")
    if repl.engine.store.find_session(name) is not None:
        raise UsageError(f"a session named {name!r} already exists; /switch {name} resumes it")
    current = repl.engine
    open_in_repl(repl, name, strategy=current.strategy.name,
                 params=dict(current.strategy.params), system=current.session.system)
    _notice(repl, f"new {_describe(repl)}")


@slash("/sessions", "/sessions", "list the sessions in this history file (* = this one)")
def _sessions(repl: Chat, args: list[str]) -> None:
    current = repl.engine.session.name
    rows = [
        {**r, "current": "*" if r["name"] == current else "",
         "params": format_params(r["params"])}
        for r in repl.engine.store.list_sessions()
    ]
    repl.console.print(render.table(
        rows, ["current", "name", "strategy", "params", "messages", "turns"]))


@slash("/switch", "/switch NAME", "resume another session, with its own strategy")
def _switch(repl: Chat, args: list[str]) -> None:
    name = _one_name(args, "/switch NAME (/sessions lists them)")
    if name == repl.engine.session.name:
        _notice(repl, f"already in session {name}")
        return
    if repl.engine.store.find_session(name) is None:
        raise NotFound(f"no session named {name!r}; /sessions lists them, /new {name} creates it")
    open_in_repl(repl, name)
    _notice(repl, f"switched to {_describe(repl)}")


def _fork_and_switch(repl: Chat, name: str, at_turn: int | None) -> None:
    from chatmem.cli.sessions import fork_lines

    report = repl.engine.store.fork_session(repl.engine.session.name, name, at_turn=at_turn)
    for line in fork_lines(report):
        _notice(repl, line)
    open_in_repl(repl, name)
    _notice(repl, f"switched to {_describe(repl)}")


@slash("/fork", "/fork NAME [--at-turn N]",
       "copy this session (up to turn N) into a new session NAME and switch to it")
def _fork(repl: Chat, args: list[str]) -> None:
    usage = "usage: /fork NAME [--at-turn N], e.g. /fork trip-b --at-turn 3"
    at_turn: int | None = None
    rest = list(args)
    if "--at-turn" in rest:
        i = rest.index("--at-turn")
        if i + 1 >= len(rest):
            raise UsageError(f"--at-turn needs a turn number; {usage}")
        value = rest[i + 1]
        if not re.fullmatch(r"-?\d+", value):
            raise UsageError(f"--at-turn must be a whole number, got {value!r}; {usage}")
        at_turn = int(value)
        del rest[i:i + 2]
    if len(rest) != 1:
        raise UsageError(usage)
    _fork_and_switch(repl, rest[0], at_turn)


@slash("/undo", "/undo NAME",
       "messages are append-only: fork the session before its last turn into NAME "
       "and switch to it; the original keeps every turn")
def _undo(repl: Chat, args: list[str]) -> None:
    session = repl.engine.session
    last = repl.engine.store.turn_count(session.id)
    if last == 0:
        raise UsageError(f"nothing to undo: session {session.name} has no messages")
    if not args:
        raise UsageError(
            f"messages are append-only, so /undo never deletes turn {last}; /undo NAME copies "
            f"turns 1–{last - 1} into a new session NAME and switches to it "
            f"(same as /fork NAME --at-turn {last - 1})" if last > 1 else
            "messages are append-only, so /undo never deletes turn 1; /undo NAME starts a new "
            "session NAME with the same settings and no messages (same as /fork NAME --at-turn 0)"
        )
    name = _one_name(args, "/undo NAME")
    _fork_and_switch(repl, name, last - 1)
    _notice(repl, f"turn {last} stays in session {session.name}")


@slash("/retry", "/retry", "send the last input again after a failed or cancelled turn")
def _retry(repl: Chat, args: list[str]) -> None:
    session = repl.engine.session
    try:
        record = repl.engine.store.turn(session.id)
    except NotFound:
        raise UsageError(f"nothing to retry: session {session.name} has no turns") from None
    if record.status == "ok":
        kept = (record.history_turn or 1) - 1
        raise UsageError(
            f"the last turn ({record.number}) succeeded and messages are append-only, so /retry "
            f"does not replace it; to ask again on a branch: /fork NAME --at-turn {kept}"
        )
    why = f": {record.error}" if record.error else ""
    _notice(repl, f"retrying turn {record.number} ({record.status}{why})")
    repl.turn(record.input)


@slash("/system", "/system [TEXT]",
       "show the system prompt, or set it for the next turns (the history is untouched)")
def _system(repl: Chat, args: list[str]) -> None:
    engine = repl.engine
    text = _raw_text(repl, args).strip()
    if not text:
        current = engine.session.system
        repl.console.print(render.key_values(
            {"system prompt": current if current else "(none)"}), soft_wrap=True)
        return
    engine.session = engine.store.update_session(engine.session.id, system=text)
    tokens = engine.counter.count_message("system", text)
    _notice(repl, f"system prompt set for the next turns ({tokens} tokens); the history is "
                  "untouched: earlier turns stay as they were sent")


@slash("/model", "/model [NAME]",
       "show the model, or switch to NAME for the next turns (local: a GGUF file); "
       "the history is untouched")
def _model(repl: Chat, args: list[str]) -> None:
    old = repl.engine
    if not args:
        repl.console.print(render.key_values(
            {"model": f"{old.provider.name}:{old.provider.model}"}), soft_wrap=True)
        return
    open_in_repl(repl, old.session.name, model=_raw_text(repl, args).strip())
    new = repl.engine.provider
    _notice(repl, f"model: {old.provider.name}:{old.provider.model} → "
                  f"{new.name}:{new.model} for the next turns; the history is untouched")


def default_export_name(session: str) -> str:
    """A file name from a session name: letters of any script, digits, - and _ kept."""
    stem = re.sub(r"[^\w.-]+", "-", session, flags=re.UNICODE).strip("-.") or "session"
    return f"{stem}.jsonl"


@slash("/export", "/export [FILE]",
       "write this session as a JSONL transcript (default: NAME.jsonl here); never overwrites")
def _export(repl: Chat, args: list[str]) -> None:
    from chatmem.cli.common import stored_transcript
    from chatmem.transcript import to_jsonl

    session = repl.engine.session
    if len(args) > 1:
        raise UsageError("usage: /export [FILE], e.g. /export trip.jsonl")
    path = Path(args[0]).expanduser() if args else Path(default_export_name(session.name))
    transcript = stored_transcript(repl.engine.store, session)
    try:
        with path.open("x", encoding="utf-8") as out:
            out.write(to_jsonl(transcript))
    except FileExistsError:
        raise UsageError(f"{path} already exists; give another file: /export FILE") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot write: {e.strerror}") from None
    count = len(transcript.messages)
    _notice(repl, f"exported {count} message{'' if count == 1 else 's'} of session "
                  f"{session.name} to {path}")


@slash("/budget", "/budget [N]",
       "show or set the context budget (tokens) for strategies without their own, this chat only")
def _budget(repl: Chat, args: list[str]) -> None:
    engine = repl.engine
    if args:
        value = " ".join(args)
        if not re.fullmatch(r"\d+", value) or int(value) < 1:
            raise UsageError(f"usage: /budget [N] with N a whole number of tokens, at least 1;"
                             f" got {value!r}")
        engine.budget = int(value)
    shown = f"{engine.budget:,} tokens" if engine.budget is not None else "none"
    line = f"context budget: {shown}; strategies without a budget of their own are measured"\
        " against it"
    own = _own_budget(repl)
    if own is not None:
        line += f"; {engine.strategy.name} fits its context to its own budget of {own:,} tokens"
    if args:
        line += " (this chat only; the config key context_budget sets the default)"
    repl.console.print(render.notice_line(line), soft_wrap=True)


def _own_budget(repl: Chat) -> int | None:
    """The strategy's own budget (tokens, summary-buffer), or None when it uses the shared one."""
    budget = getattr(repl.engine.strategy, "budget", None)
    if budget is None:
        return None
    request = dataclasses.replace(repl.engine.request("…"), budget=None)
    own = budget(request)
    return int(own) if own is not None else None
