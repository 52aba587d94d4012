"""A long tool call's steps, as its client sees them: progress when the client asked for it
(a progressToken), and an end at the next step when the client cancels.

The SDK runs a tool written as a plain function in a worker thread and, when the client
sends `notifications/cancelled` (its ClientSession does on a timeout or a cancel), cancels
the call's scope; a worker thread cannot be stopped from outside, so the call's work ran
on to the end (a 150-turn comparison for seconds at full CPU) for an answer nobody would
read. The call therefore looks at its scope between steps: a cancelled one ends the work
there, and whatever the steps built in memory (a replay's scratch history) is dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

import anyio.from_thread
from mcp.server.mcpserver import Context

if TYPE_CHECKING:
    from chatmem.activity import ActivityStep, ActivityWarning

QUEUED = "waiting for another call on this conversation to finish"


class CallSteps:
    """Made on the tool call's own worker thread (the one the SDK runs it on). `step` and
    `check` are called there between steps of its work; a conversation's job runs on the
    thread that keeps the conversation open (chatmem.app.kept), where `check` sees what
    the waiting worker thread saw (`watch`)."""

    def __init__(self, ctx: Context | None) -> None:
        self._ctx = ctx
        self._wants_progress = ctx is not None and _progress_token(ctx) is not None
        self._worker = threading.current_thread()
        self._cancelled = threading.Event()
        self._told_queued = False

    def check(self) -> None:
        """End the work here when the client has cancelled the call (or the server stops):
        on the call's own thread with the SDK's cancellation (a BaseException, as Ctrl-C,
        so nothing reports it as a failure), on a kept conversation's with Stopped."""
        if self._ctx is None:
            return
        if threading.current_thread() is not self._worker:
            if self._cancelled.is_set():
                raise Stopped
            return
        try:
            anyio.from_thread.check_cancelled()
        except BaseException:
            self._cancelled.set()
            raise

    @property
    def cancellation(self) -> threading.Event:
        """Set once the call is seen cancelled (by `check`, `watch` or `cancelled`)."""
        return self._cancelled

    def cancelled(self) -> bool:
        """Whether the client has cancelled the call, looked at now (on the call's thread)."""
        with suppress(BaseException):
            self.check()
        return self._cancelled.is_set()

    def watch(self, queued: bool) -> None:
        """While the call's thread waits for a conversation's job: note a cancellation
        for the job's next `check`; a job `queued` behind another call's on the same
        conversation is told the client once (as progress 0), which can then tell a call
        that waits from one that works."""
        with suppress(BaseException):
            self.check()
        if queued and not self._told_queued and not self._cancelled.is_set():
            self._told_queued = True
            self.step(0, None, QUEUED)

    def ended(self) -> None:
        """A job that ended with Stopped: the call ends with the SDK's cancellation."""
        anyio.from_thread.check_cancelled()

    def step(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """One step done: the client told (when it asked), then the cancellation checked."""
        self.check()
        if self._wants_progress and self._ctx is not None:
            anyio.from_thread.run(self._ctx.report_progress, done, total, message)


class Stopped(Exception):
    """A conversation's job ended at a step because its call was cancelled."""


def _progress_token(ctx: Context) -> Any:
    try:
        meta = ctx.request_context.meta
    except ValueError:  # outside a request
        return None
    if isinstance(meta, Mapping):
        return meta.get("progress_token", meta.get("progressToken"))
    return getattr(meta, "progress_token", None)


class CallActivity:
    """An Activity (chatmem.activity) for a call's slow steps (a what-if's copy and
    rebuild): each step ended is progress, and the work ends before the next step when the
    client has cancelled. What it built is a scratch history, dropped with it."""

    def __init__(self, steps: CallSteps) -> None:
        self._steps = steps
        self._done = 0

    @contextmanager
    def doing(self, step: ActivityStep) -> Iterator[None]:
        from chatmem.render.progress import step_text

        self._steps.check()
        yield
        self._done += 1  # the steps of a series count anew for each kind of work
        self._steps.step(self._done, None, step_text(step))

    @contextmanager
    def series(self) -> Iterator[None]:
        yield

    def warn(self, warning: ActivityWarning, *, once: bool = False) -> None:
        """A what-if sends nothing: there is nothing to warn of before sending."""
