"""Opening a conversation: the engine of a session, resumed or created, whose turns a front
end runs; closed with what opening it changed kept, or nothing kept when every turn was
refused."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from enum import Enum
from itertools import count
from typing import TYPE_CHECKING, Any

from chatmem.activity import QUIET, Activity
from chatmem.config.settings import SourceKind
from chatmem.errors import ChatmemError, ModelFrom, NotFound, StoreError, UsageError
from chatmem.notices import ModelChanged, RetentionApplied, RetentionSkipped

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.config.settings import Settings
    from chatmem.engine import Engine, TurnResult
    from chatmem.memory.spec import StrategySpec
    from chatmem.providers.base import Provider
    from chatmem.store import SessionRecord, Store
    from chatmem.store.protocols import HistoryRepository


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
    """The named session's engine, for a caller that finishes it (`Engine.finish`) itself.

    `settings` other than the workspace's (another model or other options: /model,
    /template) choose the chat model; `budget` overrides their context budget; `chat`, a
    model the caller opened (a lazy one: `lazy_chat_model`), is used instead.
    """
    from chatmem.engine import open_session
    from chatmem.store import check_session_name
    from chatmem.text import is_valid

    if name is not None and not is_valid(name):
        # Said as such (the name rule would only call it invalid), before anything opens.
        raise UsageError(f"session name {name!r} is not valid UTF-8")
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
    if not workspace.one_off:
        apply_retention(workspace)
    chosen_name = name if name is not None else last_used_session(store)
    found = store.sessions.find_session(chosen_name)
    if found is None:
        check_session_name(chosen_name)  # before a model is loaded for nothing
    else:  # a turn is stored in it: a read-only share says so first, in one line
        store.sessions.check_session_writable(found.id)
    settings = settings or workspace.settings
    changed = None
    named = chat is None and settings.source_of("model").kind in CHOSEN
    resumes = chat is None and not named
    runs_on = settings
    if chat is None:
        # The engine keeps `settings`: a session opened from it next (/switch) resumes its
        # own model, not this one's.
        runs_on = settings if found is None else resumed_model(settings, found)
        opened = workspace.opened_provider(settings)
        if opened is not None and found is not None \
                and (opened.name, opened.model) == (found.provider, found.model):
            runs_on = settings  # already open on that very model (/switch): not a second one
        chat = workspace.provider_for(runs_on)
        helper = workspace.helper_for(runs_on, chat)
        changed = None if found is None else model_changed(settings, found, chat)
    else:  # a model the caller opened (MCP's, for strategy calls only): its own choice
        helper = workspace.helper_for(settings, chat)
    engine = open_session(store, settings, chat, chosen_name, helper=helper,
                          strategy=strategy, params=params, system=system,
                          embedder=lambda: workspace.embedder, activity=activity,
                          allow_over_budget=allow_over_budget, save=save,
                          keeps_memory=not workspace.one_off, budget=budget,
                          strategies=workspace.registries.strategies)
    if changed is not None:
        # On another's session (named OWNER/NAME) it is this run's model: the owner's is kept.
        engine.notices.insert(0, dataclasses.replace(changed, session=engine.address,
                                                     owner=engine.settings_owner))
    engine.model_from = (ModelFrom.SESSION if runs_on is not settings
                         else ModelFrom.NAMED if named else ModelFrom.CONFIGURED)
    if not resumes:
        # A model chosen for this run (or MCP's): a turn another process takes on another
        # one leaves it as it is. Else a kept engine follows the session's latest model.
        engine.chosen_here |= {"provider", "model"}
    return engine


CHOSEN = frozenset({SourceKind.ENV, SourceKind.FLAG, SourceKind.TEMPLATE, SourceKind.COMMAND})
"""Where a model comes from when someone chose it for this run (--model, -m, CHATMEM_MODEL,
a template, /model, a request's model): else a session resumed runs on its own, as it keeps
its strategy and system prompt (the config file's model is for new sessions)."""


def resumed_model(settings: Settings, session: SessionRecord) -> Settings:
    """`settings` for resuming `session`: the model its latest turn ran on, when none was
    chosen for this run and the provider is the session's. A local model is recorded by its
    file's name, not its path: that provider runs the configured file."""
    from chatmem.config.settings import Source
    from chatmem.providers import resolve_provider_name

    if (settings.source_of("model").kind in CHOSEN or not session.model
            or session.provider in (None, "auto", "local")
            or session.provider != resolve_provider_name(settings)):
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
    record = store.sessions.last_used_session()
    if record is None:
        raise NotFound(f"no session to continue in {store.location} (chatmem chat NAME starts one)")
    return record.name


def apply_retention(workspace: Workspace) -> None:
    """At start-up: erase idle sessions and expired facts, once per workspace (and once per
    server: its workspaces share a ModelPool); what was erased (or why nothing could be)
    becomes a notice of the workspace. Marked done only once it succeeded."""
    if workspace.retention_checked:
        return
    from chatmem.privacy.retention import prune
    from chatmem.timestamps import utc_now

    store, settings = workspace.store, workspace.settings
    try:
        erased = prune(store, utc_now(), retention_days=settings.retention_days,
                       fact_idle_days=settings.fact_idle_days)
    except StoreError as e:
        # A busy or read-only file must not stop the chat; the next start (or a server's
        # next request) tries again.
        workspace.tell(RetentionSkipped(str(e)))
        return
    workspace.mark_retention_checked()
    if erased.empty:
        return
    from chatmem.app.privacy import drop_vector_cache

    drop_vector_cache()  # it may hold vectors of what was erased, as after any erasure
    workspace.tell(RetentionApplied(
        tuple(s.name for s in erased.sessions), sum(s.messages for s in erased.sessions),
        len(erased.facts), vacuumed=store.db.kind == "sqlite"))


def lazy_chat_model(workspace: Workspace) -> Provider:
    """The configured chat model, opened only when a strategy first calls it (a summary, fact
    extraction); tokens are counted with its model's tokenizer until then. For front ends
    whose replies come from elsewhere (the MCP server records turns a client's model wrote)."""
    from chatmem.evaluation.recording import LazyProvider
    from chatmem.tokens import counter_for_model

    settings = workspace.settings
    name = settings.provider
    return LazyProvider(lambda: workspace.chat_provider, name, settings.model or name,
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
    return engine.replay_turn(user, assistant)


@dataclass(frozen=True)
class ClientMessage:
    """A message as another program's client sent it (its role and text)."""

    role: str
    content: str


class Replacing(Enum):
    """What a request whose history is a session's but for its last exchange does with that
    exchange."""

    NO = "no"
    """Its history is not that: the chat goes on (or the session's history is another)."""
    YES = "yes"
    """A regenerate, or an edit of the last message by the client that asked it."""
    UNPROVEN = "unproven"
    """An edit, or a message of another chat that shares the conversation's id: nothing
    shows the exchange is this client's, so it stays and the request is a turn of its own."""


def replaces_last_turn(workspace: Workspace, name: str, prior: Sequence[ClientMessage],
                       text: str, *, asked_with: str | None) -> Replacing:
    """Whether a client's request asks the session's last exchange again: the history it
    sends (not none) is the session's but for that exchange (compared as `comparable`
    words), and it either asks that exchange's question again (a regenerate, after a restart
    too) or this server answered that exchange for a request whose history was this one
    (`asked_with`, its `history_digest`; None: this server did not answer it): an edit of
    the last message. A message of another chat that shares the id (one whose history was
    another when it asked) or of another front end (the REPL, MCP's record_turn) is never
    taken for an edit: that exchange stays (`UNPROVEN`). The client's history is
    authoritative: the reply it dropped leaves memory, as /retry's does. Reads no more of
    the session than the request carries."""
    from chatmem.app.client_history import comparable, comparable_all, history_digest

    store = workspace.store
    session = store.sessions.find_session(name) if prior else None
    if session is None:
        # A client that sends only its new message leaves the history to chatmem: asking
        # again is then a turn of its own.
        return Replacing.NO
    if store.history.message_count(session.id, at_most=len(prior) + 3) != len(prior) + 2:
        return Replacing.NO
    stored = store.history.messages(session.id)
    if (comparable_all(stored[:len(prior)]) != comparable_all(prior)
            or [m.role for m in stored[len(prior):]] != ["user", "assistant"]):
        return Replacing.NO
    if comparable("user", stored[len(prior)].content) == comparable("user", text):
        return Replacing.YES
    return Replacing.YES if asked_with == history_digest(prior) else Replacing.UNPROVEN


def session_of_shared_id(workspace: Workspace, address: str, made: str) -> str | None:
    """The session a client's id of the form `OWNER/NAME` names (`address`), as the CLI
    takes it: the one OWNER shares with the user, when row security shows it. A session of
    the user's own made from that very id (`made`: `session_name_of` of it) before such ids
    named shares is kept first: its conversation goes on there, and its history is never
    written into another's session. None: neither is there."""
    found = workspace.store.sessions
    if found.find_session(made) is not None:
        return made
    return address if found.find_session(address) is not None else None


def session_of_opening(workspace: Workspace, first: str, prior: Sequence[ClientMessage],
                       text: str, *, taken: Collection[str] = (),
                       named_before: str | None = None) -> tuple[str, bool]:
    """The session of a conversation no id names, known by how it began (`first`, the name
    its opening gives): of `first`, `first-2`, `first-3`…, then of `named_before` (the name
    an older chatmem gave that opening), the one whose history is the client's `prior`,
    else one whose history is `prior` and then `text` asked again (a regenerate), else the
    first free name not `taken`; and whether it is that new one. Such a client sends its
    whole history every time, so a chat that merely began alike (two chats opened with 你好)
    is a session of its own, and one never sees another's messages; an edit of an earlier
    message is a new one too. A chat that goes on wins over one asked again: two chats
    alike so far cannot be told apart, and a regenerate taken for the other's next turn adds
    a turn, where the other way round one chat's turn would replace another's."""
    store = workspace.store
    asked_again: str | None = None
    free: str | None = None
    for stem in dict.fromkeys([first, named_before or first]):
        for n in count(1):
            name = stem if n == 1 else f"{stem}-{n}"
            if name in taken:
                continue
            session = store.sessions.find_session(name)
            if session is None:
                free = free or name
                break
            match = _Match.NONE if not prior else _continues(store.history, session.id,
                                                              prior, text)
            if match is _Match.GOES_ON:
                return name, False
            if match is _Match.ASKED_AGAIN and asked_again is None:
                asked_again = name
    assert free is not None
    return (free, True) if asked_again is None else (asked_again, False)


class _Match(Enum):
    """How a session's history matches a client's: not, as its history (the chat goes on),
    or as its history with its new message asked and answered (a regenerate)."""

    NONE = "none"
    GOES_ON = "goes on"
    ASKED_AGAIN = "asked again"


def _continues(history: HistoryRepository, session_id: int, prior: Sequence[ClientMessage],
               text: str) -> _Match:
    """Whether a session's history is `prior`, or `prior` then `text` and a reply: its
    length, and its last two turns, which the client's history must end with (the opening
    they share already, by its name), compared as `comparable` words (a client that trimmed
    a reply goes on). Reads two turns, not the whole history."""
    held = history.message_count(session_id, at_most=len(prior) + 3)
    if held not in (len(prior), len(prior) + 2):
        return _Match.NONE
    from chatmem.app.client_history import comparable, comparable_all

    last = history.turn_count(session_id)
    tail = comparable_all(history.messages(session_id, max(1, last - 1)))
    if held == len(prior) + 2:
        if tail[-2:-1] != [comparable("user", text)]:
            return _Match.NONE
        tail = tail[:-2]
    said = comparable_all(prior)
    if tail and said[len(said) - len(tail):] != tail:
        return _Match.NONE
    return _Match.GOES_ON if held == len(prior) else _Match.ASKED_AGAIN


def adopt_history(workspace: Workspace, name: str, prior: Sequence[ClientMessage]) -> None:
    """Make session `name`'s history hold what a client says came before its new message:
    the client's history is authoritative, so the messages it has past the session's
    length (its new suffix) are stored; a client that sends less (its own window) stores
    nothing, and one that edited what is stored has its new messages stored after the
    session's, nothing stored changed. The session's length is counted only as far as the
    client's history reaches: a request costs what it carries, whatever the session holds."""
    store = workspace.store
    session = store.sessions.find_session(name)
    if session is None:
        return
    total = store.history.message_count(session.id, at_most=len(prior))
    if new := prior[total:]:
        store.history.import_messages(session.id, [{"role": m.role, "content": m.content}
                                                   for m in new])
