"""The toolbar at any terminal width: whole fields, the most important kept, none cut."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from registered import open_session
from rich.cells import cell_len
from waiting import HANG

from chatmem.config.settings import Settings
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render import make_console
from chatmem.repl.loop import Repl
from chatmem.repl.prompt import toolbar_text
from chatmem.store import Store


def test_the_toolbar_fits_every_width_from_40_to_200_leaving_out_whole_fields(
    tmp_path: Path,
) -> None:
    go_on = threading.Event()

    class Held(HashEmbedder):
        """Embeds stored texts only once the test lets it: the backlog stays in the toolbar."""

        def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
            if not query:
                assert go_on.wait(HANG)
            return super().embed(texts, query=query)

    embedder = Held()
    store = Store(tmp_path / "t.db")
    settings = Settings(system="Be brief.", prices={"scripted": {"input": 1.0,
                                                                "output": 2.0}})
    engine = open_session(store, settings, ScriptedProvider(), "杭州之旅-planning",
                          strategy="retrieval", params={"recent": "3"}, embedder=embedder)
    store.history.import_messages(engine.session.id, [
        {"role": role, "content": f"{role} {n}: 第{n}次 the ferry timetable"}
        for n in range(300) for role in ("user", "assistant")])
    repl = Repl(engine, make_console(), make_console(stderr=True))
    with store:
        repl.turn("when is the ferry?")
        engine.indexing.pause()
        whole = toolbar_text(repl)
        # How full the context got is the retrieval strategy's business; the fields are:
        fields = whole.strip().split(" · ")
        session, strategy, model, context, total, cost, backlog = fields
        assert (session, strategy, model, backlog) == (
            "session 杭州之旅-planning", "retrieval recent=3", "scripted:scripted",
            "602 not indexed")
        assert re.fullmatch(r"last context 1,9\d\d / 2,000 tokens", context)
        assert re.fullmatch(r"total [12],\d\d\d tokens", total)
        assert re.fullmatch(r"\$0\.00[12]\d*", cost)  # below a cent: many digits to lose
        for width in range(40, 201):
            shown = toolbar_text(repl, width)
            assert cell_len(shown) <= width, (width, shown)
            assert shown.startswith(" ") and shown.endswith(" ")
            kept = shown.strip().split(" · ")
            # Whole fields of the full toolbar, in its order: never `$0.000` or `· tot`.
            assert kept == [f for f in fields if f in kept], (width, shown)
            assert context in kept

        def bar(*kept: str) -> str:
            return f" {' · '.join(kept)} "

        assert toolbar_text(repl, 200) == whole
        # What goes first: the session (the prompt names it), the running total of tokens,
        # the model; the strategy and the backlog stay while there is room.
        assert toolbar_text(repl, 140) == bar(strategy, model, context, total, cost, backlog)
        assert toolbar_text(repl, 100) == bar(strategy, context, cost, backlog)
        assert toolbar_text(repl, 60) == bar(context, cost)
        assert toolbar_text(repl, 40) == bar(context)
        go_on.set()
        engine.indexing.finish(embedder)
