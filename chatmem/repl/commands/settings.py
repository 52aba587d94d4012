"""REPL commands for what the next turns run with: /system /model /budget.

None of them touches the history: earlier turns stay as they were sent.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from chatmem import render
from chatmem.repl.chat import Chat, strategy_label
from chatmem.repl.table import SLASH, slash, split_words

if TYPE_CHECKING:
    from chatmem.memory.context import Context

_QUOTE_PAIRS = {"“": "”", "＂": "＂", "‘": "’", "＇": "＇"}
"""The quotes a Chinese or Japanese input method types for " and ': opening, closing."""


def typed_text(repl: Chat) -> str:
    """The arguments as typed, spacing kept; a wholly quoted text loses its quotes.

    `/system "Be brief."` means the text Be brief., and `/system ""` means no text; so do
    `/system “Be brief.”` and `/system “”`, the quotes an input method types for them.
    """
    raw = repl.raw_args.strip()
    if len(raw) < 2:
        return raw
    close = _QUOTE_PAIRS.get(raw[0])
    if close is not None:
        inner = raw[1:-1]
        if raw[-1] == close and raw[0] not in inner and close not in inner:
            return inner
        return raw
    if raw[0] == raw[-1] and raw[0] in "\"'":
        try:
            words = split_words(raw)
        except ValueError:
            return raw
        if len(words) <= 1:
            return words[0] if words else ""
    return raw


@slash("/system", "/system [TEXT]",
       "show the system prompt, set it for the next turns, or clear it with /system \"\"",
       example="/system Answer in one sentence.", args=(0, None))
def _system(repl: Chat, args: list[str]) -> None:
    engine = repl.engine
    if not repl.raw_args.strip():
        current = engine.session.system
        repl.show(render.key_values({"system prompt": current if current else "(none)"}))
        return
    text = typed_text(repl).strip()
    unsaved = engine.set_system(text or None)
    untouched = "the history is untouched: earlier turns stay as they were sent"
    if not text:
        repl.notice(f"system prompt cleared for the next turns; {untouched}")
    else:
        tokens = engine.counter.count_message("system", text)
        repl.notice(f"system prompt set for the next turns ({tokens} tokens); {untouched}")
    if unsaved is not None:
        repl.notice(render.notice_text(unsaved))


@slash("/model", "/model [NAME]",
       "show the model, or switch to NAME for the next turns (local: a GGUF file); "
       "the history is untouched",
       example="/model gpt-4o-mini", args=(0, None), completes="model")
def _model(repl: Chat, args: list[str]) -> None:
    old = repl.engine
    if not args:
        repl.show(render.key_values({"model": f"{old.provider.name}:{old.provider.model}"}))
        return
    name = typed_text(repl).strip()
    if not name:
        raise SLASH["/model"].usage_error("the model name is empty")
    repl.open(repl.address, model=name)
    new = repl.engine.provider
    repl.notice(f"model: {old.provider.name}:{old.provider.model} → {new.name}:{new.model} "
                "for the next turns; the history is untouched")


@slash("/template", "/template [NAME]",
       "list the templates, or apply NAME (its system prompt, model, strategy and options) "
       "to the next turns", example="/template translate", args=(0, 1), completes="template")
def _template(repl: Chat, args: list[str]) -> None:
    from chatmem.config.templates import find_template, known_templates
    from chatmem.engine.opening import with_config_table
    from chatmem.errors import ChatmemError

    engine = repl.engine
    if engine.settings is None:
        raise ChatmemError("this chat was started without settings; restart it with "
                           "chatmem chat")
    if not args:
        known = known_templates(engine.settings)
        repl.notice(f"templates: {', '.join(known)}" if known else
                    "no templates yet: add [templates.NAME] to the config")
        return
    template = find_template(engine.settings, args[0], repl.workspace.registries)
    strategies = repl.workspace.registries.strategies
    # As `chat -t` does: the template's strategy text, then the config's table for it.
    strategy = (strategies.create(with_config_table(strategies.parse(template.strategy),
                                                    engine.settings, strategies))
                if template.strategy else None)
    if template.model is not None or template.options:
        repl.open(repl.address, model=template.model, options=template.options)
    unsaved = []
    if strategy is not None:
        unsaved.append(repl.engine.set_strategy(strategy))
    if template.system is not None:
        unsaved.append(repl.engine.set_system(template.system or None))
    provider = repl.engine.provider
    repl.notice(f"template {template.name}: {provider.name}:{provider.model}, "
                f"{strategy_label(repl.engine)} for the next turns; the history is untouched")
    for notice in unsaved:
        if notice is not None:
            repl.notice(render.notice_text(notice))


@slash("/budget", "/budget [N]",
       "show or set the context budget (tokens) for strategies without their own, this chat only",
       example="/budget 8000", args=(0, 1))
def _budget(repl: Chat, args: list[str]) -> None:
    engine = repl.engine
    if args:
        value = args[0].replace(",", "").replace("_", "")
        if not re.fullmatch(r"\d+", value) or int(value) < 1:
            raise SLASH["/budget"].usage_error(
                f"N must be a whole number of tokens, at least 1; got {args[0]!r}")
        repl.note_budget(_refuse_below_the_fixed_parts(repl, int(value)))
    shown = f"{engine.budget:,} tokens" if engine.budget is not None else "none"
    line = (f"context budget: {shown}; strategies without a budget of their own are measured"
            " against it")
    own = _own_budget(repl)
    if own is not None:
        line += f"; {engine.strategy.name} fits its context to its own budget of {own:,} tokens"
    if args:
        line += " (this chat only; the config key context_budget sets the default)"
    repl.notice(line)


def _refuse_below_the_fixed_parts(repl: Chat, budget: int) -> Context | None:
    """Set `budget`, unless the system prompt and the chat format alone exceed it: accepted,
    `/budget 10` under a 21-token system prompt refused only the next message, after it was
    typed. Refused, the budget stays as it was and the error names the system prompt's
    tokens. Under --allow-over-budget the turn sends it anyway, saying so: set. The context
    built to check it, for the toolbar (None: none was)."""
    from chatmem.errors import ChatmemError, OverBudget, UsageError

    engine = repl.engine
    before = engine.budget
    engine.budget = budget
    if engine.allow_over_budget:
        return None
    try:
        context = engine.build_context("")
        if context.budget == budget:  # not a strategy's own budget
            engine.check_budget(context)
        return context
    except OverBudget as e:
        engine.budget = before
        kept = f"{before:,} tokens" if before is not None else "none"
        system = dict(e.fixed).get("system")
        prompt = f"the system prompt is {system:,} tokens, " if system else ""
        raise UsageError(
            f"/budget {budget:,} leaves no room for a message: {prompt}{e.total:,} "
            f"with the chat format and an empty message; the budget stays {kept}"
            + (" (/system shortens the prompt)" if system else "")) from None
    except ChatmemError:
        return None  # anything else: the turn meets it and says so, as note_budget leaves it


def _own_budget(repl: Chat) -> int | None:
    """The strategy's own budget (tokens, summary-buffer), or None when it uses the shared one."""
    budget = getattr(repl.engine.strategy, "budget", None)
    if budget is None:
        return None
    request = dataclasses.replace(repl.engine.request("…"), budget=None)
    own = budget(request)
    return int(own) if own is not None else None
