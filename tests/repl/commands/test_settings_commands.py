"""/budget in the chat: set, checked against the fixed parts, and shown on the toolbar."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from registered import open_session
from rich.console import Console

from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.repl.loop import Repl
from chatmem.store import Store


def test_budget_builds_the_next_context_once(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`/budget N` built the context twice: once to check the system prompt fits, once
    more for the toolbar (a retrieval or summary context is the costly part of a turn)."""
    err = io.StringIO()
    with Store(tmp_path / "x.db") as store:
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "预算")
        chat = Repl(engine, Console(file=io.StringIO()), Console(file=err, width=200))
        chat.loop(["我们五月去杭州"])
        built: list[str] = []
        build = engine.build_context

        def counted(text: str, *args: Any, **kwargs: Any) -> Any:
            built.append(text)
            return build(text, *args, **kwargs)

        monkeypatch.setattr(engine, "build_context", counted)
        chat.loop(["/budget 3000"])
        assert built == [""]
        assert engine.budget == 3000
        assert chat.usage is not None and chat.usage.budget == 3000
