"""The engine: a session opened (chatmem.engine.opening), then its turns run
(chatmem.engine.turns)."""

from chatmem.engine.opening import open_helper, open_session, resolve_embedder, resolve_strategy
from chatmem.engine.turns import Engine, TurnResult, is_embedded_model

__all__ = ["Engine", "TurnResult", "is_embedded_model", "open_helper", "open_session",
           "resolve_embedder", "resolve_strategy"]
