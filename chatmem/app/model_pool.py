"""Chat models and embedders opened once and shared by many workspaces: a server answers
each request on a thread of its own with a Workspace of its own (one thread each,
chatmem.app.workspace says why), and a local model loads once, not once per request. So
does an encrypted history's key from key_command: run once per server, not per request."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chatmem.config.location import HistoryLocation
    from chatmem.embeddings import Embedder
    from chatmem.providers.base import Provider


class ModelPool:
    """Chat models and embedders shared by many workspaces (a server's requests, each on
    its own thread): each opened once, on first use, and closed by the pool's owner."""

    def __init__(self) -> None:
        self._models: dict[tuple[Any, ...], Provider] = {}
        self._embedders: dict[tuple[Any, ...], Embedder | None] = {}
        self._retained: set[HistoryLocation] = set()
        self._keys: dict[HistoryLocation, str] = {}
        self._lock = threading.Lock()

    def retained(self, history: HistoryLocation) -> bool:
        """Whether retention has run on `history` for this pool's owner: once per server
        and history, however many requests open it."""
        with self._lock:
            return history in self._retained

    def mark_retained(self, history: HistoryLocation) -> None:
        """Retention ran on `history` (marked after it succeeded: a busy file is tried again
        by a later request)."""
        with self._lock:
            self._retained.add(history)

    def history_key(self, history: HistoryLocation) -> str | None:
        """The key `history` last opened with in this pool's workspaces, None before."""
        with self._lock:
            return self._keys.get(history)

    def keep_history_key(self, history: HistoryLocation, key: str) -> None:
        """`key` opened `history`: later workspaces use it rather than run key_command again
        (a password manager may ask a person each time, or take a second). In this
        process's memory only, where SQLCipher holds the key of every open connection."""
        with self._lock:
            self._keys[history] = key

    def forget_history_key(self, history: HistoryLocation, key: str) -> None:
        """`key` no longer opens `history` (a rekey since): the next open runs key_command."""
        with self._lock:
            if self._keys.get(history) == key:
                del self._keys[history]

    def embedder(self, key: tuple[Any, ...],
                 open_embedder: Callable[[], Embedder | None]) -> Embedder | None:
        """The embedder `key` names (None: none configured), opened on first use: a local
        model loads once per server, not once per request."""
        with self._lock:
            if key not in self._embedders:
                self._embedders[key] = open_embedder()
            return self._embedders[key]

    def get(self, key: tuple[Any, ...], open_model: Callable[[], Provider]) -> Provider:
        with self._lock:
            model = self._models.get(key)
            if model is None:
                model = self._models[key] = open_model()
            return model

    def close(self) -> None:
        with self._lock:
            models, self._models = list(self._models.values()), {}
        failed: BaseException | None = None
        for model in reversed(models):
            try:
                model.close()
            except Exception as e:  # a plugin's close: the others are closed all the same
                failed = failed or e
        if failed is not None:
            raise failed
