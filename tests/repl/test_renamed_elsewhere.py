"""A session renamed by another process (`chatmem sessions rename`) while a chat has it open:
the prompt, the toolbar and the commands that name the session (/model reopens it by name)
follow the new name, rather than going on with the old one (or creating it anew)."""

from __future__ import annotations

import io
from pathlib import Path

from cli_runner import invoke
from registered import open_session
from rich.console import Console
from test_repl_input import fresh_prompt, make_repl, tty, typing  # noqa: F401  (tty: fixture)

from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.repl.loop import Repl
from chatmem.repl.prompt import toolbar_text
from chatmem.store import Store


def rename(db: Path, old: str, new: str) -> None:
    renamed = invoke("sessions", "rename", old, new, "--db", str(db))
    assert renamed.exit_code == 0, renamed.stderr


def test_lines_after_a_rename_elsewhere_name_the_session_as_it_is_now(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    err = io.StringIO()
    with Store(db) as store:
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "旅行")
        chat = Repl(engine, Console(file=io.StringIO()), Console(file=err, width=200))
        chat.loop(["我们五月去杭州"])
        assert toolbar_text(chat).startswith(" session 旅行 · ")
        rename(db, "旅行", "杭州-trip")
        chat.loop(["/model scripted", "住哪里？", "/fork 分支"])
        assert toolbar_text(chat).startswith(" session 分支 · ")
        assert "error:" not in err.getvalue()
        renamed = store.sessions.session("杭州-trip")
        assert [t.input for t in store.turns.turns(renamed.id)] == ["我们五月去杭州", "住哪里？"]
        # /model reopened the renamed session, not a new one under the old name.
        assert store.sessions.find_session("旅行") is None


def test_the_prompt_after_a_rename_elsewhere_shows_the_new_name(tmp_path: Path,
                                                                tty: None) -> None:  # noqa: F811
    db = tmp_path / "p.db"
    store, repl = make_repl(db, session="notes")
    # The wait reads what the prompt already read (the typing thread may not use the
    # store's connection, which belongs to this thread).
    with store, typing(repl, "first\r", fresh_prompt,
                       lambda _: repl.engine.session.name == "笔记",
                       "second\r") as lines:
        assert next(lines) == "first"
        repl.turn("first")
        rename(db, "notes", "笔记")
        assert next(lines) == "second"
        assert repl.address == "笔记"
        assert toolbar_text(repl).startswith(" session 笔记 · ")
