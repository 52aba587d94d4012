"""What the MCP server's tools share: the settings, the registries, the models, and the
conversations kept open between calls; and how a chatmem error reaches the model."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar

from mcp.server.mcpserver import Context

from chatmem.errors import ChatmemError, NotFound, StoreError, UsageError
from chatmem.mcp.unanswered import UnansweredTurns

if TYPE_CHECKING:
    from chatmem.app.kept import Place
    from chatmem.app.workspace import Workspace
    from chatmem.config.settings import Settings
    from chatmem.engine import Engine
    from chatmem.mcp.calls import CallSteps
    from chatmem.notices import Notice
    from chatmem.store import Store

T = TypeVar("T")
Answer = Literal["tool", "resource", "prompt"]
"""What a chatmem error is answered as: the SDK passes each kind of failure on its own way."""


QUEUED = 4
"""Calls that may wait for a conversation's call under way before one more is answered busy.
The SDK runs each tool call on one of anyio's 40 worker threads, held while the call waits
its turn on the conversation: 45 record_turn calls on one conversation of a slow model kept
every other client's calls waiting (list_conversations 127.7 s). A client records its turns
one after another, so more than a few waiting on one conversation is a flood or a stuck
model, and its client hears so at once."""
QUEUED_BY_HISTORY = 8
"""The same over all conversations of one history (a token of `--tokens`; a server of one
history keeps all QUEUED_IN_ALL for it): half of QUEUED_IN_ALL. One person's calls waiting
on a slow model made everyone's "busy" while the whole server's count was theirs alone;
now they fill at most 8 of its 16 places, and another history's call finds 8 still free.
Two conversations of one history each with QUEUED waiting fill it: a client records its
turns one after another, so more is a flood, told as this history's, not the server's."""
QUEUED_IN_ALL = 16
"""The same over all conversations: with one call under way in each of the KEPT (8) kept
conversations, 16 of the 40 threads stay free for the calls that need no conversation
(40 - 8 under way - 16 waiting). Two histories at their QUEUED_BY_HISTORY take it all: the
total, not the share, is what protects the threads."""


LINED_UP = {"record_turn": ("record", "conversation_id"),
            "start_conversation": ("record", "name")}
"""Tools whose calls on one conversation run in the order they came: the purpose of the
kept engine they run on (`Memory.in_conversation`), and the argument naming the
conversation. A client that records its turns without waiting for each answer has them
stored in the order it sent them, after the start_conversation sent before them (a model's
parallel calls): a turn that overtook its start was refused, no session of that name."""

_PLACE: ContextVar[Place | None] = ContextVar("chatmem_mcp_place", default=None)
"""The place a call took in its conversation's line as it came (`Memory.lined_up`); the
worker thread the SDK runs the tool on gets a copy of the event loop task's context."""


class Memory:
    """What the tools share: the settings, the registries, and the models and embedder
    (a ModelPool: each opened once, on first use)."""

    def __init__(self, settings: Settings, *, histories: bool = False,
                 log: Callable[[str], None] | None = None) -> None:
        """`histories`: each caller's history is the one its token names (`--tokens`), so
        each history's waiting calls get a share of the server's places. `log`: the
        server's log (stderr), told a history fault naming its file (told_to_the_model)."""
        from chatmem.app.kept import KeptConversations
        from chatmem.app.model_pool import ModelPool
        from chatmem.plugins import load_registries
        from chatmem.serve.server_logs import upkeep_stopped_to

        self.settings = settings
        self.log = log
        self.registries = load_registries()
        self.models = ModelPool()
        self.kept = KeptConversations(
            queued=QUEUED, queued_by_owner=QUEUED_BY_HISTORY if histories else None,
            queued_in_all=QUEUED_IN_ALL, upkeep_when_idle=True,
            upkeep_failed=upkeep_stopped_to(log))
        """The engines of the conversations recorded and read, open between calls."""
        self.unanswered = UnansweredTurns()
        """The turn each conversation's last record_turn stored, until it is answered."""

    def settings_for(self, ctx: Context | None) -> Settings:
        """The history of the caller: the one BearerGuard found for its token (a tokens
        file, over HTTP), else the server's."""
        import dataclasses

        history = _history_in_scope(ctx)
        return dataclasses.replace(self.settings, db=history) if history else self.settings

    @contextmanager
    def workspace(self, ctx: Context | None, *, create: bool = False,
                  answer: Answer = "tool") -> Iterator[Workspace]:
        """A workspace for one tool call (a resource read, a prompt: `answer`); chatmem
        errors become one line for the client."""
        from chatmem.app import Workspace

        settings = self.settings_for(ctx)
        with told_to_the_model(answer, settings, self.log), Workspace(
                settings, create=create, models=self.models, registries=self.registries) as ws:
            yield ws

    @contextmanager
    def lined_up(self, tool: str, arguments: Mapping[str, Any],
                 ctx: Context | None) -> Iterator[None]:
        """Around a call of `tool` as it comes, on the event loop before anything waits (the
        calls come in the order the client sent them): one of LINED_UP takes its place in
        its conversation's line, or is refused busy then; the place is left when the call
        ends, whether or not its job ran."""
        purpose, naming = LINED_UP.get(tool, (None, ""))
        conversation_id = arguments.get(naming)
        if purpose is None or not isinstance(conversation_id, str):
            yield
            return
        settings = self.settings_for(ctx)
        with told_to_the_model(settings=settings, log=self.log):
            place = self.kept.line_up((settings.location, conversation_key(conversation_id),
                                       purpose), owner=settings.location)
        taken = _PLACE.set(place)
        try:
            yield
        finally:
            _PLACE.reset(taken)
            self.kept.leave(place)

    def in_conversation(self, ctx: Context | None, conversation_id: str, purpose: str,
                        open_engine: Callable[[Workspace], Engine[Store]],
                        job: Callable[[Engine[Store]], T],
                        heard: list[Notice] | None = None,
                        steps: CallSteps | None = None,
                        afterwards: Callable[[Engine[Store]], object] | None = None) -> T:
        """Run `job` on the conversation's engine for `purpose` ("record", "read",
        "search"), kept open between calls (chatmem.app.kept) so a call costs what a chat's
        turn costs; chatmem errors become one line for the model. `heard` gets what the
        history told meanwhile (a turn waited for another process's write): no listener
        hears a server's workspace, and the call it held up tells its client. With `steps`,
        a call its client cancelled while it waited for the conversation (behind another
        call's job) ends before its job starts: nothing of it is stored. `afterwards`: run
        on the engine once the job is done, after the call is answered (upkeep between
        turns: the conversation's next call waits for it, this one does not)."""
        from chatmem.app import Workspace
        from chatmem.mcp.calls import Stopped

        started = threading.Event()

        def run(ws: Workspace, engine: Engine[Store]) -> T:
            started.set()
            try:
                if steps is not None:
                    steps.check()
                return job(engine)
            finally:
                if heard is not None:
                    heard.extend(ws.take_notices())

        settings = self.settings_for(ctx)
        key = (settings.location, conversation_key(conversation_id), purpose)
        place = _PLACE.get()
        with told_to_the_model(settings=settings, log=self.log):
            try:
                done = self.kept.run(
                    key,
                    partial(Workspace, settings, models=self.models, registries=self.registries),
                    lambda ws: opened_in(ws, open_engine(ws)), run,
                    waiting=None if steps is None else
                    lambda: steps.watch(queued=not started.is_set()),
                    owner=settings.location,
                    place=place if place is not None and place.key == key else None)
            except Stopped:
                assert steps is not None
                steps.ended()
                raise
        if afterwards is not None:
            self.kept.after(key, lambda _ws, engine: afterwards(engine))
        return done


