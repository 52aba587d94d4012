"""How what opening a session changed is worded (chatmem.session_notices): its strategy,
model, saved parameters or system prompt, and a change held for one run alone.
chatmem.render.notices words every notice and hands these here, to say after `session `;
a client of the servers reads them after `conversation ` (chatmem.render.client_notices).
"""

from __future__ import annotations

from functools import singledispatch

from chatmem.session_notices import (
    ModelChanged,
    SavedParamsDropped,
    SettingsNotSaved,
    StrategyChanged,
    SystemPromptReplaced,
)

SessionNotice = (StrategyChanged | ModelChanged | SettingsNotSaved | SavedParamsDropped
                 | SystemPromptReplaced)


def session_notice_text(notice: SessionNotice, *, flags: bool = True) -> str:
    """One line for `notice`, opening with the session's name; none has REPL-only advice.
    `flags` False: no command-line flag is named (a client of the servers has none to
    give)."""
    return _said(notice, flags)


@singledispatch
def _said(notice: object, flags: bool) -> str:
    raise TypeError(f"no wording for {type(notice).__name__}")


@_said.register
def _(n: StrategyChanged, flags: bool) -> str:
    return (f"{n.session}: strategy {n.before} → {n.after}"
            f"{for_this_call(n.kept, n.owner, flags=flags)}")


@_said.register
def _(n: ModelChanged, flags: bool) -> str:
    by = f" ({n.by})" if n.by else ""
    if n.owner is not None:
        return (f"{n.session} ran on {n.before}; this run runs on {n.after}{by}"
                f" ({not_saved(n.owner)})")
    return f"{n.session} ran on {n.before}; its next turns run on {n.after}{by}"


@_said.register
def _(n: SettingsNotSaved, flags: bool) -> str:
    return f"{n.session}: {n.what} for this chat only ({not_saved(n.owner)})"


def not_saved(owner: str) -> str:
    """Why a grantee's choice of strategy, system prompt or model holds for their run alone:
    one wording for the CLI, the REPL and the servers."""
    return f"not saved: only {owner}, its owner, changes the session's settings"


@_said.register
def _(n: SavedParamsDropped, flags: bool) -> str:
    left_out = [*(f"{p} (no longer a parameter of it)" for p in n.unknown),
                *(f"{p} (refused now: the default is used)" for p in n.refused)]
    return (f"{n.session} was saved by another version of strategy {n.strategy}; "
            f"left out {', '.join(left_out)}")


@_said.register
def _(n: SystemPromptReplaced, flags: bool) -> str:
    return (f"{n.session}: system prompt replaced ({n.before_chars} → {n.after_chars} "
            f"characters){for_this_call(n.kept, n.owner, flags=flags)}")


def for_this_call(kept: bool, owner: str | None = None, *, flags: bool = True) -> str:
    if owner is not None:
        return f" for this call ({not_saved(owner)})"
    return "" if kept else " for this call (--save keeps it)" if flags else " for this call"
