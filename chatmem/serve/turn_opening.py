"""How a request to `chatmem serve` opens its conversation: the settings it asks for (its
`model`, its options) and the strategy it runs under (`serve -s` for one it starts, the
session's own for one that exists, `MODEL@STRATEGY` when the request names one)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatmem.errors import ConfigError, RequestError, StrategyError

if TYPE_CHECKING:
    from chatmem.app import Workspace
    from chatmem.config.settings import Settings
    from chatmem.engine import Engine
    from chatmem.serve.requests import TurnAsked
    from chatmem.store import Store


def request_settings(settings: Settings, asked: TurnAsked) -> Settings:
    """The server's `settings` with the model and options `asked` names."""
    from chatmem.config.settings import Source, SourceKind, for_model, with_options

    by_request = Source(SourceKind.FLAG, "request")
    if asked.model:
        try:
            settings = for_model(settings, asked.model, by_request)
        except ConfigError:
            # A client whose key and model fields were swapped: refused before the key is
            # sent as a model's name or stored as the session's; its own words never echoed.
            raise RequestError(f"the request's model is the API key ({len(asked.model)} "
                               "characters, not repeated): name the model", "model") from None
    if asked.options:
        # As -o: they reach this reply's request only (max_tokens as max_reply_tokens);
        # memory's summaries and extractions are asked as the server is configured.
        settings = with_options(settings, asked.options, by_request)
    return settings


def opened_engine(ws: Workspace, asked: TurnAsked, settings: Settings, *,
                  server_strategy: str | None) -> Engine[Store]:
    """The engine of `asked`'s conversation, started if it is new."""
    from chatmem.app.conversations import start_conversation
    from chatmem.app.sessions import find_session

    # `serve -s` is the strategy of conversations it starts: one another front end
    # (or an earlier request) started keeps its own unless the request names one.
    chosen = asked.strategy or (
        server_strategy if find_session(ws, asked.conversation) is None
        else None)
    try:
        spec = ws.registries.strategies.parse(chosen) if chosen else None
    except StrategyError as e:
        if not asked.strategy:
            raise
        # Named in the request's `model` (MODEL@STRATEGY): OpenAI's errors name
        # the field at fault, and a client shows or fixes that one.
        raise RequestError(e.message, "model", listed=e.listed) from None
    engine = start_conversation(ws, asked.conversation, strategy=spec, settings=settings)
    if not asked.strategy:
        engine.follow_strategy_changes()  # the server's default started it
    return engine
