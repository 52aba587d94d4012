"""Opening a conversation: the engine of a session, resumed or created, whose turns a front
end runs; closed with what opening it changed kept, or nothing kept when every turn was
refused."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from chatmem.activity import QUIET, Activity
from chatmem.config.settings import SourceKind
from chatmem.errors import ChatmemError, ModelFrom, NotFound, StoreError, UsageError
from chatmem.history_notices import RetentionApplied, RetentionSkipped
from chatmem.session_notices import ModelChanged

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.config.settings import Settings
    from chatmem.engine import Engine, TurnResult
    from chatmem.memory.spec import StrategySpec
    from chatmem.providers.base import Provider
    from chatmem.store import SessionRecord, Store


@contextmanager
def open_conversation(
    workspace: Workspace,
    name: str | None,
    *,
    strategy: StrategySpec | None = None,
    params: Mapping[str, Any] | None = None,
    system: str | None = None,
    activity: Activity = QUIET,
    allow_over_budget: bool = False,
    save: bool = True,
) -> Iterator[Engine[Store]]:
    """The named session's engine (created if new), finished on exit.

    `name` None: the session used last (--continue). A one-off workspace keeps a session
    of its own in memory and derives no memory from it. `save` False: a strategy or system
    prompt given holds for this engine only. `strategy`: the spec given (parsed once, by
    the workspace's registry); without one, `params` (--param) apply to the session's
    strategy or the configured one.
    """
    engine = start_conversation(workspace, name, strategy=strategy, params=params,
                                system=system, activity=activity,
                                allow_over_budget=allow_over_budget, save=save)
    try:
        # Before the first message (the REPL's prompt): what the first build reads whole.
        engine.prepare()
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
    strategy: StrategySpec | None = None,
    params: Mapping[str, Any] | None = None,
    system: str | None = None,
    activity: Activity = QUIET,
    allow_over_budget: bool = False,
    save: bool = True,
    settings: Settings | None = None,
    budget: int | None = None,
    chat: Provider | None = None,
) -> Engine[Store]:
    """The named session's engine, for a caller that finishes it (`Engine.finish`) itself:
    a backlog of messages to embed is stored then, and stopped unstored if the workspace
    closes first.

    `settings` other than the workspace's (another model or other options: /model,
    /template) choose the chat model; `budget` overrides their context budget; `chat`, a
    model the caller opened (a lazy one: `lazy_chat_model`), is used instead.
    """
    from chatmem.engine import open_session
    from chatmem.store import check_session_name
    from chatmem.store.session_names import is_reserved
    from chatmem.store.sharing import shared_address
    from chatmem.text import is_valid

    if name is not None and not is_valid(name):
        # Said as such (the name rule would only call it invalid), before anything opens.
        raise UsageError(f"session name {name!r} is not valid UTF-8")
    # Settings made in code are not checked as a config file's are: a timezone no zone has
    # is refused before anything is stored (the file, retention's erasures, the session).
    _ = (settings or workspace.settings).zone
    if not workspace.one_off and not workspace.has_history:
        # A command that refuses creates no history file: what can refuse (the session to
        # continue, the name, the model) is checked before the file is created.
        if name is None:
            raise NotFound(f"no session to continue in {workspace.settings.db_path} "
                           "(chatmem chat NAME starts one)")
        check_session_name(name)
        if chat is None:  # a chat model handed in (lazy_chat_model) is not opened here
            workspace.provider_for(settings or workspace.settings)
    store = workspace.store
    chosen_name = name if name is not None else last_used_session(store)
    found = store.sessions.find_session(chosen_name)
    if not workspace.one_off:
        # Not the session this command goes on in: a restored archive's, idle for a year,
        # was erased by the very `ask` that named it, which then started an empty one.
        apply_retention(workspace, in_use=None if found is None else found.id)
    if found is None and store.db.kind == "postgresql" and shared_address(chosen_name):
        # As serve says it: OWNER/NAME names another's session, never one made here.
        raise NotFound(f"no session {shared_address(chosen_name)!r} is shared with you"
                       " (OWNER/NAME names a session another role shares with you; a name"
                       " without a '/' names one of your own)")
    if found is None or is_reserved(chosen_name):
        # A replay's unfinished session is refused too: a turn in it would be published
        # under the replay's name, or deleted with its leftovers.
        check_session_name(chosen_name)  # before a model is loaded for nothing
    else:  # a turn is stored in it: a read-only share says so first, in one line
        store.sessions.check_session_writable(found.id)
    settings = settings or workspace.settings
    changed = opened_from = None
    named = chat is None and settings.source_of("model").kind in CHOSEN
    resumes = chat is None and not named
    runs_on = settings
    if chat is None:
        # The engine keeps `settings`: a session opened from it next (/switch) resumes its
        # own model, not this one's.
        runs_on = settings if found is None else resumed_model(settings, found, store)
        opened = workspace.opened_provider(settings)
        if opened is not None and found is not None \
                and (opened.name, opened.model) == (found.provider, found.model):
            runs_on = settings  # already open on that very model (/switch): not a second one
        chat = workspace.provider_for(runs_on)
        opened_from = runs_on
        helper = workspace.helper_for(runs_on, chat)
        changed = None if found is None else model_changed(settings, found, chat)
    else:  # a model the caller opened (MCP's, for strategy calls only): its own choice
        helper = workspace.helper_for(settings, chat)
    engine = open_session(store, settings, chat, chosen_name, helper=helper,
                          strategy=strategy, params=params, system=system,
                          embedder=lambda: workspace.embedder, activity=activity,
                          allow_over_budget=allow_over_budget, save=save,
                          keeps_memory=not workspace.one_off, budget=budget,
                          strategies=workspace.registries.strategies,
                          typed_secrets=workspace.typed_secrets())
    # A caller that never finishes the engine (`Engine.finish` stores what its backlog
    # embedded) still has its embedding thread stopped when the workspace closes.
    workspace.owns(engine.indexing.abandon)
    if changed is not None:
        # On another's session (named OWNER/NAME) it is this run's model: the owner's is kept.
        engine.notices.insert(0, dataclasses.replace(changed, session=engine.address,
                                                     owner=engine.settings_owner))
    engine.chat_settings = opened_from
    engine.model_from = (ModelFrom.SESSION if runs_on is not settings
                         else ModelFrom.NAMED if named else ModelFrom.CONFIGURED)
    if not resumes:
        # A model chosen for this run (or MCP's): a turn another process takes on another
        # one leaves it as it is. Else a kept engine follows the session's latest model.
        engine.chosen_here |= {"provider", "model"}
    return engine


def use_options(workspace: Workspace, engine: Engine[Store], settings: Settings) -> None:
    """Run `engine`'s next turns with `settings` (its per-call options: a served request's
    seed, temperature, max_tokens), on the model it runs on, as an engine opened with them
    would, without opening one: a server keyed its engines by the options too, and a client
    sending a seed of its own each time had its conversation opened anew on every request
    (every stored vector read again: 0.6 s of CPU at 10,000 turns), pushing the others out.
    Only the options may differ from the settings `engine` was opened with."""
    opened = engine.chat_settings
    if opened is None or opened.options == settings.options:
        return
    sources = {**{k: s for k, s in opened.sources.items() if not k.startswith("options.")},
               **{k: s for k, s in settings.sources.items() if k.startswith("options.")}}
    chat_settings = dataclasses.replace(opened, options=settings.options, sources=sources)
    engine.use_chat(workspace.provider_for(chat_settings), chat_settings, settings)


CHOSEN = frozenset({SourceKind.ENV, SourceKind.FLAG, SourceKind.TEMPLATE, SourceKind.COMMAND})
"""Where a model comes from when someone chose it for this run (--model, -m, CHATMEM_MODEL,
a template, /model, a request's model): else a session resumed runs on its own, as it keeps
its strategy and system prompt (the config file's model is for new sessions)."""


def resumed_model(settings: Settings, session: SessionRecord, store: Store) -> Settings:
    """`settings` for resuming `session`: the model its latest turn ran on, when none was
    chosen for this run and the provider is the session's. A local model is recorded by its
    file's name, not its path: that provider runs the configured file.

    Only a model a turn stored here ran on: an imported session's is what its transcript's
    header says, and a file anyone wrote chose the model (`"model": "o1-pro"`) that the
    user's next turns were silently sent to, on the user's key, in place of the configured
    one; a model no turn here ran on is as new, the config's, and said so. A fork copies no
    turn, and goes on on its parent's model, which ran here."""
    from chatmem.config.settings import Source
    from chatmem.providers import resolve_provider_name

    if (settings.source_of("model").kind in CHOSEN or not session.model
            or session.provider in (None, "auto", "local")
            or session.provider != resolve_provider_name(settings)
            or not store.turns.ran_on(session.id, session.provider, session.model)):
        return settings
    # Not for_model: the name stored is the model's own, never an alias to resolve.
    return dataclasses.replace(settings, model=session.model, sources={
        **settings.sources, "model": Source(SourceKind.SESSION, session.name)})


def model_changed(settings: Settings, session: SessionRecord,
                  chat: Provider) -> ModelChanged | None:
    """What says that `session` goes on on another model than its latest turn's (a flag, the
    environment, a template, /model or another provider chose it); None when it does not.
    A session last run through MCP's lazy model may have `auto` for its provider: that
    names none to compare with."""
    if (not session.model or session.provider in (None, "auto")
            or (session.provider, session.model) == (chat.name, chat.model)):
        return None
    source = settings.source_of("model" if session.provider == chat.name else "provider")
    by = {SourceKind.DEFAULT: None, SourceKind.FILE: "the config file",
          SourceKind.TEMPLATE: str(source), SourceKind.COMMAND: str(source)
          }.get(source.kind, source.name)
    return ModelChanged(session.name, f"{session.provider}:{session.model}",
                        f"{chat.name}:{chat.model}", by)


def last_used_session(store: Store) -> str:
    """The name of the session written to last: what --continue continues."""
    from chatmem.store.session_names import is_unfinished

    record = store.sessions.last_used_session()
    if record is not None and is_unfinished(record.name):
        # A replay still saving (or killed while it did) wrote last: not a conversation yet.
        own = [row.name for row in store.sessions.list_sessions()
               if row.shared_by is None and not is_unfinished(row.name)]
        if own:
            return own[0]
        record = None
    if record is None:
        raise NotFound(f"no session to continue in {store.location} (chatmem chat NAME starts one)")
    return record.name


def apply_retention(workspace: Workspace, *, in_use: int | None = None) -> None:
    """At start-up: erase idle sessions and expired facts, once per workspace (and once per
    server: its workspaces share a ModelPool); what was erased (or why nothing could be)
    becomes a notice of the workspace. Marked done only once it succeeded.

    `in_use`: the id of the session the command opens (or a server's kept engine holds):
    never erased, since it is used now, and renewed when it was past its retention, so
    that a turn failing before it is stored does not leave it for the next start."""
    if workspace.retention_checked:
        return
    from chatmem.privacy.retention import prune
    from chatmem.timestamps import utc_now

    store, settings = workspace.store, workspace.settings
    try:
        erased = prune(store, utc_now(), retention_days=settings.retention_days,
                       fact_idle_days=settings.fact_idle_days,
                       spare=() if in_use is None else (in_use,))
    except StoreError as e:
        # A busy or read-only file must not stop the chat; the next start (or a server's
        # next request) tries again.
        workspace.tell(RetentionSkipped(str(e)))
        return
    workspace.mark_retention_checked()
    for spared in erased.spared:
        with suppress(StoreError):  # this command has it still; its first turn renews it
            store.sessions.update_session(spared.id)  # its updated_at: used now
    if erased.empty:
        return
    from chatmem.app.privacy import drop_vector_cache

    drop_vector_cache()  # it may hold vectors of what was erased, as after any erasure
    workspace.tell(RetentionApplied(
        tuple(s.name for s in erased.sessions), sum(s.messages for s in erased.sessions),
        len(erased.facts), vacuumed=store.db.kind == "sqlite",
        taught=tuple(erased.taught_facts())))


def lazy_chat_model(workspace: Workspace) -> Provider:
    """The configured chat model, opened only when a strategy first calls it (a summary, fact
    extraction); tokens are counted with its model's tokenizer until then. For front ends
    whose replies come from elsewhere (the MCP server records turns a client's model wrote)."""
    from chatmem.errors import NoModelAtAll
    from chatmem.evaluation.recording import LazyProvider
    from chatmem.providers import local_models, resolve_provider_name
    from chatmem.tokens import counter_for_model

    settings = workspace.settings
    name, model = settings.provider, settings.model or settings.provider
    with suppress(NoModelAtAll):
        if resolve_provider_name(settings) == "local":
            # Named as the opened model names itself, not "auto": the embedded SmolLM2 was
            # not known as such (engine.upkeep.is_embedded_model) and was asked for
            # summaries, and the session records the model a later chat runs on.
            name = "local"
            with suppress(ChatmemError):
                model = local_models(settings)[0]
    return LazyProvider(lambda: workspace.chat_provider, name, model,
                        counter_for_model(settings.model))


def record_turn(workspace: Workspace, name: str, user: str, assistant: str) -> TurnResult:
    """Append a turn another program had (its user message and the reply its model gave) to
    session `name`, created if new, and update the session's memory as after a chat turn.
    No model is asked for the reply; a strategy's own calls go to the configured model."""
    engine = recording_engine(workspace, name)
    try:
        return record_on(engine, user, assistant)
    finally:
        engine.finish()


def recording_engine(workspace: Workspace, name: str) -> Engine[Store]:
    """The engine `record_turn` records with (session `name`, created if new): its chat model
    is opened only if a strategy calls it."""
    return start_conversation(workspace, name, chat=lazy_chat_model(workspace))


def record_on(engine: Engine[Store], user: str, assistant: str) -> TurnResult:
    """Record one exchange another program had with `engine` (recording_engine's, perhaps
    kept open by a server)."""
    if not user.strip():
        raise UsageError("nothing to record (the user's message is empty)")
    engine.check_writable()
    return engine.replay_turn(user, assistant, kept=True)


def recorded_turns(engine: Engine[Store]) -> int:
    """How many turns `engine`'s session holds now (another process may have added some)."""
    return engine.store.history.turn_count(engine.session.id)
