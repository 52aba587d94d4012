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
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split",
            "scanner", "flags", "groups", "groupindex")

_made: list[LazyPattern] = []


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
    made = LazyPattern(pattern, flags)
    _made.append(made)
    return cast("re.Pattern[str]", made)


def made() -> list[LazyPattern]:
    """Every lazy pattern made so far (the tests compile them all)."""
    return list(_made)
