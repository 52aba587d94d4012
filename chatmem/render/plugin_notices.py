"""How a plugin's slowness is worded (chatmem.session_notices: a strategy slow to prepare,
build or update, or keeping a large state; an embedder slow to embed), each naming the
plugin that registered it. chatmem.render.notices words every notice and hands these here."""

from __future__ import annotations

from functools import singledispatch

from chatmem.render.errors import by_plugin
from chatmem.session_notices import BuildSlow, EmbedderSlow, StateLarge, UpdateSlow, Waited

PluginNotice = StateLarge | BuildSlow | EmbedderSlow | UpdateSlow


def plugin_notice_text(notice: PluginNotice) -> str:
    """One line for `notice`, opening with the session's name."""
    return _said(notice)


@singledispatch
def _said(notice: object) -> str:
    raise TypeError(f"no wording for {type(notice).__name__}")


@_said.register
def _(n: StateLarge) -> str:
    return (f"session {n.session}: strategy {n.strategy!r}{by_plugin('strategy', n.strategy)}"
            f" keeps about {n.size / 1e6:.0f} MB of state, read whole each turn: turns are slow")


@_said.register
def _(n: BuildSlow) -> str:
    if n.waited is Waited.OPENING:
        return (f"session {n.session}: strategy {n.strategy!r}"
                f"{by_plugin('strategy', n.strategy)} took {n.seconds:.1f} s to prepare its"
                " memory: the chat's first prompt waited for it")
    waited = "each turn on it waits as long" if n.waited is Waited.SHOWN \
        else "the turn waited for it"
    return (f"session {n.session}: strategy {n.strategy!r}{by_plugin('strategy', n.strategy)}"
            f" took {n.seconds:.1f} s to build the context: {waited}")


@_said.register
def _(n: EmbedderSlow) -> str:
    return (f"session {n.session}: embedder {n.embedder!r}{by_plugin('embedder', n.embedder)}"
            f" took {n.seconds / max(n.calls, 1):.1f} s a call to embed ({n.calls} so far,"
            f" {n.seconds:.1f} s): each turn waits for its calls")


@_said.register
def _(n: UpdateSlow) -> str:
    return (f"session {n.session}: strategy {n.strategy!r}{by_plugin('strategy', n.strategy)}"
            f" took {n.seconds:.1f} s to update its memory after the reply, which the chat"
            " waited for")
