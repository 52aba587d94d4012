"""What an endpoint's `GET /models` listed lately, for the 404 for a model to name.

Each 404 for a model asked the endpoint for its list anew, and the failed turn's error
waited for it (up to NOT_FOUND_LISTING, 3 s, when the endpoint is slow to list or does not
answer): a client that kept naming a model the endpoint lacks (Open WebUI retrying, a script
in a loop) waited that long for every refusal. A listing (or its failure) is kept KEPT_FOR
seconds per endpoint and key, so refusals within that time name the same list at once.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

KEPT_FOR = 60.0
"""Seconds a listing is named again without asking: a model pulled meanwhile is found by the
next request for it (no 404), whatever the list says."""
_MOST = 32
"""Endpoints (and keys) remembered at most; the oldest is forgotten first."""

Listing = tuple[str, ...] | None
"""The names listed, or None: the endpoint did not list them in time."""

_kept: OrderedDict[tuple[str, str], tuple[float, Listing]] = OrderedDict()
_lock = threading.Lock()


def recent_listing(base_url: str | None, api_key: str | None,
                   listed: Callable[[], Listing]) -> Listing:
    """What `listed` gives for this endpoint and key, as it gave it within KEPT_FOR seconds
    (the key is kept as its digest only)."""
    key = (base_url or "", hashlib.sha256((api_key or "").encode()).hexdigest())
    now = time.monotonic()
    with _lock:
        found = _kept.get(key)
        if found is not None and now - found[0] < KEPT_FOR:
            return found[1]
    listing = listed()
    with _lock:
        _kept[key] = (time.monotonic(), listing)
        _kept.move_to_end(key)
        while len(_kept) > _MOST:
            _kept.popitem(last=False)
    return listing


def forget_listings() -> None:
    """Every listing kept (a test's endpoint changing what it lists)."""
    with _lock:
        _kept.clear()
