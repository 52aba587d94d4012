"""`chatmem index [SESSION]`: embed the messages that have no vector yet, with a progress bar."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from chatmem.cli.common import (
    ConfigOption,
    DbOption,
    JsonOption,
    consoles,
    handles_errors,
    open_store,
    print_json,
    settings_from,
)

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
    from chatmem.memory.vector_backlog import embed_pending, save_rows

    settings = settings_from(config, db, None, None)
    embedder = resolve_embedder(settings)
    if embedder is None:
        raise ConfigError(f"no embedder: {install_hint('embed')}, or set [embeddings] "
                          "provider in the config (local, openai)")
    out, err = consoles()
    started = time.monotonic()
    done = 0
    with open_store(settings, create=False) as store:
        session_id = store.session(session).id if session else None
        total = store.count_without_vectors(embedder.key, session_id)
        from rich.progress import Progress

        with Progress(console=err, transient=True, disable=not err.is_terminal) as bar:
            task = bar.add_task(f"embedding with {embedder.key}", total=total)
            while True:
                pending = store.texts_without_vectors(embedder.key, session_id, limit=BATCH)
                if not pending:
                    break
                save_rows(store, embedder.key, embed_pending(embedder, pending))
                done += len(pending)
                bar.update(task, completed=done)
    seconds = time.monotonic() - started
    rate = done / seconds if seconds > 0 else 0.0
    if json_out:
        print_json({"session": session, "model": embedder.key, "embedded": done,
                    "seconds": round(seconds, 3), "per_second": round(rate, 1)})
        return
    where = f"session {session}" if session else "every session"
    if not done:
        out.print(f"{where}: every message already has a vector for {embedder.key}")
    else:
        out.print(f"{where}: embedded {done:,} messages with {embedder.key} in {seconds:.1f} s"
                  f" ({rate:.1f}/s)")
