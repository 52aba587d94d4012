"""`chatmem serve`: an OpenAI-compatible API whose every request is a turn with memory.

A fourth front end over chatmem.app. Each `/v1/chat/completions` request names a
conversation (the `X-Chatmem-Conversation` header, else the request's `user` or its
metadata's conversation id, else a fingerprint of how the conversation began); the client's
history is authoritative (what it has past the stored history is stored), its newest user
message is taken as a turn exactly as the REPL takes one: the strategy builds the context,
the configured model answers, the reply streams through while it is recorded, and the turn
is stored. Every response carries `X-Chatmem-Turn`; `GET /v1/chatmem/turns/{id}` returns
what `chatmem inspect --json` shows for it.

A conversation's requests run on a thread of its own, where its workspace and engine stay
open between requests (chatmem.app.kept: SQLite connections stay on the thread that opened
them), so a request costs a turn of a chat, not the opening of the history; the chat models
are shared through a `ModelPool`. A client that goes away mid-reply leaves the turn stored
as cancelled, as Ctrl-C does in the REPL.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from chatmem.errors import (
    ChatmemError,
    NotFound,
    OverBudget,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderNotFound,
    ProviderRateLimited,
    ProviderTimeout,
    RequestError,
    TurnNotReplaceable,
    UsageError,
)
from chatmem.serve.listening import HISTORY_SCOPE_KEY
from chatmem.serve.requests import TurnAsked, read_request

if TYPE_CHECKING:
    from chatmem.app.workspace import ModelPool, Workspace
    from chatmem.config.settings import Settings
    from chatmem.engine import Engine, TurnResult
    from chatmem.store import Store

TURN_HEADER = "X-Chatmem-Turn"
DISCONNECT_POLL = 0.2
"""Seconds between looks at whether the client of a reply that is not streamed is there."""
ANSWERED_KEPT = 4096
"""Conversations whose last answered turn the server remembers (for a regenerate or an
edit of it); one beyond is regenerated only by asking its last question again."""
DONE = object()


def build_app(settings: Settings, *, strategy: str | None = None) -> Starlette:
    """The HTTP application over the history and the model `settings` name."""
    from chatmem.app.workspace import ModelPool, held_open

    proxy = Proxy(settings, ModelPool(), strategy)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        with held_open(settings):
            try:
                yield
            finally:
                proxy.kept.close()  # each kept conversation's engine, then its history
                proxy.pool.close()  # the models the requests shared, closed once

    return Starlette(routes=[
        Route("/v1/chat/completions", proxy.chat_completions, methods=["POST"]),
        Route("/v1/models", proxy.models, methods=["GET"]),
        Route("/v1/models/{model_id:path}", proxy.model, methods=["GET"]),
        Route("/v1/chatmem/turns/{turn_id:path}", proxy.turn, methods=["GET"]),
    ], lifespan=lifespan, exception_handlers={404: not_served, 405: not_served})


SERVED = ("POST /v1/chat/completions, GET /v1/models[/ID] and "
          "GET /v1/chatmem/turns/CONVERSATION@N")


async def not_served(request: Request, error: Exception) -> Response:
    """An OpenAI-shaped error for a path or method chatmem does not serve (a client's SDK
    shows its message; Starlette's own is a bare "Not Found")."""
    status = getattr(error, "status_code", 404)
    what = f"{request.method} {request.url.path}"
    return error_response(RequestError(f"{what} is not served here: chatmem serves {SERVED}"),
                          status)


class Proxy:
    def __init__(self, settings: Settings, pool: ModelPool, strategy: str | None) -> None:
        from chatmem.app.kept import KeptConversations
        from chatmem.plugins import load_registries

        self.settings = settings
        self.pool = pool
        self.strategy = strategy
        self.registries = load_registries()
        """One for every request's workspace: the strategies, providers and embedders."""
        self.kept = KeptConversations()
        """The conversations requests have used, open between requests."""
        # Weak: a conversation's lock lives while a request holds or waits on it, so a
        # long-running server does not keep one for every conversation it ever served.
        self._turns: weakref.WeakValueDictionary[tuple[str, str], threading.Lock] = (
            weakref.WeakValueDictionary())
        self._turns_guard = threading.Lock()
        self._openings: set[tuple[str, str]] = set()
        """Sessions chosen for chats no id names that have no turn yet (location, name)."""
        self._openings_guard = threading.Lock()
        self._answered: OrderedDict[tuple[str, str], int] = OrderedDict()
        """The stored turn (its row id) this server last answered in a conversation: the one
        a client may regenerate or edit (at most ANSWERED_KEPT conversations)."""

    def answered(self, location: str, conversation: str) -> int | None:
        with self._turns_guard:
            return self._answered.get((location, conversation))

    def note_answered(self, location: str, conversation: str, turn_id: int) -> None:
        with self._turns_guard:
            self._answered[(location, conversation)] = turn_id
            self._answered.move_to_end((location, conversation))
            while len(self._answered) > ANSWERED_KEPT:
                self._answered.popitem(last=False)

    def one_turn_at_a_time(self, location: str, conversation: str) -> threading.Lock:
        """The lock a conversation's turns take: requests of one conversation that differ in
        model, strategy or options have engines of their own, and would otherwise run at
        once (their turns interleaved, the number a response names another's)."""
        with self._turns_guard:
            lock = self._turns.get((location, conversation))
            if lock is None:
                lock = self._turns[(location, conversation)] = threading.Lock()
            return lock

    @contextmanager
    def session_of_opening(self, asked: TurnAsked, settings: Settings) -> Iterator[str]:
        """The session of a chat no id names (`conversations.session_of_opening`), kept from
        other requests until the turn is over: two chats that began alike at once get a
        session each."""
        from chatmem.app import Workspace
        from chatmem.app.conversations import session_of_opening

        where = str(settings.location)
        with Workspace(settings, models=self.pool, registries=self.registries) as ws:
            # Opened (a key derived) before, not while, other chats wait on the guard.
            _ = ws.store
            with self._openings_guard:
                name, new = session_of_opening(
                    ws, asked.conversation, asked.prior, asked.text,
                    taken={n for at, n in self._openings if at == where})
                if new:
                    self._openings.add((where, name))
        try:
            yield name
        finally:
            if new:
                with self._openings_guard:
                    self._openings.discard((where, name))

    # -- /v1/chat/completions ----------------------------------------------------------

    async def chat_completions(self, request: Request) -> Response:
        import anyio

        try:
            body = await request.json()
        except (ValueError, RecursionError):  # RecursionError: nested beyond what Python reads
            return error_response(RequestError("the body is not JSON"), 400)
        try:
            asked = read_request(body, request.headers)
        except RequestError as e:
            return error_response(e, 400)
        turn = Turn(self, asked, str(body.get("model") or ""),
                    self.settings_for(request.scope.get(HISTORY_SCOPE_KEY)))
        turn.start()
        if asked.stream:
            # The reply's first piece (or its end), or why there is none: a turn refused
            # before it was sent (over the budget) or by the model (401, 429) is answered with
            # its own status, as a request not streamed is, not as an error inside a 200.
            first = await turn.next_event()
            if isinstance(first, BaseException):
                return error_response(first, status_of(first), turn.settings)
            return StreamingResponse(turn.sse(first), media_type="text/event-stream",
                                     headers=turn.headers())
        async with anyio.create_task_group() as watching:
            # A client that hangs up cancels the reply at its next piece, as a streamed one's
            # does (Starlette tells a plain response of no disconnect).
            watching.start_soon(turn.watch, request)
            try:
                while (event := await turn.next_event()) is not DONE:
                    if isinstance(event, BaseException):
                        return error_response(event, status_of(event), turn.settings)
            finally:
                watching.cancel_scope.cancel()
        assert turn.result is not None
        return JSONResponse(completion_json(turn.result, turn.model_asked, turn.turn_id),
                            headers=turn.headers())

    def settings_for(self, history: str | None) -> Settings:
        """The settings of a request: the history its token names (tokens file), else the
        server's own."""
        if history is None:
            return self.settings
        import dataclasses

        return dataclasses.replace(self.settings, db=history)

    # -- /v1/models --------------------------------------------------------------------

    async def models(self, request: Request) -> Response:
        import anyio

        return JSONResponse(await anyio.to_thread.run_sync(self._models))

    def _models(self) -> dict[str, Any]:
        try:
            _, names = self.registries.available_models(self.settings)
        except ChatmemError:
            names = [self.settings.model] if self.settings.model else []
        # Each alias ([aliases]) beside the model it names, as `chatmem models` shows them: a
        # request may name either.
        aliases = self.settings.aliases
        names = list(dict.fromkeys(
            name for model in names
            for name in [model, *sorted(a for a, target in aliases.items() if target == model)]))
        created = int(time.time())
        listed = [{"id": name, "object": "model", "created": created, "owned_by": "chatmem"}
                  for model in names
                  for name in [model, *(f"{model}@{s}" for s in self.registries.strategies)]]
        return {"object": "list", "data": listed}

    async def model(self, request: Request) -> Response:
        import anyio

        wanted = request.path_params["model_id"]
        listed = (await anyio.to_thread.run_sync(self._models))["data"]
        found = next((m for m in listed if m["id"] == wanted), None)
        if found is None:
            return error_response(RequestError(f"no model {wanted!r} here (GET /v1/models lists"
                                              " them)", "model"), 404)
        return JSONResponse(found)

    # -- /v1/chatmem/turns/{id} --------------------------------------------------------

    async def turn(self, request: Request) -> Response:
        import anyio

        turn_id = request.path_params["turn_id"]
        conversation, at, number = turn_id.rpartition("@")
        if not at or not (number.isascii() and number.isdigit()):  # "²" is a digit too
            return error_response(RequestError(f"turn id {turn_id!r} is not CONVERSATION@N",
                                              "turn_id"), 404)
        settings = self.settings_for(request.scope.get(HISTORY_SCOPE_KEY))
        try:
            return JSONResponse(await anyio.to_thread.run_sync(
                self._inspect, settings, conversation, int(number)))
        except ChatmemError as e:
            return error_response(e, status_of(e), settings)

    def _inspect(self, settings: Settings, conversation: str, number: int) -> dict[str, Any]:
        from chatmem.app import Workspace
        from chatmem.app.inspection import inspect_turn
        from chatmem.render.payloads import inspection_json

        with Workspace(settings, create=False, models=self.pool,
                       registries=self.registries) as ws:
            return inspection_json(inspect_turn(ws, conversation, number))


class Turn:
    """One request's turn, run on a worker thread; its events (reply pieces, the end, or an
    error) reach the event loop through a queue."""

    def __init__(self, proxy: Proxy, asked: TurnAsked, model_asked: str,
                 settings: Settings) -> None:
        self.proxy = proxy
        self.asked = asked
        self.settings = settings
        self.model_asked = model_asked
        self.events: queue.Queue[object] = queue.Queue()
        self.gone = threading.Event()
        """The client went away: the reply is cancelled at its next piece."""
        self.result: TurnResult | None = None
        self.turn_id = ""
        self.completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True, name="chatmem-turn").start()

    async def next_event(self) -> object:
        import anyio

        # Abandoned when the client goes away: the generator's `finally` runs at once.
        return await anyio.to_thread.run_sync(self.events.get, abandon_on_cancel=True)

    async def watch(self, request: Request) -> None:
        """Until cancelled: mark the turn `gone` once the client has disconnected."""
        import anyio

        while not await request.is_disconnected():
            await anyio.sleep(DISCONNECT_POLL)
        self.gone.set()

    def headers(self) -> dict[str, str]:
        from urllib.parse import quote

        return {TURN_HEADER: quote(self.turn_id, safe="@"),
                "X-Chatmem-Conversation": quote(self.asked.conversation)}

    def _run(self) -> None:
        try:
            if self.asked.fingerprinted:
                with self.proxy.session_of_opening(self.asked, self.settings) as name:
                    self.asked = replace(self.asked, conversation=name)
                    self.result = self._take_turn()
            else:
                self.result = self._take_turn()
        except BaseException as e:  # every failure reaches the client, as OpenAI words one
            self.events.put(e)
            return
        self.events.put(DONE)

    def _take_turn(self) -> TurnResult:
        from functools import partial

        from chatmem.app import Workspace
        from chatmem.app.conversations import (
            adopt_history,
            apply_retention,
            replaces_last_turn,
            start_conversation,
        )
        from chatmem.app.kept import options_key
        from chatmem.app.sessions import last_turn
        from chatmem.config.settings import Source, SourceKind, for_model, with_options
        from chatmem.engine.resend import resend_last

        asked = self.asked
        settings = self.settings
        by_request = Source(SourceKind.FLAG, "request")
        if asked.model:
            settings = for_model(settings, asked.model, by_request)
        if asked.options:
            # max_tokens caps the reply: a setting, as -o max_reply_tokens is for the CLI.
            settings = with_options(settings, asked.options, by_request)
        proxy = self.proxy
        opened: list[Workspace] = []

        def open_engine(ws: Workspace) -> Engine[Store]:
            # `serve -s` is the strategy of conversations it starts: one another front end
            # (or an earlier request) started keeps its own unless the request names one.
            chosen = asked.strategy or (
                proxy.strategy if ws.store.sessions.find_session(asked.conversation) is None
                else None)
            spec = ws.registries.strategies.parse(chosen) if chosen else None
            opened.append(ws)  # opening applies retention (start_conversation)
            return start_conversation(ws, asked.conversation, strategy=spec,
                                      system=asked.system, settings=settings)

        def take(ws: Workspace, engine: Engine[Store]) -> TurnResult:
            if not opened:
                # Once per server: a conversation kept open tries again until it ran.
                apply_retention(ws)
            with proxy.one_turn_at_a_time(str(self.settings.location), asked.conversation):
                engine.settle()  # a new session exists before the client's history goes in
                adopt_history(ws, asked.conversation, asked.prior)
                previous = last_turn(ws, engine.session)
                # The number the turn will take unless another process writing this very
                # conversation commits first; the stream's last piece says the real one.
                self.turn_id = (f"{asked.conversation}@"
                                f"{(previous.number if previous else 0) + 1}")
                result = None
                where = str(self.settings.location)
                ours = previous is not None and previous.id is not None \
                    and previous.id == proxy.answered(where, asked.conversation)
                if replaces_last_turn(ws, asked.conversation, asked.prior, asked.text,
                                      last_was_ours=ours):
                    # Not a turn it may replace (one a summary was made from, or messages
                    # imported without a turn): then it is a turn of its own.
                    with suppress(TurnNotReplaceable, NotFound):
                        result = resend_last(engine, asked.text, on_delta=self._delta,
                                             expected=previous.id if previous else None)
                if result is None:
                    result = engine.run_turn(asked.text, on_delta=self._delta)
                self.turn_id = f"{asked.conversation}@{result.record.number}"
                if result.record.id is not None:
                    proxy.note_answered(where, asked.conversation, result.record.id)
            engine.between_turns()
            return result

        # Whatever chooses the engine is in the key: a request that differs gets its own.
        key = (self.settings.location, asked.conversation, asked.strategy, asked.system,
               settings.model, options_key(settings.options))
        return proxy.kept.run(
            key, partial(Workspace, self.settings, models=proxy.pool,
                         registries=proxy.registries), open_engine, take)

    def _delta(self, text: str) -> None:
        if self.gone.is_set():
            raise KeyboardInterrupt  # the engine stores the turn as cancelled
        self.events.put(("delta", text))

    async def sse(self, first: object) -> AsyncIterator[str]:
        """The reply as OpenAI's stream of chunks, then the chatmem turn and [DONE]."""
        event = first
        try:
            yield _sse(self._chunk({"role": "assistant", "content": ""}))
            while True:
                if event is DONE:
                    break
                if isinstance(event, BaseException):
                    yield _sse(error_json(event, self.settings))
                    yield "data: [DONE]\n\n"
                    return
                if isinstance(event, tuple) and event[0] == "delta":
                    yield _sse(self._chunk({"content": event[1]}))
                event = await self.next_event()
            result = self.result
            assert result is not None
            end = self._chunk({}, finish=finish_reason(result))
            end["usage"] = usage_json(result)
            end["chatmem"] = {"turn": self.turn_id, "status": str(result.status)}
            yield _sse(end)
            yield "data: [DONE]\n\n"
        finally:
            self.gone.set()  # a client that left mid-reply cancels the rest

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": self.completion_id, "object": "chat.completion.chunk",
                "created": int(time.time()), "model": self.model_asked,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _sse(data: Mapping[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


# -- answering ------------------------------------------------------------------------------


def usage_json(result: TurnResult) -> dict[str, int]:
    record = result.record
    prompt = record.prompt_tokens if record.prompt_tokens is not None else (
        record.estimated_tokens or 0)
    reply = record.completion_tokens or 0
    return {"prompt_tokens": prompt, "completion_tokens": reply, "total_tokens": prompt + reply}


def finish_reason(result: TurnResult) -> str:
    """OpenAI's word for why the reply ended: `length` at the reply cap (a client may offer
    to continue), `cancelled` when the client went away, else `stop`."""
    from chatmem.store.records import TurnStatus

    if result.status != TurnStatus.OK:
        return "cancelled"
    return "length" if result.cut_at_limit else "stop"


def completion_json(result: TurnResult, model: str, turn_id: str) -> dict[str, Any]:
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": result.reply},
                         "finish_reason": finish_reason(result)}],
            "usage": usage_json(result),
            "chatmem": {"turn": turn_id, "status": str(result.status)}}


def status_of(error: BaseException) -> int:
    if isinstance(error, RequestError | OverBudget):
        return 400
    if isinstance(error, ProviderAuthError):
        return 401
    if isinstance(error, NotFound | ProviderNotFound):
        return 404
    if isinstance(error, ProviderRateLimited):
        return 429
    if isinstance(error, ProviderTimeout):
        return 504
    if isinstance(error, ProviderConnectionError | ProviderError):
        return 502
    if isinstance(error, UsageError):
        return 400
    return 500


def error_json(error: BaseException, settings: Settings | None = None) -> dict[str, Any]:
    """An OpenAI-shaped error: one line, never a secret, a traceback nor the path of the
    history (`settings`: the request's) on the server."""
    from chatmem.render.errors import client_error_text

    if isinstance(error, ChatmemError):
        message = client_error_text(error, settings)
    else:
        message = f"chatmem could not take this turn ({type(error).__name__})"
    kind = "invalid_request_error" if status_of(error) < 500 else "api_error"
    return {"error": {"message": message, "type": kind,
                      "param": getattr(error, "param", None), "code": None}}


def error_response(error: BaseException, status: int,
                   settings: Settings | None = None) -> JSONResponse:
    return JSONResponse(error_json(error, settings), status_code=status)
