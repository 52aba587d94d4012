"""A session whose plugin strategy is gone while several installed plugins fail to load: the
refusal names them all, in a list that reads, with the warnings each of them printed."""

from __future__ import annotations

from pathlib import Path

from cli_runner import invoke
from plugin_site import FRAGILE, Install, unimportable

from chatmem.plugins import load_registries


def test_the_refusal_names_every_plugin_that_failed_to_load_in_one_sentence(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-fragile", "chatmem_fragile", FRAGILE)
    db = str(tmp_path / "h.db")
    invoke("ask", "--session", "笔记", "-s", "fragile", "--save", "--provider", "scripted",
           "--db", db, "记下这个", code=0)
    unimportable(tmp_path / "site", "chatmem_fragile", FRAGILE)
    for name in ("a", "b"):
        installed(f"chatmem-broken-{name}", f"chatmem_broken_{name}",
                  f"import chatmem_gone_{name}\n")
    load_registries.cache_clear()

    refused = invoke("ask", "--session", "笔记", "--provider", "scripted", "--db", db,
                     "还在吗", code=2)
    *warnings, error = refused.stderr.splitlines()
    assert len(warnings) == 3 and all(w.startswith("warning: plugin ") for w in warnings)
    assert error == (
        "error: session '笔记' keeps its memory with strategy 'fragile', which no installed "
        "plugin provides now; plugin chatmem_broken_a (chatmem-broken-a 0.1.0), plugin "
        "chatmem_broken_b (chatmem-broken-b 0.1.0) and plugin chatmem_fragile "
        "(chatmem-fragile 0.1.0) failed to load (their warnings say why): mend them, or "
        "install the strategy's plugin again, or go on with another (-s NAME) "
        "(`chatmem strategies` lists them)")
