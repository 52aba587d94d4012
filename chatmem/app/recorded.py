"""What is said when the provider a session or a transcript was recorded with is one no
installed plugin provides now (Workspace.reproducing)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chatmem.plugins import Registries


def provider_gone(registries: Registries, where: str, name: str | None, *,
                  stored: bool) -> str:
    """`session 'x': recorded with provider 'parrot', which no installed plugin provides
    now`, and the way on, naming a plugin that failed to load as --provider's refusal does
    (it was `unknown provider 'parrot' (valid: …)`, as of a typo). `stored`: a session of
    this history (its plugin was installed here), not a file's header."""
    from chatmem.plugin_entries import registered_by

    broken = [registered_by(p.plugin) for p in registries.problems if not p.plugin.builtin]
    one = len(broken) == 1
    said = "its warning says" if one else "their warnings say"
    mend = f"mend {'it' if one else 'them'}, or install the provider's plugin again"
    way = (f"{' and '.join(broken)} failed to load ({said} why): {mend}"
           if broken else "install its plugin again" if stored else "install its plugin")
    return (f"{where}: recorded with provider {name!r}, which no installed plugin provides "
            f"now; {way}, or choose another with --provider NAME (valid: "
            f"{', '.join(registries.provider_names())})")
