"""Opening a conversation: the engine of a session, resumed or created, whose turns a front
end runs; closed with what opening it changed kept, or nothing kept when every turn was
refused."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

from chatmem.activity import QUIET, Activity
from chatmem.errors import ChatmemError, NotFound, StoreError
from chatmem.notices import RetentionApplied, RetentionSkipped

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.config.settings import Settings
    from chatmem.engine import Engine
    from chatmem.store import Store


@contextmanager
def open_conversation(
    workspace: Workspace,
    name: str | None,
    *,
    strategy: str | None = None,
    params: dict[str, str] | None = None,
    system: str | None = None,
    activity: Activity = QUIET,
    allow_over_budget: bool = False,
    save: bool = True,
) -> Iterator[Engine[Store]]:
    """The named session's engine (created if new), finished on exit.

    `name` None: the session used last (--continue). A one-off workspace keeps a session
    of its own in memory and derives no memory from it. `save` False: a strategy or system
    prompt given holds for this engine only.
    """
    engine = start_conversation(workspace, name, strategy=strategy, params=params,
                                system=system, activity=activity,
                                allow_over_budget=allow_over_budget, save=save)
    try:
        yield engine
    except BaseException:
        with suppress(ChatmemError):  # the error on its way out says more
            engine.finish()
        raise
    else:
        engine.finish()


def start_conversation(
    workspace: Workspace,
    name: str | None,
    *,
    strategy: str | None = None,
    params: dict[str, str] | None = None,
    system: str | None = None,
    activity: Activity = QUIET,
    allow_over_budget: bool = False,
    save: bool = True,
    settings: Settings | None = None,
    budget: int | None = None,
) -> Engine[Store]:
    """The named session's engine, for a caller that finishes it (`Engine.finish`) itself.

    `settings` other than the workspace's (another model or other options: /model,
    /template) choose the chat model; `budget` overrides their context budget.
    """
    from chatmem.engine import open_session
    from chatmem.store import check_session_name

    store = workspace.store
    if not workspace.one_off:
        apply_retention(workspace)
    chosen_name = name if name is not None else last_used_session(store)
    if store.find_session(chosen_name) is None:
        check_session_name(chosen_name)  # before a model is loaded for nothing
    settings = settings or workspace.settings
    chat = workspace.provider_for(settings)
    return open_session(store, settings, chat, chosen_name,
                        helper=workspace.helper_for(settings, chat), strategy=strategy,
                        params=params, system=system,
                        embedder=lambda: workspace.embedder, activity=activity,
                        allow_over_budget=allow_over_budget, save=save,
                        keeps_memory=not workspace.one_off, budget=budget)


def last_used_session(store: Store) -> str:
    """The name of the session written to last: what --continue continues."""
    record = store.last_used_session()
    if record is None:
        raise NotFound(f"no session to continue in {store.location} (chatmem chat NAME starts one)")
    return record.name


def apply_retention(workspace: Workspace) -> None:
    """At start-up: erase idle sessions and expired facts, once per workspace; what was
    erased (or why nothing could be) becomes a notice of the workspace."""
    if workspace.retention_checked:
        return
    workspace.retention_checked = True
    from chatmem.privacy.retention import prune
    from chatmem.timestamps import utc_now

    store, settings = workspace.store, workspace.settings
    try:
        erased = prune(store, utc_now(), retention_days=settings.retention_days,
                       fact_idle_days=settings.fact_idle_days)
    except StoreError as e:
        # A busy or read-only file must not stop the chat; the next start tries again.
        workspace.tell(RetentionSkipped(str(e)))
        return
    if erased.empty:
        return
    workspace.tell(RetentionApplied(
        tuple(s.name for s in erased.sessions), sum(s.messages for s in erased.sessions),
        len(erased.facts), vacuumed=store.db.kind == "sqlite"))
