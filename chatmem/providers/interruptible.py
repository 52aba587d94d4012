"""A reply read on a thread of its own, so that the thread waiting for it can stop waiting
when it is told to, even while the model sends nothing.

A served client that hangs up cancels its turn at the reply's next piece; a model that had
stalled sent none, so the turn waited for the HTTP client's read timeout (60 s), held its
conversation all that while, and was stored as failed ("did not answer in time"), not as
cancelled. Read through this, the waiting thread sees the request to stop within POLL
seconds; the reply is then closed, and what it still sends is dropped.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import suppress

from chatmem.providers.base import ReplyStream, Usage

POLL = 0.1
"""Seconds between looks at whether the turn is to stop while no piece arrives."""
_PIECE, _FAILED, _END = "piece", "failed", "end"


class InterruptibleReply:
    """`inner` read on a thread of its own; iterating raises KeyboardInterrupt (a turn's
    cancellation, as Ctrl-C) once `stop` is set and no piece is waiting."""

    def __init__(self, inner: ReplyStream, stop: threading.Event) -> None:
        self._inner = inner
        self._stop = stop
        self._pieces: queue.Queue[tuple[str, object]] = queue.Queue()
        self._closed = threading.Event()

    @property
    def usage(self) -> Usage:
        return self._inner.usage

    @usage.setter
    def usage(self, value: Usage) -> None:
        self._inner.usage = value

    @property
    def rendered_prompt(self) -> str | None:
        return self._inner.rendered_prompt

    @rendered_prompt.setter
    def rendered_prompt(self, value: str | None) -> None:
        self._inner.rendered_prompt = value

    def __iter__(self) -> Iterator[str]:
        threading.Thread(target=self._read, daemon=True, name="chatmem-reply").start()
        while True:
            try:
                kind, value = self._pieces.get(timeout=POLL)
            except queue.Empty:
                if self._stop.is_set():
                    raise KeyboardInterrupt from None
                continue
            if kind == _PIECE:
                assert isinstance(value, str)
                yield value
            elif kind == _FAILED:
                assert isinstance(value, BaseException)
                raise value
            else:
                return

    def _read(self) -> None:
        try:
            for piece in self._inner:
                if self._closed.is_set():
                    break  # nobody reads on: what the model sends now is dropped
                self._pieces.put((_PIECE, piece))
        except BaseException as e:  # handed to the thread that reads, raised there
            self._pieces.put((_FAILED, e))
            return
        finally:
            if self._closed.is_set():
                with suppress(Exception):
                    self._inner.close()
        self._pieces.put((_END, None))

    def close(self) -> None:
        self._closed.set()
        with suppress(Exception):  # the reading thread may be inside it: it closes it too
            self._inner.close()
