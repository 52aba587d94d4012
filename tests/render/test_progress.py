"""The bars of long commands say what they do from the start, before their first step."""

from __future__ import annotations

import io

from rich.console import Console
from waiting import wait_until

from chatmem.render.progress import counted_progress, replay_progress


class Screen(io.StringIO):
    """A terminal the test can read."""

    def isatty(self) -> bool:
        return True


def test_a_replay_says_it_starts_before_its_first_step() -> None:
    """Before: nothing at all until the first strategy's first turn, seconds after the
    command started (the embedding model loading)."""
    screen = Screen()
    with replay_progress(Console(file=screen, force_terminal=True, width=80)) as advance:
        wait_until(lambda: "starting the strategies" in screen.getvalue(), "the first line")
        advance("检索", 1, 10)
        wait_until(lambda: "replaying with 检索" in screen.getvalue(), "the strategy's bar")
    last_frame = screen.getvalue().rsplit("starting the strategies", 1)[1]
    assert "replaying with 检索" in last_frame


def test_an_import_names_what_it_does_before_its_first_batch() -> None:
    """Before: the label showed only once the first batch of messages was written."""
    screen = Screen()
    with counted_progress(Console(file=screen, force_terminal=True, width=50),
                          "importing into 旅行") as advance:
        wait_until(lambda: "importing into 旅行" in screen.getvalue(), "the label")
        advance(100, 400)
        wait_until(lambda: "25%" in screen.getvalue(), "the share done")
