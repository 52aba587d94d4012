"""Importing an exported session whose plugin strategy is not installed here: it arrives
keeping its strategy's name, as `sessions copy` brings it, and goes on with another."""

from __future__ import annotations

import sys
from pathlib import Path

from cli_runner import invoke
from plugin_site import Install, readme_files

from chatmem.plugins import load_registries
from chatmem.store import Store


def test_an_export_whose_plugin_strategy_is_not_installed_is_imported_keeping_it(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-anchor", "chatmem_anchor", readme_files()["chatmem_anchor.py"])
    here, there = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    invoke("ask", "-s", "anchor:k=2", "--session", "日记", "--provider", "scripted", "--db",
           here, "今天很好", code=0)
    exported = tmp_path / "日记.jsonl"
    invoke("sessions", "export", "日记", "-o", str(exported), "--db", here, code=0)
    load_registries.cache_clear()
    sys.path.remove(str(tmp_path / "site"))  # another machine, without chatmem-anchor

    imported = invoke("sessions", "import", str(exported), "--db", there, code=0)
    first, *_, last = imported.stderr.splitlines()
    assert first == "imported 2 messages into session 日记"
    assert last == (
        "session 日记 keeps its memory with strategy 'anchor', which no installed plugin "
        "provides here; install it, or go on with another (chatmem chat 日记 -s NAME)")
    with Store(there) as store:
        session = store.sessions.session("日记")
        assert (session.strategy, session.params) == ("anchor", {"head": 1, "k": 2})
        assert store.history.messages(session.id)[0].content == "今天很好"
    refused = invoke("chat", "日记", "--provider", "scripted", "--db", there, input="hi\n",
                     code=2)
    assert "keeps its memory with strategy 'anchor', which no installed plugin" in refused.stderr
    invoke("chat", "日记", "-s", "window", "--provider", "scripted", "--db", there,
           input="接着说\n", code=0)
    with Store(there) as store:
        assert len(store.history.messages(store.sessions.session("日记").id)) == 4
