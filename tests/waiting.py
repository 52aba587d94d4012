"""Waiting in tests: for a condition, never for a duration.

A test that sleeps "long enough" and then acts fails on a busy machine, where
long enough is longer. These helpers wait until what the test needs has
happened: text a process printed, a predicate that turned true. `HANG` bounds
every wait, only so that a real hang fails the run instead of stopping it; it
is not a measure of speed, and no test relies on it being short.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import IO

HANG = 120.0
"""Seconds after which a wait gives up: a hang, whatever the machine's load."""


def ctrl_c_reaches_it() -> None:
    """A `preexec_fn` for a process a test interrupts: SIGINT acts as a terminal's Ctrl-C.

    A shell without job control starts a background command (`cmd &` in a script, some
    CI runners) with SIGINT ignored; the child inherits that, Python then installs no
    KeyboardInterrupt, and the SIGINT a test sends does nothing (the test waits out the
    held reply and fails). A test must not depend on how pytest was started.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_until(ready: Callable[[], bool], what: str, *, poll: float = 0.01) -> None:
    """Return as soon as `ready()` is true; fail (naming `what`) only after HANG seconds."""
    deadline = time.monotonic() + HANG
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: still not so after {HANG:.0f} s")
        time.sleep(poll)


class Watched:
    """A process's output stream read as it comes, so a test can wait for a piece of it.

    The stream is read on a thread until it ends; `text` is everything read so far.
    """

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._chunks: list[bytes] = []
        self._changed = threading.Condition()
        self._ended = False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        read = getattr(self._stream, "read1", self._stream.read)
        while chunk := read(4096):
            with self._changed:
                self._chunks.append(chunk)
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    @property
    def text(self) -> str:
        with self._changed:
            return self._decoded()

    def _decoded(self) -> str:
        return b"".join(self._chunks).decode("utf-8", errors="replace")

    def wait_for(self, ready: Callable[[str], bool], what: str) -> str:
        """Block until `ready(text)` holds; the text then. Fails if the stream ends first."""
        deadline = time.monotonic() + HANG
        with self._changed:
            while True:
                text = self._decoded()
                if ready(text):
                    return text
                if self._ended:
                    raise AssertionError(f"the output ended before {what}: {text!r}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{what}: not printed after {HANG:.0f} s: {text!r}")
                self._changed.wait(left)

    def rest(self) -> str:
        """Everything, once the stream has ended (the process closed it or exited)."""
        self._thread.join(HANG)
        assert not self._thread.is_alive(), f"the output never ended: {self.text!r}"
        return self.text


def at_once(action: Callable[[], object], times: int = 2) -> list[BaseException]:
    """Run `action` in `times` threads released together; what each raised (none: [])."""
    start = threading.Barrier(times)
    failures: list[BaseException] = []

    def run() -> None:
        try:
            start.wait()
            action()
        except BaseException as e:
            failures.append(e)

    threads = [threading.Thread(target=run) for _ in range(times)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG)
    return failures


def answers(url: str) -> bool:
    """Whether a GET of `url` is answered within a second (a server started is listening)."""
    import urllib.request

    try:
        urllib.request.urlopen(url, timeout=1).read()
    except OSError:
        return False
    return True
