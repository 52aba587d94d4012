"""Regular expressions compiled when first used, not when their module is imported.

Every command imports the readers of anchors, dates, secrets and names (the strategies and
the privacy checks are loaded for any command), and compiling their patterns took about a
third of a second of each start, `chatmem sessions list` and `--help` included, though most
commands never match one. `lazy(pattern, flags)` stands where `re.compile(pattern, flags)`
stood: the same pattern and flags, compiled by `re` at the first search, match, sub...

After that first use the compiled pattern's methods are the proxy's own attributes, so a
call costs what a call on the compiled pattern costs. `pattern` is there from the start (a
module may build one pattern from another's text without compiling it). What it is
not: an `re.Pattern` for `isinstance`, or a pattern `re.sub(proxy, ...)` accepts; call its
methods (`proxy.sub(...)`) or `compiled()`.

A pattern first used inside a chat's turn made that turn wait for its compiling: the Chinese
time words' took ~100 ms, in the first turn whose input had Chinese in it (a turn is 10-20
ms). `compile_pending` compiles the rest a little at a time, in the upkeep between turns.
"""

from __future__ import annotations

import re
import threading
import time
from typing import TYPE_CHECKING, Any, cast

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split",
            "scanner", "flags", "groups", "groupindex")

_made: list[LazyPattern] = []
_pending: list[LazyPattern] = []
"""Made and not compiled by `compile_pending` yet (maybe compiled by a use since)."""
_pending_sorted = True
_pending_lock = threading.Lock()
"""Held to change `_pending`: a module imported in another thread may add to it meanwhile
(a list sorted while another thread appends raises ValueError)."""


class LazyPattern:
    """A pattern and its flags, compiled on the first use of anything else."""

    def __init__(self, pattern: str, flags: int | re.RegexFlag = 0) -> None:
        self.pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = re.compile(self.pattern, self._flags)
            for name in _METHODS:  # from now on found without reaching __getattr__
                setattr(self, name, getattr(compiled, name))
            self._compiled = compiled
        return compiled

    if not TYPE_CHECKING:
        def __getattr__(self, name: str) -> Any:
            if name.startswith("_"):
                raise AttributeError(name)
            return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r}, {self._flags!r})"


def lazy(pattern: str, flags: int | re.RegexFlag = 0) -> re.Pattern[str]:
    """What `re.compile(pattern, flags)` gives, compiled when first used."""
    global _pending_sorted
    made = LazyPattern(pattern, flags)
    with _pending_lock:
        _made.append(made)
        _pending.append(made)
        _pending_sorted = False
    return cast("re.Pattern[str]", made)


def made() -> list[LazyPattern]:
    """Every lazy pattern made so far (the tests compile them all)."""
    return list(_made)


def compile_pending(seconds: float) -> int:
    """Compile the patterns no use has compiled yet, the longest first (the costliest, as a
    rule), until this thread has spent `seconds` of CPU on it (at least one, when one is
    left; CPU, not the clock, which a loaded machine's other processes run on): upkeep
    nobody waits for, so that no later turn waits for a pattern's compiling. Returns how
    many it compiled; once none is left, a call costs next to nothing."""
    global _pending_sorted
    if not _pending:
        return 0
    started = time.thread_time()
    done = 0
    while True:
        with _pending_lock:
            if not _pending:
                return done
            if not _pending_sorted:
                _pending.sort(key=lambda p: len(p.pattern))
                _pending_sorted = True
            pattern = _pending.pop()
        if pattern._compiled is None:
            pattern.compiled()
            done += 1
            if time.thread_time() - started >= seconds:
                return done
