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

from collections.abc import Mapping
from typing import Any

import anyio.from_thread
from mcp.server.mcpserver import Context


class CallSteps:
    """Made on the tool call's own worker thread (the one the SDK runs it on); `step` is
    called there, between steps of its work."""

    def __init__(self, ctx: Context | None) -> None:
        self._ctx = ctx
        self._wants_progress = ctx is not None and _progress_token(ctx) is not None

    def check(self) -> None:
        """Raise the cancellation (a BaseException, as Ctrl-C, so nothing catches it as a
        failure to report) when the client has cancelled the call or the server stops."""
        if self._ctx is not None:
            anyio.from_thread.check_cancelled()

    def step(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """One step done: the client told (when it asked), then the cancellation checked."""
        self.check()
        if self._wants_progress and self._ctx is not None:
            anyio.from_thread.run(self._ctx.report_progress, done, total, message)


def _progress_token(ctx: Context) -> Any:
    try:
        meta = ctx.request_context.meta
    except ValueError:  # outside a request
        return None
    if isinstance(meta, Mapping):
        return meta.get("progress_token", meta.get("progressToken"))
    return getattr(meta, "progress_token", None)
