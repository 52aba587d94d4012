"""Vectors for recall by meaning: embed what has none yet (`chatmem index`), and start a
background indexer for what an import or a saved replay left without vectors."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from chatmem.errors import ChatmemError, ConfigError, EmbedderFailed, NotFound, StoreError

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.embeddings import Embedder
    from chatmem.indexing_notices import VectorsResized
    from chatmem.store import IndexLease, PendingText, Store, VectorRow

BATCH = 64
"""Messages embedded between two renewals of the lease (and two progress steps)."""


@dataclass
class Indexed:
    """What `index_sessions` did."""

    model: str
    embedded: int = 0
    seconds: float = 0.0
    elsewhere: list[tuple[str, IndexLease]] = field(default_factory=list)
    """Sessions left to another live indexer, with its lease."""

    @property
    def per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class Pending:
    """What `index_sessions` will embed: read once, before the progress bar is drawn."""

    model: str
    """The embedder's model the vectors are for."""
    session_ids: tuple[int, ...]
    total: int
    """Messages without a vector for `model` in those sessions (one of another size than
    the embedder gives now counts as none)."""
    resized: VectorsResized | None = None
    """The vectors among them stored in another size, to say before they are embedded."""


def pending_vectors(workspace: Workspace, session: str | Sequence[str] | None) -> Pending:
    """The messages without a vector in `session` (or each of several, in that order;
    refused, before anything is embedded, when one is shared read-only: its vectors could
    not be kept), or in every session this role may write."""
    from chatmem.memory.vector_rows import resized

    embedder = _embedder(workspace)
    model, size = embedder.key, embedder.dimensions
    store = workspace.store
    names = [session] if isinstance(session, str) else list(session or ())
    if len(names) == 1:
        session_id = store.sessions.session(names[0]).id
        store.sessions.check_session_writable(session_id)
        return Pending(model, (session_id,),
                       store.vectors.count_without_vectors(model, session_id, dimensions=size),
                       resized(store, embedder, session_id))
    if names:
        chosen = tuple(dict.fromkeys(store.sessions.session(name).id for name in names))
        for session_id in chosen:
            store.sessions.check_session_writable(session_id)
        return Pending(model, chosen,
                       sum(store.vectors.count_without_vectors(model, i, dimensions=size)
                           for i in chosen),
                       _resized_in(store, embedder, chosen))
    waiting = store.vectors.sessions_without_vectors(model, size)
    writable = tuple(i for i in waiting if store.sessions.may_write(i))
    if len(writable) == len(waiting):  # one count over them all
        return Pending(model, writable,
                       store.vectors.count_without_vectors(model, dimensions=size),
                       resized(store, embedder))
    return Pending(model, writable,
                   sum(store.vectors.count_without_vectors(model, i, dimensions=size)
                       for i in writable),
                   _resized_in(store, embedder, writable))


def _resized_in(store: Store, embedder: Embedder,
                session_ids: Sequence[int]) -> VectorsResized | None:
    """`resized` over those sessions (the ones this role may write)."""
    import dataclasses

    from chatmem.memory.vector_rows import resized

    found = [r for i in session_ids if (r := resized(store, embedder, i)) is not None]
    if not found:
        return None
    sizes = sorted({size for r in found for size in r.sizes})
    return dataclasses.replace(found[0], stale=sum(r.stale for r in found), sizes=tuple(sizes))


def index_sessions(workspace: Workspace, pending: Pending, *,
                   progress: Callable[[int], None] | None = None) -> Indexed:
    """Embed the `pending` messages (and any that arrived since in their sessions), a batch
    at a time under the session's index lease; a session another live indexer holds is
    left to it. `progress` hears the number embedded so far."""
    from chatmem.memory.vector_rows import known_vectors, save_rows
    from chatmem.store import LeaseHolder

    embedder = _embedder(workspace)
    store = workspace.store
    report = Indexed(embedder.key)
    started = time.monotonic()
    holder = LeaseHolder.this_process()
    size = embedder.dimensions
    for session_id in pending.session_ids:
        past = 0
        held = None
        try:
            # Renewed between batches; another live holder keeps the backlog (a chat never
            # takes one, so that is another `chatmem index`).
            while (held := store.leases.take_index_lease(session_id, embedder.key,
                                                         holder)) is None:
                # Past the batch before: vectors stored that still do not count (an
                # embedder's size that no stored one matches) cannot bring a batch back
                # forever.
                batch = store.vectors.texts_without_vectors(
                    embedder.key, session_id, limit=BATCH, after_id=past, dimensions=size)
                if not batch:
                    break
                past = batch[-1].message_id
                save_rows(store, embedder.key, _embedded(embedder, batch, known_vectors(
                    store, embedder.key, batch, size)))
                report.embedded += len(batch)
                if progress is not None:
                    progress(report.embedded)
        except StoreError:
            # Deleted while the ones before it were embedded (an archive's restore embeds
            # its sessions in turn, minutes for thirty): its lease and vectors could not be
            # written, and the sessions after it were left unembedded. Nothing of it is left.
            if _still_there(store, session_id):
                raise
            continue
        finally:
            store.leases.release_index_lease(session_id, embedder.key, holder)
        if held is not None:
            report.elsewhere.append((store.sessions.session_by_id(session_id).name, held))
    report.seconds = time.monotonic() - started
    return report