def opened_in(workspace: Workspace, engine: Engine[Store]) -> Engine[Store]:
    """`engine`, told first what opening `workspace` told (the history file moved,
    retention erased or could not run): no listener hears a server's workspace, and the
    call that opens the conversation tells the client, as the CLI tells stderr."""
    engine.told_first(workspace.take_notices())
    return engine


def conversation_key(conversation_id: str) -> str:
    """A conversation id as the session it names is stored (NFC, as every session name):
    `Zoë` sent composed or decomposed is one conversation, so one line of calls and one kept
    engine. Keyed as sent, the two forms ran at once on two engines of one session, and each
    had its own places in line."""
    from chatmem.app.sessions import normal_name

    return normal_name(conversation_id)


@contextmanager
def told_to_the_model(answer: Answer = "tool", settings: Settings | None = None,
                      log: Callable[[str], None] | None = None) -> Iterator[None]:
    """A chatmem error raised inside becomes one line for the client, as the SDK passes it
    on: a ToolError from a tool, a ResourceError from a resource (not found: -32602), an
    MCPError from a prompt (any other exception would reach the client as "Error
    executing tool" alone, and the server's log as a traceback). The line names the
    history (`settings`: the caller's) without its path on the server.

    A KeyboardInterrupt raised in a call's worker thread (a plugin's, or a provider's) ended
    what-ifs and replays halfway (`Engine.interrupt_ends`): the call fails with INTERRUPTED,
    rather than the SDK ending the server. On the main thread it is the server's Ctrl-C."""
    from chatmem.render.errors import Client, client_error_text

    try:
        yield
    except KeyboardInterrupt:
        if threading.current_thread() is threading.main_thread():
            raise
        _fail(answer, INTERRUPTED, not_found=False)
    except ChatmemError as e:
        if log is not None and isinstance(e, StoreError) and e.only_owner_mends:
            from chatmem.render.errors import error_text

            log(error_text(e))
        _fail(answer, client_error_text(e, settings, client=Client.MCP),
              not_found=isinstance(e, NotFound), invalid=isinstance(e, UsageError))


INTERRUPTED = "interrupted before it finished (nothing half-built is answered); call again"
"""What a call a KeyboardInterrupt ended is answered with."""


def _fail(answer: Answer, text: str, *, not_found: bool, invalid: bool = False) -> NoReturn:
    """Raise what the SDK answers `text` with. A resource's ResourceError is an internal
    error (-32603) to the client, the server's fault: a URI that names what does not exist
    (-32602, ResourceNotFoundError) or asks what cannot be (`invalid`: an unknown strategy
    spec, a parameter out of range) is the client's, invalid params, as a prompt's is."""
    from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
    from mcp.shared.exceptions import MCPError
    from mcp.types import INVALID_PARAMS

    if answer == "resource":
        if invalid and not not_found:
            raise MCPError(INVALID_PARAMS, text) from None
        raise (ResourceNotFoundError if not_found else ResourceError)(text) from None
    if answer == "prompt":
        raise MCPError(INVALID_PARAMS, text) from None
    raise ToolError(text) from None


def _history_in_scope(ctx: Context | None) -> str | None:
    """What BearerGuard left in the HTTP request's ASGI scope: the token was checked there,
    once, and is not read again here (a header is the client's word, the scope the guard's)."""
    from chatmem.serve.guards import HISTORY_SCOPE_KEY

    try:
        request = ctx.request_context.request if ctx is not None else None
    except ValueError:  # outside a request
        return None
    scope = getattr(request, "scope", None)  # a Starlette Request over HTTP; None on stdio
    return scope.get(HISTORY_SCOPE_KEY) if isinstance(scope, Mapping) else None
