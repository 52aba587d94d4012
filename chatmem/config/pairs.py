"""Parameters typed as `key=value` text: `--param k=3`, `/strategy window k=3`, and after
the colon of `window:k=3,recent=2` (the form --strategy, the config's `strategy` key and a
template take). Read here once, below both the configuration and the strategies that use it
(memory may import config; config never imports memory)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from chatmem.errors import UsageError

PARAMS_AFTER = ":"
"""Before parameters given with the name: `window:k=2,other=3`."""


def parse_pairs(pairs: Iterable[str], error: Callable[[str], UsageError]) -> dict[str, str]:
    """`k=3` texts as {"k": "3"}, split at the first `=` and trimmed; `error(pair)` is raised
    for one without a key, worded by the caller (it knows where the text came from)."""
    params: dict[str, str] = {}
    for pair in pairs:
        key, sign, value = pair.partition("=")
        if not sign or not key.strip():
            raise error(pair)
        params[key.strip()] = value.strip()
    return params


def split_params(text: str, error: Callable[[str], UsageError]) -> tuple[str, dict[str, str]]:
    """`window:k=3,recent=2` → ("window", {"k": "3", "recent": "2"}): the name as typed
    (trimmed) and the comma-separated pairs after the colon, not yet checked."""
    name, _, rest = text.partition(PARAMS_AFTER)
    return name.strip(), parse_pairs(filter(None, (p.strip() for p in rest.split(","))), error)