def _still_there(store: Store, session_id: int) -> bool:
    try:
        store.sessions.session_by_id(session_id)
    except NotFound:
        return False
    return True


def _embedded(embedder: Embedder, batch: Sequence[PendingText],
              known: dict[str, bytes]) -> list[VectorRow]:
    """`batch`'s vectors; whatever goes wrong embedding them is one line naming the
    embedder (EmbedderFailed), never a traceback: the batches done are stored."""
    from chatmem.memory.vector_rows import embed_pending, embedder_name

    try:
        return embed_pending(embedder, batch, known=known)
    except ChatmemError:
        raise
    except Exception as e:
        raise EmbedderFailed(embedder_name(embedder), e, "failed while indexing") from None


def _embedder(workspace: Workspace) -> Embedder:
    from chatmem import install_hint

    embedder = workspace.embedder
    if embedder is None:
        # The ones installed here, a plugin's too: any of them is a way on.
        names = ", ".join(workspace.registries.embedders)
        raise ConfigError(f"no embedder: {install_hint('embed')}, or set [embeddings] "
                          f"provider in the config ({names})")
    return embedder


@dataclass(frozen=True)
class BacklogStart:
    """What an import or a saved replay left for recall by meaning, and who embeds it."""

    session: str
    model: str
    missing: int
    pid: int | None
    """The background `chatmem index` process, or None when none was started."""


def start_backlogs(workspace: Workspace, config: Path | None, sessions: Sequence[str], *,
                   background: bool = True) -> list[BacklogStart]:
    """Start embedding those of `sessions` whose own strategy recalls by meaning in a
    background `chatmem index` process; what waits for vectors.

    Each session's stored strategy decides, not the others': a replay saved under window and
    retrieval indexes only the retrieval session (window never reads a vector). A strategy
    that does not build here (its plugin gone) is replaced by the configured one, which a
    chat in it would use.

    A process of its own, at a lower priority: the import returns at once, the first
    chat finds the vectors ready or on their way, and its reply keeps the CPU first.
    """
    from chatmem.engine.opening import configured_strategy
    from chatmem.errors import StrategyError, StrategyFailed
    from chatmem.store import LeaseHolder

    settings = workspace.settings
    strategies = workspace.registries.strategies
    store = workspace.store

    def recalls_by_meaning(name: str) -> bool:
        session = store.sessions.session(name)
        try:
            own = strategies.strategy(session.strategy, session.params)
        except (StrategyError, StrategyFailed):
            own = configured_strategy(settings, strategies)
        return own.needs_embedder

    waiting = [name for name in sessions if recalls_by_meaning(name)]
    if not waiting:
        return []
    embedder = workspace.embedder
    if embedder is None:
        return []
    counted: list[tuple[str, int, int]] = []
    for name in waiting:
        session_id = store.sessions.session(name).id
        count = store.vectors.count_without_vectors(embedder.key, session_id,
                                                    dimensions=embedder.dimensions)
        if count:
            counted.append((name, session_id, count))
    if not counted:
        return []
    # One child embeds them all, one session after another: a process each (an archive of
    # thirty sessions, thirty) loaded the embedding model thirty times and fought over the
    # CPU and the history file's write lock. A key typed at the terminal is not the child's
    # to have: it could not open the history, and would die unseen while the import said it
    # was embedding.
    pid = (_spawn_index(workspace, config, [name for name, _, _ in counted])
           if background and not workspace.key_typed else None)
    if pid is not None:
        # Taken for the child before this command returns, so a chat opened next leaves
        # the backlog to it even before it has started; it renews the lease of the session
        # it embeds (a later one's lapses meanwhile: a chat there embeds on its own until
        # the child comes to it).
        for _, session_id, _ in counted:
            store.leases.take_index_lease(session_id, embedder.key, LeaseHolder.on_this_host(pid))
    return [BacklogStart(name, embedder.key, count, pid) for name, _, count in counted]


def _spawn_index(workspace: Workspace, config: Path | None, sessions: Sequence[str]) -> int:
    import contextlib
    import os
    import subprocess
    import sys

    from chatmem.child_processes import python_child_environment

    # -P: `-m` would put the current directory first on the path (a typer.py there would run).
    command = [sys.executable, "-P", "-m", "chatmem", "index"]
    if config is not None:
        command += ["--config", str(config)]
    command += ["--", *sessions]  # a name that starts with a dash is still a name
    # The history's location goes in the environment, not the command line: a database URL
    # may hold a password, and every user of the machine can read a process's arguments.
    environment = {**python_child_environment(),
                   "CHATMEM_DB": workspace.settings.location.target}
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True, env=environment)
    if hasattr(os, "setpriority"):
        # Already ended, or not allowed: it runs at the normal priority.
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, process.pid, 10)
    return process.pid
