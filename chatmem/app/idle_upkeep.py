"""The process's upkeep a server runs while it is idle, on a thread of its own.

A chat runs the process's upkeep between its turns, while its user types the next line
(`Engine.between_turns`: the patterns no turn has used yet compiled, the first full
collection). A server has no such pause: run after each stored turn, it was on the path of
the conversation's next request, and a client chaining its requests waited for it (requests
2-4 of a fresh `chatmem serve` 0.1-0.3 s each, 11-29 ms without). A server's engines leave it
(`between_turns(idle=False)`), and this thread runs it a step at a time (one pattern, a few
ms as a rule, ~100 ms at most) once no job of the server's conversations has run for QUIET
seconds after a burst of calls (the first call's included). Calls that keep coming
never wait for it; a pattern first used by one of them is compiled by that call, as it
would be in any process.

A step that raises (a pattern that does not compile, memory running out) ended the thread
with Python's traceback of it on stderr, from threading's hook, in the middle of the
server's log. It is handed to the server (`failed`, which words it for its log, once) and
the upkeep stops: what it left is done by the calls that need it, as in any process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from chatmem.engine.upkeep import idle_upkeep

QUIET = 0.5
"""Seconds without a job under way before a step runs: a client chaining its requests sends
the next within milliseconds of an answer; one with a person behind it, seconds later."""

STEP_CPU = 0.0
"""CPU seconds a step may spend compiling (chatmem.lazy_patterns.compile_pending: at least
one pattern); 0, one pattern a step, so that a call coming meanwhile shares the interpreter
with one pattern's compiling at most."""


class IdleUpkeep:
    """Runs `idle_upkeep` while no job is under way (each told by `begin` and `end`), on a
    thread of its own, until `stop`."""

    def __init__(self, quiet: float | None = None,
                 failed: Callable[[Exception], None] | None = None) -> None:
        self._quiet = quiet
        """Its own QUIET (None: the module's, as it is at each look)."""
        self._failed = failed
        """Told of a step's error, after which no step runs."""
        self._changed = threading.Condition()
        self._busy = 0
        self._since = time.monotonic()
        """When the last job ended."""
        self._left = False
        """Upkeep may be left: after each job (a turn may leave some). Not before the first:
        compiling while a fresh server's first request came (its imports, reading files,
        waited for the interpreter after each) made that request take twice as long."""
        self._ended = 0
        """Jobs ended so far."""
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="chatmem-idle-upkeep",
                                         daemon=True)
        self._thread.start()

    def begin(self) -> None:
        """A job starts: no step starts until it and every other has ended."""
        with self._changed:
            self._busy += 1

    def end(self) -> None:
        """A job `begin` counted has ended."""
        with self._changed:
            self._busy -= 1
            self._since = time.monotonic()
            self._left = True
            self._ended += 1
            self._changed.notify_all()

    @contextmanager
    def busy(self) -> Iterator[None]:
        """Around a job: `begin`, then `end` however it ends."""
        self.begin()
        try:
            yield
        finally:
            self.end()

    def stop(self) -> None:
        """No step after the one running now (waited for: the server stops)."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join()

    def _quiet_now(self) -> float | None:
        """Seconds still to wait before a step (0: now); None: until told (under the lock)."""
        if self._busy or not self._left:
            return None
        quiet = QUIET if self._quiet is None else self._quiet
        return max(0.0, self._since + quiet - time.monotonic())

    def _loop(self) -> None:
        while True:
            with self._changed:
                while not self._stopped:
                    wait = self._quiet_now()
                    if wait == 0:
                        break
                    self._changed.wait(wait)
                if self._stopped:
                    return
                ended = self._ended
            try:
                left = idle_upkeep(STEP_CPU)
            except Exception as error:  # the server's log is told, and it goes on
                if self._failed is not None:
                    with suppress(Exception):  # its log gone (stderr closed): nobody to tell
                        self._failed(error)
                return
            if not left:
                with self._changed:
                    # A job that ended during the step may have left more: looked at again.
                    if self._ended == ended:
                        self._left = False
