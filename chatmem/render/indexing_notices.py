"""How the vector backlog's notices are worded (chatmem.indexing_notices): its thread
stopped or retrying, vectors of another size embedded again; and a `Failure` as one line.
chatmem.render.notices words every notice and hands these here; none has REPL-only advice.
"""

from __future__ import annotations

from functools import singledispatch

from chatmem.indexing_notices import Failure, IndexingEvent, IndexingNotice, VectorsResized
from chatmem.render.errors import by_plugin


def indexing_notice_text(notice: IndexingNotice | VectorsResized) -> str:
    """One line for `notice`, as the user reads it."""
    return _said(notice)


@singledispatch
def _said(notice: object) -> str:
    raise TypeError(f"not an indexing notice: {notice!r}")


@_said.register
def _(n: IndexingNotice) -> str:
    error = failure_text(n.failure)
    if n.in_replay:
        # Said once for the run, whose later turns tried again; none follows its last.
        what = {IndexingEvent.STOPPED: "indexing stopped", IndexingEvent.RETRYING:
                "indexing failed", IndexingEvent.NOT_STORED: "indexing: vectors not stored"}
        return (f"{what[n.event]} during the replay: {error}; recall ranked the messages"
                " without a vector by words")
    if n.event is IndexingEvent.STOPPED:
        return (f"indexing stopped: {error}; recall ranks the messages without a vector by "
                "words; `chatmem index` retries")
    if n.event is IndexingEvent.RETRYING:
        return f"indexing failed, will retry next turn: {error}"
    return f"indexing: vectors not stored yet, will retry: {error}"


@_said.register
def _(n: VectorsResized) -> str:
    """`embedder hashgram (chatmemtest-embed 2.0.0) now gives 96 dimensions; 8 stored vectors
    had 64: re-embedding`: the distribution named, as its upgrade is the likely cause."""
    from chatmem.plugins import load_registries

    source = load_registries().origin("embedder", n.embedder)
    dist = "" if source is None or source.builtin else " ".join(
        filter(None, (source.dist or source.name, source.version)))
    had = " or ".join(str(size) for size in n.sizes)
    return (f"embedder {n.embedder}{f' ({dist})' if dist else ''} now gives {n.dimensions}"
            f" dimensions; {n.stale:,} stored vectors had {had}: re-embedding")


def failure_text(failure: Failure) -> str:
    """`the server said no`, or `RuntimeError: boom` for an error chatmem did not expect;
    a plugin's code's failure names the plugin, as `chatmem index` does."""
    said = (failure.message if failure.unexpected is None
            else f"{failure.unexpected}: {failure.message}")
    return said + (by_plugin(*failure.culprit) if failure.culprit else "")
