"""/switch to the current session after another process deleted it."""

from __future__ import annotations

import io
from pathlib import Path

from cli_runner import invoke
from registered import open_session
from rich.console import Console

from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.repl.loop import Repl
from chatmem.store import Store


def test_switch_to_a_session_deleted_meanwhile_says_it_is_gone(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    err = io.StringIO()
    with Store(db) as store:
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "删除")
        chat = Repl(engine, Console(file=io.StringIO()), Console(file=err, width=200))
        chat.loop(["你好"])
        deleted = invoke("sessions", "delete", "删除", "--yes", "--db", str(db))
        assert deleted.exit_code == 0, deleted.stderr
        chat.loop(["/switch 删除"])
    assert "already in session" not in err.getvalue()
    assert ("error: no session named '删除'; /sessions lists them, /new 删除 creates it"
            in err.getvalue())
