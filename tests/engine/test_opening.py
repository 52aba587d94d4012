"""Opening a session whose plugin strategy was upgraded since it was saved: the saved
parameters the installed version no longer takes are left out, said once, and what the
user gives now is still checked strictly."""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from pathlib import Path

from cli_runner import invoke
from plugin_site import PINNED, Install

from chatmem.plugins import load_registries
from chatmem.store import Store

V1 = PINNED.format(fields='    loud: bool = param(False, "say it loudly")\n'
                          '    n: int = param(3, "how many", minimum=0)')
V2 = PINNED.format(fields='    n: int = param(6, "how many", minimum=5)')
"""0.2.0 drops `loud` and takes no `n` under 5."""


def upgrade(installed: Install, site: Path) -> None:
    """chatmem-pinned 0.1.0 replaced by 0.2.0, as pip replaces it."""
    shutil.rmtree(site / "chatmem_pinned-0.1.0.dist-info")
    sys.modules.pop("chatmem_pinned", None)
    installed("chatmem-pinned", "chatmem_pinned", V2, version="0.2.0")
    importlib.invalidate_caches()
    load_registries.cache_clear()


def test_a_session_saved_by_an_older_plugin_version_opens_without_what_it_no_longer_takes(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-pinned", "chatmem_pinned", V1)
    db = str(tmp_path / "h.db")
    invoke("chat", "旅行", "-s", "pinned:note=带伞,loud=true,n=3", "--provider", "scripted",
           "--db", db, input="我们去杭州\n", code=0)
    upgrade(installed, tmp_path / "site")
    said = ("session 旅行 was saved by another version of strategy pinned; left out "
            "loud=True (no longer a parameter of it), n=3 (refused now: the default is used)")

    chatted = invoke("chat", "旅行", "--provider", "scripted", "--db", db, input="带伞了吗\n",
                     code=0)
    assert chatted.stdout.splitlines()[-1].endswith(": 带伞了吗")
    assert said in chatted.stderr and chatted.stderr.count("left out") == 1
    asked = invoke("ask", "--session", "旅行", "--provider", "scripted", "--db", db, "还有呢",
                   code=0)
    assert asked.stdout.endswith(": 还有呢\n") and said in asked.stderr
    inspected = invoke("inspect", "旅行", "--next", "下一句", "--json", "--db", db, code=0)
    shown = json.loads(inspected.stdout)
    assert said in inspected.stderr
    assert shown["strategy"]["params"] == {"note": "带伞", "n": 6}
    with Store(db) as store:
        session = store.sessions.session("旅行")
        assert len(store.history.messages(session.id)) == 6
        # Kept as saved, for the version that takes them.
        assert session.params == {"note": "带伞", "loud": True, "n": 3}

    # What is given now is checked as strictly as ever ...
    refused = invoke("chat", "旅行", "--param", "loud=true", "--provider", "scripted",
                     "--db", db, input="x\n", code=2)
    assert "unknown parameter 'loud' for strategy 'pinned'" in refused.stderr
    # ... and a value given now replaces the saved one without a word about it.
    given = invoke("chat", "旅行", "--param", "n=7", "--provider", "scripted", "--db", db,
                   input="好的\n", code=0)
    assert "loud=True (no longer a parameter of it)" in given.stderr
    assert "n=3 (refused" not in given.stderr
    with Store(db) as store:
        assert store.sessions.session("旅行").params == {"note": "带伞", "n": 7}


def test_an_export_of_a_session_saved_by_an_older_plugin_version_imports_back(
        installed: Install, tmp_path: Path) -> None:
    """The session opened (its stale parameters left out), but its own export, and a whole
    `export --all` archive with it, was refused: "in the header: unknown parameter 'loud'"."""
    installed("chatmem-pinned", "chatmem_pinned", V1)
    db, there = str(tmp_path / "h.db"), tmp_path / "restored"
    there.mkdir()
    invoke("chat", "旅行", "-s", "pinned:note=带伞,loud=true,n=3", "--provider", "scripted",
           "--db", db, input="我们去杭州\n", code=0)
    upgrade(installed, tmp_path / "site")
    one, archive = tmp_path / "旅行.jsonl", tmp_path / "all.zip"
    invoke("sessions", "export", "旅行", "-o", str(one), "--db", db, code=0)
    invoke("sessions", "export", "--all", "-o", str(archive), "--db", db, code=0)
    left_out = ("was saved by another version of strategy pinned; left out loud=True (no "
                "longer a parameter of it), n=3 (refused now: the default is used)")

    for source, target in ((one, there / "one.db"), (archive, there / "all.db")):
        imported = invoke("sessions", "import", str(source), "--db", str(target), code=0)
        assert f"session 旅行 {left_out}" in imported.stderr.splitlines()
        with Store(str(target)) as store:
            session = store.sessions.session("旅行")
            # Kept as saved, as the exporting history keeps them.
            assert (session.strategy, session.params) == (
                "pinned", {"note": "带伞", "loud": True, "n": 3})
            assert len(store.history.messages(session.id)) == 2
        chatted = invoke("chat", "旅行", "--provider", "scripted", "--db", str(target),
                         input="带伞了吗\n", code=0)
        assert f"session 旅行 {left_out}" in chatted.stderr


def test_a_built_in_part_of_a_combination_with_a_plugin_is_refused_on_import_as_alone(
        installed: Install, tmp_path: Path) -> None:
    """A lone window:k=-3 was refused on import, naming the header; beside a plugin's part
    the same k=-3 was left out and said, and the session imported on k's default."""
    installed("chatmem-pinned", "chatmem_pinned", V1)
    db = str(tmp_path / "h.db")
    for strategy, params in (("window", {"k": -3}), ("window+pinned", {"k": -3}),
                             ("window+pinned", {"window.k": -3, "note": "带伞"})):
        transcript = tmp_path / "导入.jsonl"
        transcript.write_text(json.dumps({"chatmem": 1, "strategy": strategy,
                                          "params": params}) + "\n"
                              '{"role": "user", "content": "我们去杭州"}\n', encoding="utf-8")
        refused = invoke("sessions", "import", str(transcript), "--db", db, code=2)
        assert refused.stderr.startswith(f"error: {transcript}:1: in the header: parameter "), (
            strategy, params)
        assert "must be at least 0" in refused.stderr
    with Store(db) as store:
        assert store.sessions.list_sessions() == []
