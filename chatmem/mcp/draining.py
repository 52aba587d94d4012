"""`mcp --http` told to stop (SIGTERM, SIGHUP, a first Ctrl-C) answers the tool calls under way
before it ends, as `serve` answers its replies.

The SDK answers a call on a server-sent-events stream (sse-starlette), and sse-starlette ends
every such stream the moment uvicorn is told to exit: a `record_turn` under way (its memory's
update asking a slow helper model) was stored, but its answer never sent ("SSE stream ended
without a response"), so the client could only send it again to the next server, which
stored it twice. Here the streams are ended only once no call (a POST) is under way: the
long-lived GET stream a client keeps open for notifications then ends, and the server with it.
"""

from __future__ import annotations

import threading
import time

from chatmem.serve.asgi import App, Receive, Scope, Send

POLL_SECONDS = 0.05


class CallsFinishFirst:
    """An ASGI app in front of the SDK's that counts the POSTs under way, and, told the
    server stops (`stopping`), ends the event streams once none is."""

    def __init__(self, app: App) -> None:
        from sse_starlette.sse import AppStatus

        AppStatus.disable_automatic_graceful_drain()  # `stopping` ends them instead
        self.app = app
        self.under_way = 0
        self._lock = threading.Lock()
        self._ended = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        with self._lock:
            self.under_way += 1
        try:
            await self.app(scope, receive, send)
        finally:
            with self._lock:
                self.under_way -= 1

    def stopping(self) -> None:
        """The server was told to stop: end every event stream once no call is under way."""

        def streams_end() -> None:
            from sse_starlette.sse import AppStatus

            while self.under_way and not self._ended:
                time.sleep(POLL_SECONDS)
            with self._lock:
                if not self._ended:
                    AppStatus.should_exit = True

        threading.Thread(target=streams_end, name="chatmem-mcp-stopping", daemon=True).start()

    def ended(self) -> None:
        """The server has ended (or never began): sse-starlette's flags, the process's, put
        back as they were, since nothing else resets them: left set, every event stream of a
        later server in this process (a test's, a program's embedding chatmem) would end the
        moment it began, each call's answer lost."""
        from sse_starlette.sse import AppStatus

        with self._lock:
            self._ended = True
            AppStatus.should_exit = False
            AppStatus.enable_automatic_graceful_drain_mode()
