"""What a thread a plugin started raises: one line on stderr naming the plugin.

chatmem guards what it calls of a plugin (build, update, a provider's stream); a thread the
plugin starts itself is out of that reach. What such a thread raised reached Python's own
hook, which printed a traceback in the middle of a chat whose turn went on and succeeded
(a strategy's thread reading `request.history`: WrongThread). The hook is the process's:
set here, by `chatmem` as it starts, never by code a program embedding chatmem imports.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chatmem.config.settings import Settings
    from chatmem.plugin_entries import PluginSource

_credentials: list[Callable[[], Mapping[str, str]]] = []
"""The credentials of the settings the command opened last (Settings.credentials)."""

ITS_OWN_THREAD = ("it used the history from a thread of its own: a plugin reads and writes it "
                  "(request.history, env.state) only as chatmem calls it")


def say_plugin_threads_failing() -> None:
    """Called once by `main`: a plugin's thread failing is one line; any other thread's
    failure is left to the hook there was."""
    before = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        source = None if args.exc_value is None else _plugin_in(args.exc_traceback)
        if source is None or args.exc_value is None:
            before(args)
            return
        _say(source, args.exc_value)

    threading.excepthook = hook


def mask_credentials_of(settings: Settings) -> None:
    """What a plugin's thread says is masked with `settings`' credentials, as what chatmem's
    guarded calls of plugin code say is (memory.guards.masking): the environment's alone
    left a key read from a variable `api_key_env` names, or a base URL's, as it was."""
    _credentials[:] = [settings.credentials]


def _say(source: PluginSource, error: BaseException) -> None:
    from chatmem.cli.output import consoles
    from chatmem.errors import WrongThread, one_line
    from chatmem.plugin_entries import registered_by
    from chatmem.privacy.secrets import plugin_mask

    why = (ITS_OWN_THREAD if isinstance(error, WrongThread)
           else plugin_mask(_credentials[0]() if _credentials else None).mask(one_line(error)))
    consoles()[1].print(f"warning: a thread {registered_by(source)} started failed: {why}",
                        markup=False, soft_wrap=True)


def _plugin_in(trace: TracebackType | None) -> PluginSource | None:
    """The plugin whose code the traceback passes through, the innermost first; None when
    none does (chatmem's own threads, a library's)."""
    modules = []
    while trace is not None:
        module = trace.tb_frame.f_globals.get("__name__")
        if isinstance(module, str) and module.split(".")[0] not in ("chatmem", "threading"):
            modules.append(module)
        trace = trace.tb_next
    if not modules:
        return None
    sources = _plugin_sources()
    for module in reversed(modules):
        for source in sources:
            if module.split(".")[0] == source.value.split(":")[0].strip().split(".")[0]:
                return source
    return None


def _plugin_sources() -> list[PluginSource]:
    """The plugins that registered anything, built-ins left out."""
    from chatmem.plugins import load_registries

    loaded = load_registries()
    named = [*(("strategy", n) for n in loaded.strategies),
             *(("provider", n) for n in loaded.providers),
             *(("embedder", n) for n in loaded.embedders)]
    found = (loaded.origin(kind, name) for kind, name in named)
    return list({s: None for s in found if s is not None and not s.builtin})
