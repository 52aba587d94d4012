"""Errors as the user reads them: one line each. Most errors carry their sentence; those
that carry values (the numbers of an input over the budget) are worded here."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from enum import Enum
from functools import singledispatch
from typing import TYPE_CHECKING

from chatmem.errors import (
    ChatmemError,
    ExtensionFailed,
    ModelFrom,
    NoSuchRequest,
    OverBudget,
    ProfileFactClash,
    ProviderConnectionError,
    ProviderError,
    ProviderNotFound,
    ProviderQuotaExhausted,
    ProviderRateLimited,
    ProviderRefusedRequest,
    ProviderTimeout,
    ReadOnlyShare,
    RepeatedStrategy,
    ReplyNotShown,
    SessionGone,
    StrategyFailed,
    StrategyGone,
)
from chatmem.render.counts import listed

if TYPE_CHECKING:
    from chatmem.config.settings import Settings


@singledispatch
def error_text(error: ChatmemError) -> str:
    """The one line `error` is shown as."""
    return str(error)


@error_text.register
def _(error: OverBudget) -> str:
    # A command's way on is a setting or a flag: /budget is the REPL's (repl_error_text).
    flags = " ".join(f"-p {name}=N" for name in error.budget_params)
    way = f"{_own_budget(error)}: {flags}" if flags else "the config's context_budget"
    if flags and error.context_budget_too:
        way += ", and the config's context_budget"
    return (f"{_over_budget(error)}; shorten the input or the system prompt, raise the budget "
            f"({way}), or send it anyway with --allow-over-budget")


@error_text.register
def _(error: NoSuchRequest) -> str:
    held = f"{error.count:,} request{'' if error.count == 1 else 's'}"
    if error.count and error.last != error.count:
        held += f", the last numbered {error.last:,}"  # numbers a purge or /undo left out
    return f"session {error.session!r} has no request {error.number:,} ({held})"


@error_text.register
def _(error: ReadOnlyShare) -> str:
    return (f"{error} (ask {error.owner} to share it with --write, or make your own copy:"
            f" chatmem sessions fork {error.address} NEW-NAME)")


@error_text.register
def _(error: ProfileFactClash) -> str:
    # Pasted as it is: a key of two words ("home city") was two arguments, and without
    # --user the command looked in the configured profile, not the one that clashed.
    command = f"chatmem facts forget {_shell_word(error.key)} --user {_shell_word(error.user)}"
    return (f"user {error.user}'s profile {error.here} has {error.key!r} already"
            f" ({error.held!r}), {error.source} {error.given!r}; forget one ({command}) and"
            f" {error.verb} again")


@error_text.register
def _(error: ProviderNotFound) -> str:
    if error.model_from is ModelFrom.SESSION:
        # The config may name another model: say why this one ran.
        return (f"{error} (session {error.session}'s latest model; --model / -m / /model"
                f" chooses another){_served(error)}")
    return f"{error}{_served(error)}"


SERVED_NAMED = 8
"""Models a 404 for a model names at most (`chatmem models` lists them all)."""


def _served(error: ProviderNotFound, lister: str = "chatmem models") -> str:
    """What the server has, when it listed it: a guessed name (gpt4o, qwen2.5) was a
    round of `chatmem models` away from the right one."""
    if error.served is None:
        return ""
    if not error.served:
        return "; it lists no model"
    named = ", ".join(error.served[:SERVED_NAMED])
    more = len(error.served) - SERVED_NAMED
    return f"; it has {named}" + (f" and {more} more ({lister})" if more > 0 else "")


@error_text.register
def _(error: RepeatedStrategy) -> str:
    if error.first:
        return (f"each --strategy must differ ({error.first} and {error.label} are the same"
                " strategy)")
    return f"each --strategy must differ ({error.label} given twice)"


@error_text.register
def _(error: ReplyNotShown) -> str:
    if error.address is None or error.turn is None:
        return f"{error}; it was a one-off question, kept nowhere"
    return (f"{error}; it is stored as turn {error.turn} of session {error.address!r}"
            f" (`chatmem sessions show {_shell_word(error.address)}` shows it)")


def _shell_word(text: str) -> str:
    """`text` as one shell word: as it is when no shell reads anything in it (城市, Zoë:
    shlex.quote quotes every letter outside ASCII), else quoted."""
    if text and all(c.isalnum() or c in "_@%+=:,./-" for c in text):
        return text
    return shlex.quote(text)


def _own_budget(error: OverBudget) -> str:
    """`the strategy's max_tokens`: only a strategy with a budget of its own has one (window's
    is the context_budget setting, and it refuses -p max_tokens)."""
    return f"the strategy's {' and '.join(error.budget_params)}"


def _over_budget(error: OverBudget) -> str:
    parts = " + ".join(f"{kind} {tokens:,}" + (_files(error) if kind == "files" else "")
                       for kind, tokens in error.fixed)
    return (f"not sent: {parts} + chat format {error.priming:,} = {error.total:,} tokens, over "
            f"the context budget of {error.budget:,}, before any history")


def _files(error: OverBudget) -> str:
    """` (big.txt 6,001, notes.md 1,176)`: which attached file takes the room, largest first."""
    named = [f"{name} {tokens:,}" for name, tokens in error.files]
    return f" ({listed(named)})" if named else ""


class Client(Enum):
    """Who reads an error other than the CLI: each is told the way on it has."""

    MCP = "mcp"
    API = "api"
    """An OpenAI-compatible client of `chatmem serve`."""
    REPL = "repl"
    """The chat's REPL: the CLI's line but where its way on is not a flag (`repl_error_text`)."""


@singledispatch
def _for_a_client(error: ChatmemError, client: Client) -> str:
    """`error_text` without the advice a client cannot take (a REPL command, a CLI flag)."""
    return error_text(error)


@_for_a_client.register
def _(error: OverBudget, client: Client) -> str:
    way = _own_budget(error) if error.budget_params else "context_budget"
    if error.budget_params and error.context_budget_too:
        way += " and context_budget"
    return (f"{_over_budget(error)}; shorten the input or the system prompt, or raise the "
            f"budget ({way})")


@_for_a_client.register
def _(error: RepeatedStrategy, client: Client) -> str:
    return str(error)


@_for_a_client.register
def _(error: ProviderError, client: Client) -> str:
    # An API client is told that the model behind the server failed, and how, but not the
    # server's address for it nor what that server said (internal names, URLs): those are
    # in the serve's own log. MCP's client is the one who runs it.
    if client is not Client.API:
        return error_text(error)
    log = "the details are in chatmem serve's log"
    if isinstance(error, ProviderTimeout):
        return f"the upstream model did not answer in time; {log}"
    if isinstance(error, ProviderConnectionError):
        return f"the upstream model could not be reached; {log}"
    if isinstance(error, ProviderRateLimited):
        return "the upstream model is rate limiting requests (429): wait and try again"
    if isinstance(error, ProviderQuotaExhausted):
        return ("the upstream model's account has no quota left (429 insufficient_quota):"
                " waiting does not help; its owner must check its plan and billing")
    if isinstance(error, ProviderNotFound):
        return (f"the upstream model answered 404: {_not_found_for_a_client(error.model_from)}"
                f"{_served(error, 'GET /v1/models')}")
    if isinstance(error, ProviderRefusedRequest):
        # The field is the client's own to change; the server's words stay in the log: they
        # may name its hosts, paths or settings (a 502's never reach a client either).
        field = f": it does not take the field {error.param!r}" if error.param else ""
        return f"the upstream model refused the request (400){field}; {log}"
    answered = f" (it answered {error.status})" if error.status is not None else ""
    return f"the upstream model failed{answered}; {log}"


def _not_found_for_a_client(model_from: ModelFrom | None) -> str:
    # A request that named no model is not told to check the one it names.
    if model_from is ModelFrom.SESSION:
        return "the conversation's latest turn ran on that model; name a model in the request"
    if model_from is ModelFrom.CONFIGURED:
        return "it is the server's configured model; name a model in the request"
    return "check the model the request names"


@_for_a_client.register
def _(error: ReadOnlyShare, client: Client) -> str:
    return f"{error} (ask {error.owner} to share it for writing)"


@_for_a_client.register
def _(error: StrategyGone, client: Client) -> str:
    way_on = {
        Client.MCP: "start_conversation with a strategy",
        Client.API: "the model MODEL@STRATEGY",
        # /switch opens a session with its own strategy only: the way on is outside the chat.
        Client.REPL: f"/quit, then chatmem chat {_shell_word(error.session)} -s NAME",
    }[client]
    where = "the REPL's" if client is Client.REPL else "the server's"
    return f"{error.cause}; {way_back(where)}, or go on with another strategy ({way_on})"


@singledispatch
def repl_error_text(error: ChatmemError) -> str:
    """The one line the REPL shows `error` as: `error_text`, but for errors whose way on
    there differs from the CLI's (they are registered here)."""
    return error_text(error)


