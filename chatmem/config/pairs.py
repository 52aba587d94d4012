"""Parameters typed as `key=value` text: `--param k=3`, `/strategy window k=3`, and after
the colon of `window:k=3,recent=2` (the form --strategy, the config's `strategy` key and a
template take). Read here once, below both the configuration and the strategies that use it
(memory may import config; config never imports memory)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from chatmem.errors import UsageError

PARAMS_AFTER = ":"
"""Before parameters given with the name: `window:k=2,other=3`."""

# What a Chinese input method types for `:` and `=`: `window：k＝2` is window:k=2 wherever a
# strategy is named (-s, --param, /strategy, a config, MCP, serve), as ／ is / in the REPL.
_AFTER_NAME = re.compile("[:：]")
_KEY_END = re.compile("[=＝]")
_JOINS = re.compile("[+＋]")
"""Between the parts of a combination: `window+entity`, or ＋ as an input method types it."""
_NEXT_PAIR = re.compile(r",|，(?=[^=＝,，]*[=＝])")
"""Between pairs: `,`, or `，` when a `key=` follows it (a text value may hold a `，`)."""


def parse_pairs(pairs: Iterable[str], error: Callable[[str], UsageError]) -> dict[str, str]:
    """`k=3` texts as {"k": "3"}, split at the first `=` and trimmed; `error(pair)` is raised
    for one without a key, worded by the caller (it knows where the text came from)."""
    params: dict[str, str] = {}
    for pair in pairs:
        key, sign, value = _partition(_KEY_END, pair)
        if not sign or not key.strip():
            raise error(pair)
        params[key.strip()] = value.strip()
    return params


def split_params(text: str, error: Callable[[str], UsageError]) -> tuple[str, dict[str, str]]:
    """`window:k=3,recent=2` → ("window", {"k": "3", "recent": "2"}): the name as typed
    (trimmed) and the comma-separated pairs after the colon, not yet checked."""
    name, _, rest = _partition(_AFTER_NAME, text)
    pairs = (p.strip() for p in _NEXT_PAIR.split(rest))
    return name.strip(), parse_pairs(filter(None, pairs), error)


def split_names(name: str) -> tuple[str, ...]:
    """`window＋entity` → ("window", "entity"): a combination's parts, trimmed."""
    return tuple(part.strip() for part in _JOINS.split(name))


def _partition(sign: re.Pattern[str], text: str) -> tuple[str, str, str]:
    """str.partition at the first match of `sign`."""
    found = sign.search(text)
    if found is None:
        return text, "", ""
    return text[:found.start()], found.group(), text[found.end():]
