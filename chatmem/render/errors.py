"""Errors as the user reads them: one line each. Most errors carry their sentence; those
that carry values (the numbers of an input over the budget) are worded here."""

from __future__ import annotations

from functools import singledispatch

from chatmem.errors import ChatmemError, ExtensionFailed, OverBudget


@singledispatch
def error_text(error: ChatmemError) -> str:
    """The one line `error` is shown as."""
    return str(error)


@error_text.register
def _(error: OverBudget) -> str:
    parts = " + ".join(f"{kind} {tokens:,}" for kind, tokens in error.fixed)
    return (f"not sent: {parts} + chat format {error.priming:,} = {error.total:,} tokens, over "
            f"the context budget of {error.budget:,}, before any history; shorten the input or "
            "the system prompt, raise the budget (/budget N, context_budget, the strategy's "
            "max_tokens), or send it anyway with --allow-over-budget")


@error_text.register
def _(error: ExtensionFailed) -> str:
    return f"{error}{by_plugin(error.kind, error.name)}"


def by_plugin(kind: str, name: str) -> str:
    """` (plugin echo (chatmem-echo 0.1.0))` for what a plugin registered, else nothing:
    when its code fails, that is whom to tell."""
    from chatmem.plugins import load_registries, registered_by

    source = load_registries().origin(kind, name)
    return "" if source is None or source.builtin else f" ({registered_by(source)})"
