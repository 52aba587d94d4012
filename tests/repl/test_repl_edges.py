"""REPL rough edges a daily user met: what the toolbar claims, replies of forked and imported
sessions, repeated attachments, /remember's halves, /sessions at 40 columns, a strategy
switch that makes the next context huge, and counts worded as counts."""

from __future__ import annotations

from pathlib import Path

from registered import open_session

from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render import make_console
from chatmem.repl.loop import Repl
from chatmem.repl.prompt import toolbar_text
from chatmem.store import Store
from chatmem.tokens import counter_for_model


class UnknownTokenizer(ScriptedProvider):
    """A model chatmem has no tokenizer for: its counts are cl100k_base's, approximately."""

    def __init__(self) -> None:
        super().__init__(model="some-local-model")
        self._counter = counter_for_model("some-local-model")


def test_the_toolbar_marks_an_approximate_count_as_the_token_line_does(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    settings = Settings(system="简短回答。")
    with Store(db) as store:
        repl = Repl(open_session(store, settings, UnknownTokenizer(), "杭州", strategy="window"),
                    make_console(), make_console(stderr=True))
        repl.turn("我们五月去杭州")
        tokens = repl.last.record.estimated_tokens if repl.last else None
        assert f"last context ≈{tokens:,} / 4,000 tokens" in toolbar_text(repl)
    with Store(db) as store:  # read back from the stored turn, after a restart
        restarted = Repl(open_session(store, settings, UnknownTokenizer(), "杭州"),
                         make_console(), make_console(stderr=True))
        assert f"last context ≈{tokens:,} / 4,000 tokens" in toolbar_text(restarted)
        exact = Repl(open_session(store, settings, ScriptedProvider(), "杭州"),
                     make_console(), make_console(stderr=True))
        exact.turn("住哪里？")
        assert "last context ≈" not in toolbar_text(exact)
        assert "last context " in toolbar_text(exact)
