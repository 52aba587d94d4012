"""`chatmem index [SESSION]`: embed the messages that have no vector yet, with a progress bar."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from chatmem.cli.opening import open_store, settings_from
from chatmem.cli.options import ConfigOption, DbOption, JsonOption
from chatmem.cli.output import consoles, handles_errors, print_json

if TYPE_CHECKING:
    from chatmem.config.settings import Settings
    from chatmem.memory.base import Strategy
    from chatmem.store import IndexLease

BATCH = 64


@handles_errors
def index(
    session: Annotated[
        str | None, typer.Argument(help="Session name (default: every session).",
                                   show_default=False)
    ] = None,
    json_out: JsonOption = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Embed stored messages so `retrieval` can recall them by meaning (new turns: as you chat).

    Example: chatmem index support
    """
    from chatmem import install_hint
    from chatmem.embeddings import resolve_embedder
    from chatmem.errors import ConfigError
    from chatmem.memory.vector_backlog import embed_pending, known_vectors, save_rows
    from chatmem.store import LeaseHolder

    settings = settings_from(config, db, None, None)
    embedder = resolve_embedder(settings)
    if embedder is None:
        raise ConfigError(f"no embedder: {install_hint('embed')}, or set [embeddings] "
                          "provider in the config (local, openai)")
    out, err = consoles()
    started = time.monotonic()
    done = 0
    held_elsewhere: list[tuple[str, IndexLease]] = []
    holder = LeaseHolder.this_process()
    with open_store(settings, create=False) as store:
        session_ids = ([store.session(session).id] if session
                       else store.sessions_without_vectors(embedder.key))
        total = store.count_without_vectors(embedder.key, store.session(session).id
                                            if session else None)
        from rich.progress import Progress

        with Progress(console=err, transient=True, disable=not err.is_terminal) as bar:
            task = bar.add_task(f"embedding with {embedder.key}", total=total)
            for session_id in session_ids:
                # Renewed between batches; another live holder keeps the backlog (a chat
                # never takes one, so that is another `chatmem index`).
                while (held := store.take_index_lease(session_id, embedder.key,
                                                      holder)) is None:
                    pending = store.texts_without_vectors(embedder.key, session_id,
                                                          limit=BATCH)
                    if not pending:
                        break
                    save_rows(store, embedder.key, embed_pending(
                        embedder, pending, known=known_vectors(store, embedder.key, pending)))
                    done += len(pending)
                    bar.update(task, completed=done)
                store.release_index_lease(session_id, embedder.key, holder)
                if held is not None:
                    name = store.session_by_id(session_id).name
                    held_elsewhere.append((name, held))
    seconds = time.monotonic() - started
    rate = done / seconds if seconds > 0 else 0.0
    if json_out:
        print_json({"session": session, "model": embedder.key, "embedded": done,
                    "seconds": round(seconds, 3), "per_second": round(rate, 1),
                    "elsewhere": [{"session": name, "pid": lease.holder.pid,
                                   "host": lease.holder.host}
                                  for name, lease in held_elsewhere]})
        return
    where = f"session {session}" if session else "every session"
    for name, lease in held_elsewhere:
        out.print(f"session {name}: left to process {lease.holder.pid} on {lease.holder.host},"
                  " which is embedding it", soft_wrap=True)
    if held_elsewhere and not done:
        return
    if not done:
        out.print(f"{where}: every message already has a vector for {embedder.key}")
    else:
        out.print(f"{where}: embedded {done:,} messages with {embedder.key} in {seconds:.1f} s"
                  f" ({rate:.1f}/s)")


@dataclass(frozen=True)
class BacklogStart:
    """What an import or a saved replay left for recall by meaning, and who embeds it."""

    session: str
    model: str
    missing: int
    pid: int | None
    """The background `chatmem index` process, or None when none was started."""

    def line(self) -> str:
        wait = f"{self.missing:,} message{'' if self.missing == 1 else 's'} of {self.session}"
        if self.pid is not None:
            return (f"{wait} wait for vectors ({self.model}): embedding them in the background"
                    f" (process {self.pid}); recall ranks the rest by words meanwhile")
        return (f"{wait} wait for vectors ({self.model}): recall ranks them by words until a"
                f" chat embeds them between turns, or `chatmem index {self.session}` now")


def start_backlogs(settings: Settings, config: Path | None, sessions: Sequence[str],
                   strategies: Sequence[Strategy], *, background: bool = True,
                   ) -> list[BacklogStart]:
    """Start embedding `sessions` in a background `chatmem index` process when their
    strategy, or the configured one, recalls by meaning; what waits for vectors.

    A process of its own, at a lower priority: the import returns at once, the first
    chat finds the vectors ready or on their way, and its reply keeps the CPU first.
    """
    from chatmem.embeddings import resolve_embedder
    from chatmem.memory import create_strategy

    configured = create_strategy(settings.strategy, settings.params_for(settings.strategy))
    if not any(s.needs_embedder for s in [*strategies, configured]):
        return []
    embedder = resolve_embedder(settings)
    if embedder is None:
        return []
    from chatmem.store import LeaseHolder

    started: list[BacklogStart] = []
    with open_store(settings, create=False) as store:
        for name in sessions:
            session_id = store.session(name).id
            count = store.count_without_vectors(embedder.key, session_id)
            if not count:
                continue
            pid = _spawn_index(settings, config, name) if background else None
            if pid is not None:
                # Taken for the child before this command returns, so a chat opened next
                # leaves the backlog to it even before it has started; it renews the lease.
                store.take_index_lease(session_id, embedder.key,
                                       LeaseHolder.on_this_host(pid))
            started.append(BacklogStart(name, embedder.key, count, pid))
    return started


def _spawn_index(settings: Settings, config: Path | None, session: str) -> int:
    import contextlib
    import os
    import subprocess
    import sys

    command = [sys.executable, "-m", "chatmem", "index", session]
    if config is not None:
        command += ["--config", str(config)]
    # The history's location goes in the environment, not the command line: a database URL
    # may hold a password, and every user of the machine can read a process's arguments.
    environment = {**os.environ, "CHATMEM_DB": settings.location.target}
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True, env=environment)
    if hasattr(os, "setpriority"):
        # Already ended, or not allowed: it runs at the normal priority.
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, process.pid, 10)
    return process.pid
