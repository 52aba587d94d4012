"""Where a plugin's print() goes while chatmem runs its code: stderr.

stdout holds a command's --json, ask's reply (and the REPL's replies) and MCP's protocol
stream; a plugin's debug line there breaks them. `contextlib.redirect_stdout` swaps
`sys.stdout` for every thread, so while a plugin's stream produced its next piece, a reply's
live display (its own thread) or another request of a server would have written chatmem's
own output to stderr. Here `sys.stdout` is swapped for a router instead, which sends to
stderr only what the thread running plugin code writes; every other thread writes where it
wrote before.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TextIO, TypeVar

_plugin_code = threading.local()
"""`depth`: how many plugin calls this thread is inside (a provider's stream may call its
token counter); `label`: while a plugin loads, or its strategy builds or updates, what opens
each line it prints (`labelled`),
and `fresh`, whether its next write opens a line."""
_installing = threading.Lock()
_users = 0
P = ParamSpec("P")
R = TypeVar("R")


class _StdoutRouter:
    """`sys.stdout` while any thread runs plugin code."""

    def __init__(self, stdout: TextIO) -> None:
        self.stdout = stdout

    def _target(self) -> TextIO:
        return sys.stderr if getattr(_plugin_code, "depth", 0) else self.stdout

    def write(self, text: str) -> int:
        if not _labelling():
            return self._target().write(text)
        return _write_labelled(_unrouted(sys.stderr), text)

    def flush(self) -> None:
        self._target().flush()

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._target(), attribute)


class _StderrLabeller:
    """`sys.stderr` while a plugin loads (`labelled`): what the loading thread writes there
    (a warning printed to stderr, a `logging` record through logging's last-resort handler,
    which writes to the `sys.stderr` of the moment) opens with the plugin's label, as what it
    prints does; every other thread's writes pass through."""

    def __init__(self, stderr: TextIO) -> None:
        self.stderr = stderr

    def write(self, text: str) -> int:
        if not _labelling():
            return self.stderr.write(text)
        return _write_labelled(self.stderr, text)

    def flush(self) -> None:
        self.stderr.flush()

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.stderr, attribute)


def _labelling() -> bool:
    """Whether this thread runs plugin code while a plugin loads (`labelled`)."""
    return getattr(_plugin_code, "label", None) is not None and bool(
        getattr(_plugin_code, "depth", 0))


def _unrouted(stream: TextIO) -> TextIO:
    return stream.stderr if isinstance(stream, _StderrLabeller) else stream


def _write_labelled(target: TextIO, text: str) -> int:
    """`text` to `target`, each line this thread opens there (on stdout or stderr alike: one
    line state, so a line begun on one and ended on the other is labelled once) opening with
    its label."""
    label = _plugin_code.label
    pieces = []
    for line in text.splitlines(keepends=True):
        pieces.append(label + line if _plugin_code.fresh else line)
        _plugin_code.fresh = line.endswith(("\n", "\r"))
    target.write("".join(pieces))
    return len(text)


@contextlib.contextmanager
def plugin_prints_to_stderr() -> Iterator[None]:
    """Run plugin code in the block: what this thread prints goes to stderr."""
    global _users
    with _installing:
        current = sys.stdout
        router = current if isinstance(current, _StdoutRouter) else _StdoutRouter(current)
        sys.stdout = router
        _users += 1
    depth = getattr(_plugin_code, "depth", 0)
    _plugin_code.depth = depth + 1
    try:
        if getattr(_plugin_code, "label", None) is None:
            yield
        else:
            # Another plugin's code (a provider's, an embedder's) called inside a labelled
            # one's (a strategy's build): its lines are not that plugin's.
            with labelled(None):
                yield
    finally:
        _plugin_code.depth = depth
        with _installing:
            _users -= 1
            # Whoever replaced sys.stdout meanwhile (a test's capture) keeps theirs.
            if _users == 0 and sys.stdout is router:
                sys.stdout = router.stdout


@contextlib.contextmanager
def labelled(label: str | None) -> Iterator[None]:
    """Inside `plugin_prints_to_stderr`, while a plugin loads (or its strategy builds or
    updates): each line this thread prints opens with `label` (`plugin noisy (chatmem-noisy
    0.1.0): `). A line printed as it was imported came on every command with nothing saying
    which plugin printed it."""
    before = getattr(_plugin_code, "label", None), getattr(_plugin_code, "fresh", True)
    _plugin_code.label, _plugin_code.fresh = label, True
    stderr = sys.stderr
    labeller = None
    if label is not None and not isinstance(stderr, _StderrLabeller):
        labeller = _StderrLabeller(stderr)
        sys.stderr = labeller
    try:
        yield
    finally:
        if label is not None and not _plugin_code.fresh:
            # Its last line left open: ended in the plugin's own stream (stderr, as the rest
            # of it), so chatmem's next output opens its own line.
            _write_labelled(_unrouted(sys.stderr), "\n")
        # Whoever replaced sys.stderr meanwhile (the plugin itself) keeps theirs.
        if labeller is not None and sys.stderr is labeller:
            sys.stderr = stderr
        _plugin_code.label, _plugin_code.fresh = before


def printing_to_stderr(call: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`call(...)`, plugin code: what it prints goes to stderr. For calls made often (a
    plugin's token counter, once per message): inside plugin code already (a strategy's
    build counting its messages) it costs one thread-local read, not a swap of stdout."""
    if getattr(_plugin_code, "depth", 0) and getattr(_plugin_code, "label", None) is None:
        return call(*args, **kwargs)
    with plugin_prints_to_stderr():
        return call(*args, **kwargs)
