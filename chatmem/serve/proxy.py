"""`chatmem serve`: an OpenAI-compatible API whose every request is a turn with memory.

A fourth front end over chatmem.app. Each `/v1/chat/completions` request names a
conversation (the `X-Chatmem-Conversation` header, else its metadata's conversation id or
its `user`, else a fingerprint of how the conversation began); the client's
history is authoritative (what it has past the stored history is stored), its newest user
message is taken as a turn exactly as the REPL takes one: the strategy builds the context,
the configured model answers, the reply streams through while it is recorded, and the turn
is stored; the response ends there, and memory's update after it (the helper model's
summary or facts) runs on, before the conversation's next request. Every response carries
`X-Chatmem-Turn`; `GET /v1/chatmem/turns/{id}` returns what `chatmem inspect --json` shows
for it.

A conversation's requests run on a thread of its own, where its workspace and engine stay
open between requests (chatmem.app.kept: SQLite connections stay on the thread that opened
them), so a request costs a turn of a chat, not the opening of the history; the chat models
are shared through a `ModelPool`. A client that goes away mid-reply leaves the turn stored
as cancelled, as Ctrl-C does in the REPL.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from chatmem.errors import ChatmemError, RequestError
from chatmem.serve.answers import (
    MODEL_NOT_FOUND,
    Unstored,
    completion_json,
    error_response,
    status_of,
    unstored_json,
)
from chatmem.serve.bodies import BodyRefused, capped_body
from chatmem.serve.conversations import ServedConversations
from chatmem.serve.event_stream import DONE
from chatmem.serve.guards import HISTORY_SCOPE_KEY
from chatmem.serve.requests import parsed_body, read_request, refuse_past_budget
from chatmem.serve.turn import Turn
from chatmem.text import valid_text

if TYPE_CHECKING:
    from chatmem.config.settings import Settings


def build_app(settings: Settings, *, strategy: str | None = None,
              log: Callable[[str], None] | None = None) -> Starlette:
    """The HTTP application over the history and the model `settings` name; `log` hears
    each failure of the model in full, one line each (a client is told less)."""
    from chatmem.app.model_pool import ModelPool
    from chatmem.app.server_history import held_open

    proxy = Proxy(settings, ModelPool(), strategy, log)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        with held_open(settings, proxy.pool):
            try:
                yield
            finally:
                proxy.kept.close()  # each kept conversation's engine, then its history
                try:
                    proxy.pool.close()  # the models the requests shared, closed once
                except ChatmemError as e:
                    # A plugin provider's close that raises: one line in the log, where a
                    # traceback and "Application shutdown failed" were.
                    if log is not None:
                        from chatmem.render.errors import error_text

                        log(f"closing the models: {error_text(e)}")

    app = Starlette(routes=[
        Route("/v1/chat/completions", proxy.chat_completions, methods=["POST"]),
        Route("/v1/chat/completions/", proxy.chat_completions, methods=["POST"]),
        Route("/v1/models", proxy.models, methods=["GET"]),
        Route("/v1/models/{model_id:path}", proxy.model, methods=["GET"]),
        Route("/v1/chatmem/turns/{turn_id:path}", proxy.turn, methods=["GET"]),
    ], lifespan=lifespan, exception_handlers={404: not_served, 405: not_served})
    # A base URL ending in a slash (`/v1/chat/completions/`) was a 307 with an empty body:
    # the SDKs follow it, but curl, httpx and many a bot's HTTP code do not, and showed an
    # error without words. It is served as it is (and `GET /v1/models/` lists the models);
    # any other path is a 404 naming what is served, never a redirect.
    app.router.redirect_slashes = False
    return app


SERVED = ("POST /v1/chat/completions, GET /v1/models[/ID] and "
          "GET /v1/chatmem/turns/CONVERSATION@N")


async def not_served(request: Request, error: Exception) -> Response:
    """An OpenAI-shaped error for a path or method chatmem does not serve (a client's SDK
    shows its message; Starlette's own is a bare "Not Found")."""
    status = getattr(error, "status_code", 404)
    what = f"{request.method} {request.url.path}"
    # OpenAI's code for a path it does not serve.
    code = "unknown_url" if status == 404 else None
    answer = error_response(RequestError(f"{what} is not served here: chatmem serves "
                                         f"{SERVED}", code=code), status)
    # A 405 says which methods the path takes (its Allow header), as HTTP requires.
    answer.headers.update(getattr(error, "headers", None) or {})
    return answer


MODELS_KEPT_SECONDS = 60.0
"""How long /v1/models answers with the model list the endpoint gave, rather than ask it
again: a client (Open WebUI, a chat UI on each page) lists the models before every request,
and a slow or metered endpoint paid a round trip for each. A failed listing is not kept."""


class Proxy(ServedConversations):
    """The routes of the API, over the conversations it keeps."""

    _listed: tuple[float, list[str]] | None = None
    """When the endpoint last listed its models, and what it listed (MODELS_KEPT_SECONDS)."""

    # -- /v1/chat/completions ----------------------------------------------------------

    async def chat_completions(self, request: Request) -> Response:
        import anyio

        raw = await capped_body(request)
        if isinstance(raw, BodyRefused):
            return error_response(raw.error, raw.status)
        settings = self.settings_for(request.scope.get(HISTORY_SCOPE_KEY))
        self.history_checked(settings)
        try:
            # A large body is parsed on a thread: other requests' replies stream meanwhile.
            body = (parsed_body(raw) if len(raw) < 2**20 else
                    await anyio.to_thread.run_sync(parsed_body, raw))
            asked = read_request(body, request.headers)
            refuse_past_budget(asked, settings.context_budget)
        except RequestError as e:
            return error_response(e, 400)
        # Echoed in every answer, which is UTF-8: a lone surrogate cannot be written there.
        turn = Turn(self, asked, valid_text(str(body.get("model") or "")), settings)
        turn.start()
        if asked.stream:
            # The model answering (its server took the request: ANSWERING), the reply's first
            # piece or its end, or why there is none: a turn refused before it was sent (over
            # the budget) or by the model (401, 429) is answered with its own status, as a
            # request not streamed is, not as an error inside a 200. The headers go out once
            # the model answers, not at its first word: a reasoning model thinking for minutes
            # had clients (undici's 300 s wait for headers) and proxies give up on it.
            async with anyio.create_task_group() as watching:
                # A client that hangs up before the first piece (a stalled model) cancels
                # the turn too; once streaming, Starlette tells the stream.
                watching.start_soon(turn.watch, request)
                try:
                    first = await turn.next_event()
                finally:
                    watching.cancel_scope.cancel()
            if isinstance(first, BaseException):
                return error_response(first, status_of(first), turn.settings)
            return StreamingResponse(turn.sse(first), media_type="text/event-stream",
                                     headers=turn.headers())
        async with anyio.create_task_group() as watching:
            # A client that hangs up cancels the reply, as a streamed one's does (Starlette
            # tells a plain response of no disconnect).
            watching.start_soon(turn.watch, request)
            try:
                while (event := await turn.next_event()) is not DONE:
                    if isinstance(event, BaseException):
                        return error_response(event, status_of(event), turn.settings)
                    if isinstance(event, Unstored):
                        return JSONResponse(unstored_json(event, turn.model_asked,
                                                          turn.completion_id, turn.settings),
                                            headers=turn.headers())
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
        names = self._endpoint_models()
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

    def _endpoint_models(self) -> list[str]:
        """The endpoint's models, asked at most once a MODELS_KEPT_SECONDS; the configured
        model alone when it cannot say."""
        listed, now = self._listed, time.monotonic()
        if listed is not None and now - listed[0] < MODELS_KEPT_SECONDS:
            return listed[1]
        try:
            _, names = self.registries.available_models(self.settings)
        except ChatmemError:
            return [self.settings.model] if self.settings.model else []
        self._listed = (now, list(names))  # one assignment: a thread reads the old or the new
        return list(names)

    async def model(self, request: Request) -> Response:
        import anyio

        wanted = request.path_params["model_id"]
        if not wanted:  # `/v1/models/`
            return await self.models(request)
        listed = (await anyio.to_thread.run_sync(self._models))["data"]
        found = next((m for m in listed if m["id"] == wanted), None)
        if found is None:
            return error_response(RequestError(f"no model {wanted!r} here (GET /v1/models lists"
                                              " them)", "model", code=MODEL_NOT_FOUND), 404)
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
