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
    ExtensionFailed,
    StoreError,
    StoreFailure,
    TranscriptError,
)

if TYPE_CHECKING:
    from types import TracebackType

    from chatmem.config.settings import Settings
    from chatmem.embeddings import Embedder, Remembering
    from chatmem.evaluation.recording import LazyProvider
    from chatmem.memory.base import Strategy
    from chatmem.notices import Notice
    from chatmem.plugins import Registries
    from chatmem.privacy.secrets import Credential
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
                 registries: Registries | None = None, key_elsewhere: bool = False) -> None:
        from chatmem.plugins import load_registries

        self.settings = settings
        self.registries = registries or load_registries()
        self.create = create
        self.one_off = one_off
        self.ask_key = ask_key
        self.key_elsewhere = key_elsewhere
        """A key set is another history's (history_opening.open_history)."""
        self.on_notice = on_notice
        self.notices: list[Notice] = []
        """What opening did that the user should know and no listener heard, in order."""
        self.key_typed = False
        """Whether `ask_key` gave the history's key: set nowhere, so no process of chatmem's
        own (a background `chatmem index`) can open the history with it."""
        self._history_key: str | None = None
        """The key the history opened with (from $CHATMEM_KEY, key_command or typed): masked
        in what the user types (typed_secrets), and never shown."""
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

    def open_history(self) -> None:
        """Open the history now rather than at its first use: an encrypted file's key is
        asked for (or key_command run, or a key derived) at a moment the caller chose."""
        self.store  # noqa: B018 (the property opens it)

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
        from chatmem.app.history_opening import open_history

        store, self._history_key, self.key_typed = open_history(
            self.settings, create=self.create, one_off=self.one_off, ask_key=self.ask_key,
            tell=self.tell, pool=self._pool, key_elsewhere=self.key_elsewhere)
        return store

    def typed_secrets(self) -> dict[str, Credential]:
        """What is masked in what the user types before it is sent or stored: the settings'
        keys and the key the history opened with, once it is open (providers.typed_secrets):
        not opened for it, as a command that needs no history (eval) must not ask its key."""
        from chatmem.providers import typed_secrets

        return typed_secrets(self.settings, self._history_key)

    # -- models ------------------------------------------------------------------------

    def owns_model(self, model: Provider) -> None:
        """Close `model` with the workspace; a plugin's close that fails is told
        (ModelNotClosed), not raised: what the command did with it is done."""
        from chatmem.notices import ModelNotClosed

        def close() -> None:
            try:
                model.close()
            except ExtensionFailed as e:
                self.tell(ModelNotClosed(str(e), (e.kind, e.name)))

        self.owns(close)

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
        if provider is None and self._pool is not None and settings.options:
            # A server's requests bring options of their own (a seed each time): a model
            # opened for each, kept for the server's life, grew it ~0.8 MB a request.
            from chatmem.providers import with_call_options

            plain = self.provider_for(dataclasses.replace(settings, options={}))
            variant = with_call_options(plain, settings)
            if variant is not None:
                return variant
        if provider is None:
            if self._pool is not None:
                provider = self._pool.get(key, lambda: create_provider(settings))
            else:
                provider = create_provider(settings)
                self.owns_model(provider)
            self._providers[key] = provider
        return provider

    def opened_provider(self, settings: Settings) -> Provider | None:
        """The chat model of `settings` when this workspace opened it already; else None."""
        found = self._providers.get(_provider_key(settings))
        if found is None and self._pool is not None and settings.options:
            found = self._providers.get(_provider_key(dataclasses.replace(settings, options={})))
        return found

    def helper_for(self, settings: Settings, chat: Provider) -> Provider | None:
        """The model for strategy calls (helper_provider/helper_model) when it is not the
        chat's own (chatmem.app.helper_model); None when the chat model does them."""
        from chatmem.app.helper_model import helper_settings

        helper = helper_settings(settings, chat, self.registries)
        return None if helper is None else self.provider_for(helper)

    def reproducing(self, recorded: Transcript | SessionRecord, *,
                    explicit: bool) -> LazyProvider:
        """The provider and tokenizer a transcript or session was recorded with
        (chatmem.evaluation.recording), closed with the workspace."""
        from chatmem.evaluation.recording import Recording, reproducing
        from chatmem.transcripts.format import Transcript

        create_provider = self.registries.create_provider
        if isinstance(recorded, Transcript) and recorded.provider and not explicit:
            where = (f"{recorded.header_at}: in the header" if recorded.header_at
                     else f"session {recorded.source!r}")
            gone = recorded.provider not in self.registries.provider_names()

            def create_provider(settings: Settings) -> Provider:
                try:
                    return self.registries.create_provider(settings)
                except ConfigError as e:
                    # Chosen by the file's header (or the session), not by --provider or
                    # the config; a plugin's provider gone says so, as a strategy's does.
                    if gone:
                        from chatmem.app.recorded import provider_gone

                        raise TranscriptError(provider_gone(
                            self.registries, where, recorded.provider,
                            stored=not recorded.header_at)) from None
                    raise TranscriptError(f"{where}: {e}; --provider chooses another"
                                          ) from None

        provider = reproducing(self.settings, Recording(recorded.provider, recorded.model,
                                                        recorded.tokenizer),
                               explicit=explicit, create_provider=create_provider)
        self.owns_model(provider)
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


def _provider_key(settings: Settings) -> tuple[Any, ...]:
    return tuple(repr(getattr(settings, name)) for name in PROVIDER_FIELDS)
