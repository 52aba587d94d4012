"""The composition root: what a command works on, opened once from its settings.

A `Workspace` opens the history (a file or PostgreSQL, with its key), the chat model,
the helper model for strategy calls, the embedder and the plugin registries, each on
first use, and closes each of them once, newest first, when it closes. Every front end
(the CLI, the REPL, and later the MCP server and the HTTP proxy) opens one and hands it
to the use cases of `chatmem.app`; nothing else opens a store or a provider.

What opening did that the user should know (a history file moved to the data
directory, an older history upgraded, sessions erased by retention) is kept as notices,
for the front end to word.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from chatmem.app.model_pool import ModelPool as ModelPool  # front ends imported it from here
from chatmem.config.location import LocationKind
from chatmem.errors import (
    ConfigError,
    HistoryLocked,
    NotFound,
    StoreError,
    StoreFailure,
    TranscriptError,
)

if TYPE_CHECKING:
    from pathlib import Path
    from types import TracebackType

    from chatmem.config.location import HistoryLocation
    from chatmem.config.settings import Settings, Source
    from chatmem.embeddings import Embedder, Remembering
    from chatmem.evaluation.recording import LazyProvider
    from chatmem.memory.base import Strategy
    from chatmem.notices import Notice
    from chatmem.plugins import Registries
    from chatmem.providers.base import Provider
    from chatmem.store import SessionRecord, Store
    from chatmem.transcripts.format import Transcript

KeyPrompt = Callable[[str], str]
"""Asks the person at the terminal for a history key (the front end's business)."""
Listener = Callable[["Notice"], None]
"""Tells the user a notice as it happens (the front end's business)."""


class Workspace:
    """Settings made real: the history, the models, the embedder; opened once, closed once.

    `create` False (reading commands) never creates a history file: a default file that
    does not exist yet reads as an empty history, a named one is an error. `one_off`: a
    history of one question in memory; nothing on disk is read, written or created.
    `ask_key` is asked for the history key when the file is encrypted and no key is set;
    `on_notice` hears what opening did as it happens (else it is kept in `notices`);
    `models`, a pool its owner shares between workspaces, supplies the chat models;
    `registries`, the strategies, providers and embedders to build from (the process's,
    chatmem.plugins.load_registries(), when none is handed in; they load on first use).

    One thread: a workspace, its store and the conversations (engines) opened from it are
    used on the thread that opened its history (its first `store`), as a SQLite connection
    is; a program with several threads (asyncio.to_thread, a thread pool, one per chat)
    opens a workspace on each, sharing one ModelPool. Use from another thread is refused
    (WrongThread, nothing stored); close() may be called from any.
    """

    def __init__(self, settings: Settings, *, create: bool = True, one_off: bool = False,
                 ask_key: KeyPrompt | None = None, on_notice: Listener | None = None,
                 models: ModelPool | None = None,
                 registries: Registries | None = None) -> None:
        from chatmem.plugins import load_registries

        self.settings = settings
        self.registries = registries or load_registries()
        self.create = create
        self.one_off = one_off
        self.ask_key = ask_key
        self.on_notice = on_notice
        self.notices: list[Notice] = []
        """What opening did that the user should know and no listener heard, in order."""
        self.key_typed = False
        """Whether `ask_key` gave the history's key: set nowhere, so no process of chatmem's
        own (a background `chatmem index`) can open the history with it."""
        self._retention_checked = False
        self._store: Store | None = None
        self._providers: dict[tuple[Any, ...], Provider] = {}
        self._pool = models
        self._embedder: Embedder | None = None
        self._embedder_opened = False
        self._closing = ExitStack()

    @classmethod
    def around(cls, settings: Settings, store: Store, chat: Provider | None = None) -> Workspace:
        """A workspace over a history and a chat model opened by the caller, who keeps and
        closes them (a test, or a program embedding chatmem); what it opens itself it closes."""
        workspace = cls(settings)
        workspace._store = store
        if chat is not None:
            workspace._providers[_provider_key(settings)] = chat
        workspace._retention_checked = True  # the caller's history, the caller's business
        return workspace

    # -- lifetime ----------------------------------------------------------------------

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close what was opened, newest first, each once."""
        self._closing.close()
        self._store = None
        self._providers.clear()

    def tell(self, notice: Notice) -> None:
        """Pass `notice` to the listener, or keep it for the front end to read."""
        if self.on_notice is not None:
            self.on_notice(notice)
        else:
            self.notices.append(notice)

    def take_notices(self) -> list[Notice]:
        """What opening told that no listener heard (`notices`), once."""
        told, self.notices = self.notices, []
        return told

    def owns(self, close: Callable[[], object]) -> None:
        """Close `close`'s object with the workspace (newest first)."""
        self._closing.callback(close)

    # -- the history -------------------------------------------------------------------

    @property
    def retention_checked(self) -> bool:
        """Retention ran on the history (chatmem.app.conversations.apply_retention): once
        per workspace, and once per pool (a server's) for the workspaces sharing one."""
        return self._retention_checked or (
            self._pool is not None and not self.one_off
            and self._pool.retained(self.settings.location))

    def mark_retention_checked(self) -> None:
        self._retention_checked = True
        if self._pool is not None and not self.one_off:
            self._pool.mark_retained(self.settings.location)

    @property
    def store(self) -> Store:
        """The history, opened on first use."""
        if self._store is None:
            self._store = self._open_store()
            self.owns(self._store.close)
        return self._store

    @property
    def location(self) -> str:
        """Where the history is, as it may be shown (a URL's password masked)."""
        return self.store.location

    @property
    def has_history(self) -> bool:
        """Whether there is a history to read: a file that exists, or any PostgreSQL one."""
        if self.one_off:
            return False
        return (self.settings.location.kind is LocationKind.POSTGRESQL
                or self.settings.db_path.exists())

    def _open_store(self) -> Store:
        from chatmem.store import Store

        if self.one_off:
            return Store(":memory:")
        settings = self.settings
        where = settings.location  # parsed once here; the store is given it, typed
        if where.kind is LocationKind.POSTGRESQL:
            try:
                return Store(where, on_upgrade=self.tell)  # the server protects it: no key
            except StoreError as e:
                # A reading command on a database no one has opened yet shows it empty, as
                # on a fresh file; a writing command says who must open it first.
                if self.create or e.kind is not StoreFailure.NO_TABLES:
                    raise
                return Store.empty_standing_in(where)
        if settings.db is None:
            self._move_legacy_file()
        path = where.path
        if not self.create and not path.exists():
            if settings.db is not None:
                raise NotFound(f"no history file at {path} (chat, ask and sessions import "
                               "create it)")
            return Store.empty_standing_in(where)  # nothing stored yet, nothing on disk
        try:
            return self._keyed_store(where, path)
        except HistoryLocked as e:
            if not (e.missing and self.ask_key is not None):
                raise
            store = Store(where, key=self.ask_key(f"key for {path}: "), on_upgrade=self.tell)
            self.key_typed = True
            return store

    def _keyed_store(self, where: HistoryLocation, path: Path) -> Store:
        """The history file opened with its configured key, or the one a server's pool
        kept from an earlier open (key_command runs once for a server): a kept key the file
        no longer takes (`chatmem rekey` since) is forgotten and the command run again."""
        from chatmem.store import Store

        pool = self._pool
        kept = pool.history_key(where) if pool is not None else None
        if pool is not None and kept is not None:
            try:
                return Store(where, key=kept, on_upgrade=self.tell)
            except HistoryLocked:
                pool.forget_history_key(where, kept)
        key = _history_key(self.settings, path)
        store = Store(where, key=key, on_upgrade=self.tell)
        if key is not None and pool is not None:
            pool.keep_history_key(where, key)
        return store

    def _move_legacy_file(self) -> None:
        from chatmem.config.paths import legacy_db_left, move_legacy_db
        from chatmem.history_notices import HistoryMoved, OldHistoryLeft
        from chatmem.store.sqlite_files import fold_wal

        moved = move_legacy_db(fold_wal)
        if moved is not None:
            self.tell(HistoryMoved(*moved))
        elif (left := legacy_db_left()) is not None:
            self.tell(OldHistoryLeft(*left))

    # -- models ------------------------------------------------------------------------

    @property
    def chat_provider(self) -> Provider:
        """The chat model the settings name, opened on first use."""
        return self.provider_for(self.settings)

    def provider_for(self, settings: Settings) -> Provider:
        """The chat model of `settings` (another model, other options: /model, /template);
        one per distinct choice, closed with the workspace."""
        create_provider = self.registries.create_provider
        key = _provider_key(settings)
        provider = self._providers.get(key)
        if provider is None:
            if self._pool is not None:
                provider = self._pool.get(key, lambda: create_provider(settings))
            else:
                provider = create_provider(settings)
                self.owns(provider.close)
            self._providers[key] = provider
        return provider

    def opened_provider(self, settings: Settings) -> Provider | None:
        """The chat model of `settings` when this workspace opened it already; else None."""
        return self._providers.get(_provider_key(settings))

    def helper_for(self, settings: Settings, chat: Provider) -> Provider | None:
        """The model for strategy calls (helper_provider/helper_model) when it is not the
        chat's own; None when the chat model does them."""
        name = settings.helper_provider or chat.name
        if settings.helper_model is None and name == chat.name:
            return None
        if name == chat.name and settings.helper_model in (chat.model,
                                                           getattr(chat, "model_path", None)):
            return None
        sources = settings.sources
        if settings.helper_model is not None:
            # A message about the model names where helper_model was set, not the chat
            # model's source (a config's helper_model was said to be the default).
            sources = {**sources, "model": helper_source(settings)}
        # Per-call options (-o, a served request's) shape the chat's replies, not these.
        return self.provider_for(dataclasses.replace(
            settings, provider=name, model=settings.helper_model or settings.model,
            options={}, sources=sources))

    def reproducing(self, recorded: Transcript | SessionRecord, *,
                    explicit: bool) -> LazyProvider:
        """The provider and tokenizer a transcript or session was recorded with
        (chatmem.evaluation.recording), closed with the workspace."""
        from chatmem.evaluation.recording import Recording, reproducing
        from chatmem.transcripts.format import Transcript

        create_provider = self.registries.create_provider
        if isinstance(recorded, Transcript) and recorded.provider and not explicit:
            where = recorded.header_at or recorded.source

            def create_provider(settings: Settings) -> Provider:
                try:
                    return self.registries.create_provider(settings)
                except ConfigError as e:
                    # Chosen by the file's header, not by --provider or the config.
                    raise TranscriptError(f"{where}: in the header: {e}; --provider chooses"
                                          " another") from None

        provider = reproducing(self.settings, Recording(recorded.provider, recorded.model,
                                                        recorded.tokenizer),
                               explicit=explicit, create_provider=create_provider)
        self.owns(provider.close)
        return provider

    # -- embeddings --------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder ([embeddings]), opened on first use; None without one."""
        if not self._embedder_opened:
            settings = self.settings

            def open_embedder() -> Embedder | None:
                return self.registries.resolve_embedder(settings)

            if self._pool is not None:
                # The section itself, not its repr: that masks a key in its base_url, so two
                # keys for one server would share one embedder.
                key = (settings.embeddings, settings.base_url, settings.api_key_env)
                self._embedder = self._pool.embedder(key, open_embedder)
            else:
                self._embedder = open_embedder()
            self._embedder_opened = True
        return self._embedder

    def recall_embedder(self, strategies: Sequence[Strategy],
                        keep_every: int = 1) -> Remembering | None:
        """One embedder for several runs over one conversation (each text embedded once,
        and kept in the user's vector cache for the next run, `keep_every` vectors at a
        time: see Remembering.flush); None when no strategy ranks by meaning or none is
        configured."""
        if not any(s.needs_embedder for s in strategies):
            return None
        embedder = self.embedder
        if embedder is None:
            return None
        from chatmem.config.paths import vector_cache_path
        from chatmem.embeddings import Remembering
        from chatmem.store.vector_cache import VectorCacheFile

        if self._history_encrypted():
            # An encrypted history keeps nothing of its text outside it: the cache file is
            # plain (vectors, and digests of the texts), so each run embeds anew.
            return Remembering(embedder)
        # A second eval or replay of the same text embeds nothing (the history has its own).
        try:
            cache = VectorCacheFile(vector_cache_path())
        except StoreError as e:
            if e.kind not in CACHE_NOT_WRITABLE:
                raise  # a file there that is no cache: the user deletes it, as it says
            # It only saves work: a full disk or a read-only home stopped every eval.
            from chatmem.notices import VectorCacheUnused

            self.tell(VectorCacheUnused(str(vector_cache_path()), e.reason))
            return Remembering(embedder)
        return Remembering(embedder, cache, keep_every)

    def _history_encrypted(self) -> bool:
        """Whether this workspace's history is, or would be made, encrypted. Its store not
        opened yet (an eval reads a session in a workspace of its own, then runs in this
        one), the file says so, whatever gave its key: one typed at the terminal is set
        nowhere; a key configured says a new file would be."""
        if self._store is not None:
            return self._store.encrypted
        if self.settings.key_source() is not None:
            return True
        if self.one_off or self.settings.location.kind is not LocationKind.SQLITE:
            return False
        from chatmem.store import cipher

        return cipher.file_kind(self.settings.location.path) == "encrypted"


CACHE_NOT_WRITABLE = frozenset({StoreFailure.CANNOT_OPEN, StoreFailure.DISK,
                                StoreFailure.READ_ONLY})
"""Why the vector cache cannot be used that a run goes on without it (recall_embedder)."""


PROVIDER_FIELDS = ("provider", "model", "base_url", "api_key_env", "timeout", "reply_timeout",
                   "idle_timeout", "max_retries", "max_reply_tokens", "options", "local",
                   "scripted")
"""The settings a chat model is opened from: two settings equal in these share one model."""


def helper_source(settings: Settings) -> Source:
    """Where helper_model came from, a file's named with its key (`FILE: helper_model`), as
    the chat model's `model` key would otherwise be read."""
    from chatmem.config.settings import Source, SourceKind

    source = settings.source_of("helper_model")
    if source.kind is SourceKind.FILE:
        return Source(SourceKind.FILE, f"{source.name}: helper_model")
    return source


def _provider_key(settings: Settings) -> tuple[Any, ...]:
    return tuple(repr(getattr(settings, name)) for name in PROVIDER_FIELDS)


def _history_key(settings: Settings, path: Path) -> str | None:
    """$CHATMEM_KEY, or key_command's output when the file needs a key (key_command_needed):
    a plain file with key_command set is refused as with any key set, the command unrun."""
    from chatmem.store.sqlite_files import check_key, key_command_needed

    if settings.key_source() == "key_command" and not key_command_needed(path):
        check_key(path, "")  # raises for a plain file, which refuses any key set
        return None
    return settings.history_key()
