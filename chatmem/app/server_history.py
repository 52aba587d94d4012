"""What a server does with its history around the requests it answers: the history checked
before it says it listens, and held open while it serves (serve, `chatmem mcp`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from chatmem.app.workspace import Workspace
from chatmem.config.location import LocationKind

if TYPE_CHECKING:
    from chatmem.app.model_pool import ModelPool
    from chatmem.app.workspace import Listener
    from chatmem.config.settings import Settings
    from chatmem.plugins import Registries


def check_choices(settings: Settings, registries: Registries, strategy: str | None, *,
                  replies: bool = True) -> None:
    """Refuse, before a server says it listens, a configured provider, strategy (unless
    `strategy` is its new conversations') or embedder that strategy recalls by, that nothing
    installed provides: let be as the settings loaded (an uninstalled plugin's), so the
    commands that need none run, it is needed by every request, each refused with it while
    the server looked well. A server whose model does not write the `replies` (`chatmem
    mcp`: its client's does) needs the provider only for a strategy that calls it (unless
    its `helper_provider` is another: a strategy that calls the model needs that one)."""
    from chatmem.app.helper_model import check_helper_provider
    from chatmem.engine.opening import configured_strategy, with_config_table

    provided = settings.provider in registries.provider_names()
    if replies and not provided:
        registries.provider_entry(settings)  # raises, naming the setting
    strategies = registries.strategies
    # Raises, naming the setting, for a name nothing provides.
    chosen = (configured_strategy(settings, strategies) if strategy is None else
              strategies.create(with_config_table(strategies.parse(strategy), settings,
                                                  strategies)))
    if chosen.calls_helper:
        # Its calls go to helper_provider when that is set, not to the chat's provider.
        check_helper_provider(settings, registries)  # raises, naming the setting
        if settings.helper_provider is None and not provided:
            registries.provider_entry(settings)
    embedder = settings.embeddings.provider
    if chosen.needs_embedder and embedder not in registries.embedder_names():
        registries.create_embedder(embedder, settings)  # raises, naming the setting


def check_history(settings: Settings, on_notice: Listener | None = None) -> None:
    """Open the history `settings` name and close it again, so a server refuses a bad one
    (an empty location, a file that is not chatmem's, a locked or unreachable one) with its
    error before it says it listens, not at its first request; `on_notice` hears what
    opening did (an upgrade). A file that does not exist yet is not created here: the first
    turn creates it, as a chat's does."""
    where = settings.location  # an empty --db or `db = ""` is refused here
    if where.kind is LocationKind.SQLITE and not where.path.exists():
        return
    with Workspace(settings, create=False, on_notice=on_notice) as opened:
        _ = opened.store


@contextmanager
def held_open(settings: Settings, models: ModelPool | None = None) -> Iterator[None]:
    """Hold the history file open while a server serves it. Each request opens the file on a
    thread of its own; the last connection to close folds SQLite's write-ahead log into the
    file (a sync to disk), which the held one spares every request. With the server's
    `models`, the key it opened with is theirs too."""
    if settings.location.kind is not LocationKind.SQLITE:
        yield
        return
    with Workspace(settings, models=models) as held:
        _ = held.store
        yield
