"""What a command works on, opened from its flags: settings, the history (file or
PostgreSQL, with its key), providers, embedders and the engine."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chatmem.cli.output import consoles
from chatmem.errors import ChatmemError

if TYPE_CHECKING:
    from chatmem.activity import Activity
    from chatmem.config.settings import Settings
    from chatmem.embeddings import Embedder
    from chatmem.engine import Engine
    from chatmem.evaluation.recording import LazyProvider
    from chatmem.memory.base import Strategy
    from chatmem.providers.base import Provider
    from chatmem.store import SessionRecord, Store
    from chatmem.transcripts.format import Transcript


def check_strategy(name: str, params: Mapping[str, Any]) -> None:
    """The config file's strategy check, passed down to the settings loader (configuration
    sits below memory); memory is imported only when the file names a strategy."""
    from chatmem.memory import create_strategy

    create_strategy(name, params)


def settings_from(
    config: Path | None = None,
    db: str | Path | None = None,
    provider: str | None = None,
    model: str | None = None,
    helper_model: str | None = None,
    options: Sequence[str] | None = None,
) -> Settings:
    from chatmem.config.options import parse_options
    from chatmem.config.settings import load_settings

    chosen = parse_options(options)  # a bad option fails before the config is read
    settings = load_settings(config, check_strategy=check_strategy, overrides={
        "db": str(db) if db else None, "provider": provider, "model": model,
        "helper_model": helper_model,
    })
    with_options(settings, chosen, "flag -o")
    return settings


def with_options(settings: Settings, options: Mapping[str, float | int], source: str) -> None:
    """Add per-call model options (over those already there); max_reply_tokens is a setting."""
    settings.options.update(options)
    for key in options:
        settings.sources[f"options.{key}"] = source
    if "max_reply_tokens" in options:
        settings.max_reply_tokens = int(options["max_reply_tokens"])
        settings.sources["max_reply_tokens"] = source


def apply_template(settings: Settings, name: str | None, *, strategy: str | None,
                   system: str | None) -> tuple[str | None, str | None]:
    """Template `name` under the flags: its model, options, strategy and system prompt fill
    in what the command line left out. Returns (strategy, system) to open the session with."""
    if name is None:
        return strategy, system
    from chatmem.config.templates import find_template

    template = find_template(settings, name)
    if template.model and settings.source_of("model") != "flag --model":
        settings.model = settings.model_named(template.model)
        settings.sources["model"] = f"template {name}"
    given = {key: value for key, value in settings.options.items()
             if settings.source_of(f"options.{key}") == "flag -o"}
    with_options(settings, template.options, f"template {name}")
    with_options(settings, given, "flag -o")
    return strategy or template.strategy, system if system is not None else template.system


@contextmanager
def open_store(settings: Settings, *, create: bool = True) -> Iterator[Store]:
    """The history file or database; `create=False` (read-only commands) never creates a file.

    The default file (in the platform's data directory) that does not exist yet
    reads as an empty history; a file named with --db or CHATMEM_DB that does not
    exist is an error, because a typo must not look like an empty history. A
    PostgreSQL URL is never a path: its database must exist (the server says if not).
    """
    from chatmem.config.paths import move_legacy_db
    from chatmem.store import Store
    from chatmem.store.sqlite_backend import fold_wal

    if settings.db is None:
        moved = move_legacy_db(fold_wal)
        if moved:
            from chatmem.render import notice_line

            consoles()[1].print(notice_line(moved), soft_wrap=True)
    from chatmem.config.location import LocationKind

    if settings.location.kind is LocationKind.POSTGRESQL:
        store = open_history(settings)
        try:
            yield store
        finally:
            store.close()
        return
    path = settings.db_path
    if not create and not path.exists():
        if settings.db is not None:
            from chatmem.errors import NotFound

            raise NotFound(f"no history file at {path} (chat, ask and sessions import "
                           "create it)")
        store = Store(":memory:")  # nothing stored yet: an empty history, nothing on disk
        store.path = path
    else:
        store = open_history(settings)
    try:
        yield store
    finally:
        store.close()


def has_history(settings: Settings) -> bool:
    """Whether there is a history to read: a file that exists, or any PostgreSQL database."""
    from chatmem.config.location import LocationKind

    return settings.location.kind is LocationKind.POSTGRESQL or settings.db_path.exists()


def open_history(settings: Settings) -> Store:
    """The history file, with its key when it is encrypted: from $CHATMEM_KEY, key_command,
    or (in a terminal, when neither is set) typed by the user."""
    from chatmem.config.location import LocationKind
    from chatmem.errors import HistoryLocked
    from chatmem.store import Store

    where = settings.location
    if where.kind is LocationKind.POSTGRESQL:
        return Store(where.target)  # the server protects it: a history key is not asked for
    try:
        return Store(settings.db_path, key=settings.history_key())
    except HistoryLocked as e:
        if not (e.missing and sys.stdin.isatty() and sys.stderr.isatty()):
            raise
    return Store(settings.db_path, key=ask_key(f"key for {settings.db_path}: "))


def ask_key(prompt: str, *, twice: bool = False) -> str:
    """A key typed at the terminal, not echoed; `twice` for a new key (typed again to confirm)."""
    import getpass

    from chatmem.errors import HistoryLocked, UsageError

    key = getpass.getpass(prompt)
    if not key:
        raise HistoryLocked("no key typed; nothing was opened or changed", missing=True)
    if twice and getpass.getpass("again, to confirm: ") != key:
        raise UsageError("the two keys differ; nothing was changed")
    return key


@contextmanager
def open_provider(settings: Settings) -> Iterator[Provider]:
    from chatmem.providers import create_provider

    provider = create_provider(settings)
    try:
        yield provider
    finally:
        provider.close()


@contextmanager
def open_engine(
    settings: Settings,
    session: str | None,
    *,
    strategy: str | None = None,
    params: dict[str, str] | None = None,
    system: str | None = None,
    activity: Activity | None = None,
    allow_over_budget: bool = False,
    save: bool = True,
    one_off: bool = False,
) -> Iterator[Engine[Store]]:
    """The named session's engine (created if new); store and providers closed on exit.

    `session` None: the session used last (--continue). `one_off`: a session of its own
    in memory, so the history file is neither read nor written (nor created). `save`
    False: a strategy or system prompt given holds for this engine only.
    """
    from chatmem.activity import QUIET
    from chatmem.engine import open_session
    from chatmem.store import check_session_name

    with (scratch_store() if one_off else open_store(settings)) as store:
        if not one_off:
            apply_retention(store, settings)
        name = session if session is not None else last_used_session(store)
        if store.find_session(name) is None:
            check_session_name(name)  # before a model is loaded for nothing
        with open_provider(settings) as llm:
            engine = open_session(store, settings, llm, name, strategy=strategy,
                                  params=params, system=system, activity=activity or QUIET,
                                  allow_over_budget=allow_over_budget, save=save)
            engine.keeps_memory = not one_off
            try:
                yield engine
            except BaseException:
                with suppress(ChatmemError):  # the error on its way out says more
                    engine.finish()
                raise
            else:
                engine.finish()
            finally:
                # A separate helper model is the engine's own; a local one runs a server.
                if engine.helper is not llm:
                    engine.helper.close()


@contextmanager
def scratch_store() -> Iterator[Store]:
    """A history of one question, in memory: nothing is read from or written to disk."""
    from chatmem.store import Store

    store = Store(":memory:")
    try:
        yield store
    finally:
        store.close()


def last_used_session(store: Store) -> str:
    """The name of the session written to last: what --continue continues."""
    from chatmem.errors import NotFound

    record = store.last_used_session()
    if record is None:
        raise NotFound(f"no session to continue in {store.location} (chatmem chat NAME starts one)")
    return record.name


def erasure_done(store: Store) -> str:
    """What erasing did beyond deleting rows: SQLite rewrites the file; a PostgreSQL server
    frees erased rows' space on its own vacuum (it has no secure delete)."""
    if store.db.kind == "sqlite":
        return "the file was vacuumed"
    return "the server frees their space at its next vacuum"


def apply_retention(store: Store, settings: Settings) -> None:
    """At start-up: erase idle sessions and expired facts, and say so on stderr."""
    from chatmem.errors import StoreError
    from chatmem.privacy.retention import prune
    from chatmem.render import notice_line
    from chatmem.timestamps import utc_now

    try:
        erased = prune(store, utc_now(), retention_days=settings.retention_days,
                       fact_idle_days=settings.fact_idle_days)
    except StoreError as e:
        # A busy or read-only file must not stop the chat; the next start tries again.
        consoles()[1].print(notice_line(f"retention not applied this time: {e}"),
                            soft_wrap=True)
        return
    if erased.empty:
        return
    names = ", ".join(s.name for s in erased.sessions[:3]) + (
        " …" if len(erased.sessions) > 3 else "")
    consoles()[1].print(notice_line(
        f"retention: {erased.summary()} past their retention{f' ({names})' if names else ''};"
        f" {erasure_done(store)}"), soft_wrap=True)


def shared_embedder(settings: Settings, strategies: Sequence[Strategy]) -> Embedder | None:
    """One embedder for several runs over one conversation (each text embedded once, and
    kept in the user's cache file for the next run), or None when no strategy ranks by
    meaning or none is configured."""
    if not any(s.needs_embedder for s in strategies):
        return None
    from chatmem.config.paths import vector_cache_path
    from chatmem.embeddings import Remembering, resolve_embedder
    from chatmem.store.vector_cache import VectorCacheFile

    embedder = resolve_embedder(settings)
    if embedder is None:
        return None
    # A second eval or replay of the same text embeds nothing (the history file has its own).
    return Remembering(embedder, VectorCacheFile(vector_cache_path()))


@contextmanager
def reproducing_provider(settings: Settings, recorded: Transcript | SessionRecord,
                         explicit: bool) -> Iterator[LazyProvider]:
    """The provider and tokenizer a transcript or session was recorded with
    (see chatmem.evaluation.recording)."""
    from chatmem.evaluation.recording import Recording, reproducing

    recording = Recording(recorded.provider, recorded.model, recorded.tokenizer)
    provider = reproducing(settings, recording, explicit=explicit)
    try:
        yield provider
    finally:
        provider.close()