@repl_error_text.register
def _(error: StrategyGone) -> str:
    return _for_a_client(error, Client.REPL)


@repl_error_text.register
def _(error: SessionGone) -> str:
    # The chat stays on the session it had, so each message met this same line, naming no
    # way on. A share (OWNER/NAME) is not one's own to start again.
    again = (f"/new {error.name} starts it again, " if error.name and "/" not in error.name
             else "")
    return f"{error_text(error)}; {again}/switch SESSION goes on in another"


@repl_error_text.register
def _(error: OverBudget) -> str:
    # --allow-over-budget is the chat's flag: in the REPL it is taken when the chat starts.
    # /budget sets only the budget of a strategy without one of its own.
    values = " ".join(f"{name}=N" for name in error.budget_params)
    way = (f"{_own_budget(error)}: /strategy {error.strategy} {values}" if values
           else "/budget N, context_budget")
    if values and error.context_budget_too:
        way += ", and /budget N"
    # A file goes with one message, sent or not: unsaid, the next message went without it.
    files = "; its files are no longer attached (/attach again those to send)" \
        if error.files else ""
    return (f"{_over_budget(error)}; shorten the input or the system prompt, raise the budget "
            f"({way}), or start the chat with --allow-over-budget to send it anyway{files}")


@error_text.register
def _(error: StrategyGone) -> str:
    return f"{error.cause}; {way_back()}, or go on with another (-s NAME)"


