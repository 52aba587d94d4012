"""An input of no text (empty, spaces only, a full-width space) is refused by the engine
itself, as `chatmem ask ""` refuses it: nothing is sent, nothing stored, and a session the
conversation created for it is not kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatmem.app import Workspace
from chatmem.app.conversations import open_conversation
from chatmem.config.settings import Settings
from chatmem.errors import EmptyInput, UsageError
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store


class Counting(ScriptedProvider):
    def __init__(self) -> None:
        super().__init__()
        self.streamed = 0

    def stream(self, messages):  # type: ignore[no-untyped-def]
        self.streamed += 1
        return super().stream(messages)


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\u3000", "\u200b", "\u3164 \u2060", "\ufeff"])
def test_an_empty_input_is_refused_before_anything_is_sent_or_stored(
        tmp_path: Path, text: str) -> None:
    model = Counting()
    settings = Settings(provider="scripted", db=str(tmp_path / "h.db"))
    with Store(tmp_path / "h.db") as store:
        with Workspace.around(settings, store, model) as ws, \
                open_conversation(ws, "kept") as engine:
            engine.run_turn("你好")
            with pytest.raises(EmptyInput) as refused:
                engine.run_turn(text)
        assert isinstance(refused.value, UsageError)
        assert str(refused.value) == "nothing to ask (empty input)"
        assert model.streamed == 1
        session = store.sessions.session("kept")
        assert [t.input for t in store.turns.turns(session.id)] == ["你好"]
        with Workspace.around(settings, store, model) as ws, \
                open_conversation(ws, "new") as engine, pytest.raises(EmptyInput):
            engine.run_turn(text)
        assert store.sessions.find_session("new") is None  # created for it, not kept
        assert model.streamed == 1
