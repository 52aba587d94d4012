"""Vectors for recall by meaning: embed what has none yet (`chatmem index`), and start a
background indexer for what an import or a saved replay left without vectors."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from chatmem.errors import ConfigError

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.embeddings import Embedder
    from chatmem.memory.base import Strategy
    from chatmem.store import IndexLease

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


def pending_vectors(workspace: Workspace, session: str | None) -> tuple[str, int]:
    """(embedder model, messages without a vector for it) in `session` or every session."""
    embedder = _embedder(workspace)
    store = workspace.store
    session_ids = _writable(workspace, embedder.key, session)
    vectors = store.vectors
    if session is None and session_ids == vectors.sessions_without_vectors(embedder.key):
        return embedder.key, vectors.count_without_vectors(embedder.key)
    return embedder.key, sum(vectors.count_without_vectors(embedder.key, i) for i in session_ids)


def _writable(workspace: Workspace, model: str, session: str | None) -> list[int]:
    """The sessions to embed: `session` (refused, before anything is embedded, when it is
    shared read-only: its vectors could not be kept), or every one this role may write
    that has messages without a vector."""
    store = workspace.store
    if session:
        session_id = store.sessions.session(session).id
        store.sessions.check_session_writable(session_id)
        return [session_id]
    return [i for i in store.vectors.sessions_without_vectors(model) if store.sessions.may_write(i)]


def index_sessions(workspace: Workspace, session: str | None = None, *,
                   progress: Callable[[int], None] | None = None) -> Indexed:
    """Embed every message of `session` (default: every session) that has no vector yet,
    a batch at a time under the session's index lease; a session another live indexer
    holds is left to it. `progress` hears the number embedded so far."""
    from chatmem.memory.vector_backlog import embed_pending, known_vectors, save_rows
    from chatmem.store import LeaseHolder

    embedder = _embedder(workspace)
    store = workspace.store
    report = Indexed(embedder.key)
    started = time.monotonic()
    holder = LeaseHolder.this_process()
    session_ids = _writable(workspace, embedder.key, session)
    for session_id in session_ids:
        # Renewed between batches; another live holder keeps the backlog (a chat never
        # takes one, so that is another `chatmem index`).
        while (held := store.leases.take_index_lease(session_id, embedder.key, holder)) is None:
            pending = store.vectors.texts_without_vectors(embedder.key, session_id, limit=BATCH)
            if not pending:
                break
            save_rows(store, embedder.key, embed_pending(
                embedder, pending, known=known_vectors(store, embedder.key, pending)))
            report.embedded += len(pending)
            if progress is not None:
                progress(report.embedded)
        store.leases.release_index_lease(session_id, embedder.key, holder)
        if held is not None:
            report.elsewhere.append((store.sessions.session_by_id(session_id).name, held))
    report.seconds = time.monotonic() - started
    return report


def _embedder(workspace: Workspace) -> Embedder:
    from chatmem import install_hint

    embedder = workspace.embedder
    if embedder is None:
        raise ConfigError(f"no embedder: {install_hint('embed')}, or set [embeddings] "
                          "provider in the config (local, openai)")
    return embedder


@dataclass(frozen=True)
class BacklogStart:
    """What an import or a saved replay left for recall by meaning, and who embeds it."""

    session: str
    model: str
    missing: int
    pid: int | None
    """The background `chatmem index` process, or None when none was started."""


def start_backlogs(workspace: Workspace, config: Path | None, sessions: Sequence[str],
                   strategies: Sequence[Strategy], *, background: bool = True,
                   ) -> list[BacklogStart]:
    """Start embedding `sessions` in a background `chatmem index` process when their
    strategy, or the configured one, recalls by meaning; what waits for vectors.

    A process of its own, at a lower priority: the import returns at once, the first
    chat finds the vectors ready or on their way, and its reply keeps the CPU first.
    """
    from chatmem.store import LeaseHolder

    settings = workspace.settings
    configured = workspace.registries.strategies.strategy(
        settings.strategy, settings.params_for(settings.strategy))
    if not any(s.needs_embedder for s in [*strategies, configured]):
        return []
    embedder = workspace.embedder
    if embedder is None:
        return []
    started: list[BacklogStart] = []
    store = workspace.store
    for name in sessions:
        session_id = store.sessions.session(name).id
        count = store.vectors.count_without_vectors(embedder.key, session_id)
        if not count:
            continue
        pid = _spawn_index(workspace, config, name) if background else None
        if pid is not None:
            # Taken for the child before this command returns, so a chat opened next
            # leaves the backlog to it even before it has started; it renews the lease.
            store.leases.take_index_lease(session_id, embedder.key, LeaseHolder.on_this_host(pid))
        started.append(BacklogStart(name, embedder.key, count, pid))
    return started


def _spawn_index(workspace: Workspace, config: Path | None, session: str) -> int:
    import contextlib
    import os
    import subprocess
    import sys

    command = [sys.executable, "-m", "chatmem", "index", session]
    if config is not None:
        command += ["--config", str(config)]
    # The history's location goes in the environment, not the command line: a database URL
    # may hold a password, and every user of the machine can read a process's arguments.
    environment = {**os.environ, "CHATMEM_DB": workspace.settings.location.target}
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True, env=environment)
    if hasattr(os, "setpriority"):
        # Already ended, or not allowed: it runs at the normal priority.
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, process.pid, 10)
    return process.pid