def way_back(whose: str | None = None) -> str:
    """How a session's strategy comes back: its plugin installed again, or, while an
    installed plugin fails to load (its strategy may be that one's), that plugin mended.
    `whose`: where the warnings were shown (the server's log); None: on this command's
    stderr, each plugin's own."""
    from chatmem.plugin_entries import registered_by
    from chatmem.plugins import load_registries

    broken = [p.plugin for p in load_registries().problems if not p.plugin.builtin]
    if not broken:
        return "install it again"
    one = len(broken) == 1
    warnings = (f"{whose} warning{'' if one else 's'}" if whose
                else "its warning" if one else "their warnings")
    names = [registered_by(source) for source in broken]
    listed = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    return (f"{listed} failed to load "
            f"({warnings} {'says' if one else 'say'} why): mend {'it' if one else 'them'}, or "
            "install the strategy's plugin again")


@error_text.register
def _(error: ExtensionFailed) -> str:
    return f"{error}{by_plugin(error.kind, error.name)}"


@error_text.register
def _(error: StrategyFailed) -> str:
    by = by_plugin(error.kind, error.name)
    if not by or error.held_in is None:
        return f"{error}{by}"
    return f"{error}{by}{held_state_way(error.held_in, error.name)}"


def held_state_way(session: str, strategy: str) -> str:
    """How a session's state of a plugin strategy failing on it is dropped: a new version of
    the plugin may fail on what an earlier one stored, every turn."""
    return (f"; if it fails on the state an earlier version of it stored, `chatmem sessions "
            f"reset-state {session} {strategy}` drops that state (never the turns) and it is "
            "built again")


@_for_a_client.register
def _(error: StrategyFailed, client: Client) -> str:
    return f"{error}{by_plugin(error.kind, error.name)}"  # not a command its client can run


def by_plugin(kind: str, name: str | None) -> str:
    """` (plugin echo (chatmem-echo 0.1.0))` for what a plugin registered, else nothing
    (nothing for no name): when its code fails, that is whom to tell."""
    from chatmem.plugin_entries import registered_by
    from chatmem.plugins import load_registries

    if name is None:
        return ""

    source = load_registries().origin(kind, name)
    return "" if source is None or source.builtin else f" ({registered_by(source)})"


def client_error_text(error: ChatmemError, settings: Settings | None = None, *,
                      client: Client) -> str:
    """The one line a client of `chatmem serve` or `chatmem mcp` is shown: `error_text`
    with the history named for what it is, not by its path (or URL) on the server, which
    is not the client's business, and no advice it cannot take (a REPL command, a CLI
    flag, another client's way on); `settings`: the history the request used."""
    location = getattr(error, "location", None)
    text = without_history(_for_a_client(error, client), settings,
                           [location] if isinstance(location, str) else [])
    if client is Client.MCP:  # serve's client is told the details are in the server's log
        from chatmem.render.endpoints import without_endpoints

        text = without_endpoints(text, settings)
    return text


def without_history(text: str, settings: Settings | None, also: Sequence[str] = ()) -> str:
    """`text` with the history of `settings` (and the locations `also`) named for what it
    is, not by its path or URL on the server: for a client's line, an error's or a notice's."""
    names = {*_history_names(settings), *also}
    # The longest first: a path that holds another (a folder's) is replaced whole.
    for name in sorted(names - {"", ":memory:"}, key=len, reverse=True):
        text = _unnamed(text, name)
    return text


def _history_names(settings: Settings | None) -> list[str]:
    from chatmem.config.location import LocationKind

    if settings is None:
        return []
    try:
        where = settings.location
    except ChatmemError:  # the location itself was wrong: its error names only the setting
        return []
    return [where.shown, str(where.path)] if where.kind is LocationKind.SQLITE \
        else [where.shown]


def _unnamed(text: str, name: str) -> str:
    # A command naming the file is its owner's to run (the server's log gives it whole): with
    # the file unnamed it read (a suggested sqlite3 integrity check named 'the history').
    text = re.sub(rf"\s*\(`[^`]*{re.escape(name)}[^`]*`[^()`]*\)", "", text)
    text = re.sub(re.escape(name) + r"-(wal|shm)\b", r"the history's \1 file", text)
    text = text.replace(f" at {name}", "")  # "no history file at PATH"
    text = text.replace(name, "the history")
    folder = os.path.dirname(name)
    # A relative path's folder is the server's working folder: "." or a word, too short
    # to replace wherever it occurs.
    if os.path.isabs(name) and folder.rstrip(os.sep):
        text = text.replace(f"its folder {folder}", "its folder").replace(
            folder, "the history's folder")
    return text
