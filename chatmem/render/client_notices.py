"""Notices worded for a client of `chatmem mcp` or `chatmem serve`: no REPL advice, a session
called a conversation, and nothing about where the server keeps its files."""

from __future__ import annotations

from functools import singledispatch
from typing import TYPE_CHECKING

from chatmem.context_warnings import ContextWarning
from chatmem.history_notices import (
    HistoryMoved,
    HistoryUpgrading,
    HistoryWritableByOthers,
    OldHistoryLeft,
    RetentionApplied,
    WaitingForUpgrade,
    WaitingForWrite,
)
from chatmem.notices import (
    FactsForgotten,
    FactsNotSaid,
    FactsTooLong,
    Notice,
    SensitiveNotRemembered,
)
from chatmem.render.errors import Client, without_history
from chatmem.render.history_notices import migrations_text, retention_applied_text
from chatmem.render.notices import facts_left_text, not_remembered_text, notice_text
from chatmem.render.session_notices import session_notice_text
from chatmem.session_notices import (
    ModelChanged,
    SavedParamsDropped,
    SettingsNotSaved,
    StrategyChanged,
    SystemPromptReplaced,
)

if TYPE_CHECKING:
    from chatmem.config.settings import Settings


def client_notice_text(notice: Notice | ContextWarning, client: Client,
                       settings: Settings | None = None) -> str:
    """One line for `notice` (or a context's warning) as a client of `chatmem mcp` or
    `chatmem serve` reads it: no REPL advice, a session called what the client calls it (a
    conversation), and the history of `settings` not named by its path on the server (as
    in client_error_text); to an MCP client, no model endpoint's URL (render.endpoints)."""
    text = without_history(_for_a_client(notice, client), settings)
    if client is Client.MCP:
        from chatmem.render.endpoints import without_endpoints

        text = without_endpoints(text, settings)
    return text


@singledispatch
def _for_a_client(notice: Notice | ContextWarning, client: Client) -> str:
    return notice_text(notice, repl_hints=False)


@_for_a_client.register
def _(n: StrategyChanged | ModelChanged | SavedParamsDropped | SettingsNotSaved
      | SystemPromptReplaced, client: Client) -> str:
    return f"conversation {session_notice_text(n, flags=False)}"


@_for_a_client.register
def _(n: SensitiveNotRemembered, client: Client) -> str:
    return not_remembered_text(n, "the remember tool" if client is Client.MCP else None)


@_for_a_client.register(FactsTooLong)
@_for_a_client.register(FactsNotSaid)
@_for_a_client.register(FactsForgotten)
def _(n: FactsTooLong | FactsNotSaid | FactsForgotten, client: Client) -> str:
    # As SensitiveNotRemembered: a tool stores one where the REPL's /remember would.
    return facts_left_text(n, "the remember tool" if client is Client.MCP else None)


@_for_a_client.register
def _(n: HistoryMoved, client: Client) -> str:
    # Where the server keeps its files is not the client's business (client_error_text).
    return ("moved the history file from the config directory, where an older chatmem kept "
            "it, to the platform's data directory")


@_for_a_client.register
def _(n: OldHistoryLeft, client: Client) -> str:
    return ("an older chatmem's history is still in the config directory and its "
            "conversations are not read; any chatmem command run in a terminal names it and "
            "says how to bring them here")


@_for_a_client.register
def _(n: HistoryWritableByOthers, client: Client) -> str:
    # Where the file is, and the command that ends it, are the server owner's business.
    return ("warning: other accounts on the server could write its history and slip messages"
            " into conversations; its owner is told how to stop it where it runs")


@_for_a_client.register
def _(n: HistoryUpgrading, client: Client) -> str:
    return f"upgrading the history for this chatmem ({migrations_text(n)})"


@_for_a_client.register
def _(n: WaitingForUpgrade, client: Client) -> str:
    return "waited for another chatmem holding the history alone (an upgrade)"


@_for_a_client.register
def _(n: WaitingForWrite, client: Client) -> str:
    return "waited for another process's write to the history (a long import)"


@_for_a_client.register
def _(n: RetentionApplied, client: Client) -> str:
    return retention_applied_text(n, "conversation")
