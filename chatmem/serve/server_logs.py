"""The server log of an HTTP front end (serve, `mcp --http`) that no client can fill: the
warnings any client can have uvicorn repeat once a request, and the guard's 503 line, said
once a minute each with a count (Repeated); running out of open files (another part of the
process took them) one line a minute, not a traceback per accept (OutOfFiles)."""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import Callable

REPEAT_SECONDS = 60.0
"""How often a warning a client can have uvicorn repeat (or running out of files) is said."""
BUSY = "too many requests at once: answered 503"
"""The server's log line for a request answered 503 (Repeated says it once a minute)."""


def upkeep_stopped_to(log: Callable[[str], None] | None) -> Callable[[Exception], None] | None:
    """What tells `log` (a server's) of the error that stopped its idle upkeep, in one short
    line (chatmem.app.idle_upkeep)."""
    if log is None:
        return None

    def stopped(error: Exception) -> None:
        said = " ".join(str(error).split())
        said = said if len(said) <= 160 else said[:159] + "…"
        log(f"the idle upkeep stopped after an error ({type(error).__name__}: {said}); "
            "the server goes on")

    return stopped


class OutOfFiles(logging.Filter):
    """A log record of running out of open files (asyncio's accept, or a request that could
    not open a file) let through as one line, without its traceback, once per `every`
    seconds; the others in between are dropped."""

    def __init__(self, every: float = REPEAT_SECONDS) -> None:
        super().__init__()
        self.every = every
        self.last: float | None = None
        self.dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not (isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE)):
            return True
        now = time.monotonic()
        if self.last is not None and now - self.last < self.every:
            self.dropped += 1
            return False
        since = f" ({self.dropped} more since the last)" if self.dropped else ""
        self.last, self.dropped = now, 0
        record.msg, record.args = (f"out of open files ({exc.strerror or exc}): new connections "
                                   f"wait until some close{since}"), None
        record.exc_info, record.exc_text = None, None
        return True


class Repeated(logging.Filter):
    """The warnings of uvicorn's log that any client can have it write once a request, and
    the guard's 503 line, let through once per `every` seconds each, the next one saying how
    many were dropped since; every other record passes. A client sending `Connection:
    upgrade` wrote two lines a request (uvicorn serves no upgrade here), a flood of them as
    many as the server answered."""

    CLIENTS_CAN_REPEAT = ("Unsupported upgrade request", "No supported WebSocket library",
                          "Invalid HTTP request received", BUSY)
    """How each begins (uvicorn's own wording, which a version may extend)."""

    def __init__(self, every: float = REPEAT_SECONDS) -> None:
        super().__init__()
        self.every = every
        self.said: dict[str, tuple[float, int]] = {}
        """When each was last let through, and how many were dropped since."""

    def filter(self, record: logging.LogRecord) -> bool:
        said = record.msg if isinstance(record.msg, str) else ""
        which = next((start for start in self.CLIENTS_CAN_REPEAT if said.startswith(start)), None)
        if which is None:
            return True
        now = time.monotonic()
        last, dropped = self.said.get(which, (None, 0))
        if last is not None and now - last < self.every:
            self.said[which] = (last, dropped + 1)
            return False
        self.said[which] = (now, 0)
        if dropped:
            record.msg = f"{record.msg} ({dropped} more since the last)"
        return True


def quiet_logs() -> None:
    """One OutOfFiles on the loggers that see it, asyncio's (accept) and uvicorn's (a
    request), and Repeated on uvicorn's; once a process, however many servers it runs."""
    accepts, requests = logging.getLogger("asyncio"), logging.getLogger("uvicorn.error")
    if not any(isinstance(kept, OutOfFiles) for kept in requests.filters):
        out_of_files = OutOfFiles(REPEAT_SECONDS)
        accepts.addFilter(out_of_files)
        requests.addFilter(out_of_files)
    if not any(isinstance(kept, Repeated) for kept in requests.filters):
        requests.addFilter(Repeated(REPEAT_SECONDS))
