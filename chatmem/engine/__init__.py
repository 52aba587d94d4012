"""The engine: a session opened (chatmem.engine.opening), then its turns run
(chatmem.engine.turns, each giving a results.TurnResult), its memory kept up (upkeep) and its
session row (session_changes)."""

from chatmem.engine.opening import engine_over, open_session, resolve_strategy
from chatmem.engine.turns import Engine, TurnResult
from chatmem.engine.upkeep import is_embedded_model

__all__ = ["Engine", "TurnResult", "engine_over", "is_embedded_model", "open_session",
           "resolve_strategy"]
