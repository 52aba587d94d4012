"""While the model has sent nothing yet, a terminal says what the chat waits for.

A remote model's first token (or a local model loading) took seconds with nothing under the
input: no spinner, no word of what was happening or that Ctrl-C would cancel it."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from registered import open_session
from rich.console import Console
from waiting import wait_until

from chatmem.activity import ActivityStep, Work
from chatmem.config.settings import Settings
from chatmem.providers.base import ChatMessages
from chatmem.providers.scripted import ScriptedProvider, ScriptedReply
from chatmem.render.progress import ConsoleActivity
from chatmem.render.terminal import SafeConsole
from chatmem.repl.loop import Repl
from chatmem.store import Store


class Screen(io.StringIO):
    """A terminal the test can read: what isatty() says of one."""

    def isatty(self) -> bool:
        return True


class SlowStart:
    """A scripted reply, its first words sent after a pause, as a remote model's are."""

    def __init__(self, reply: ScriptedReply) -> None:
        self.reply = reply
        self.usage = reply.usage
        self.rendered_prompt = reply.rendered_prompt

    def __iter__(self) -> Iterator[str]:
        time.sleep(0.6)
        yield from self.reply

    def close(self) -> None:
        self.reply.close()


class SlowToStart(ScriptedProvider):
    def stream(self, messages: ChatMessages) -> SlowStart:  # type: ignore[override]
        return SlowStart(super().stream(messages))


def terminal(screen: Screen) -> Console:
    return SafeConsole(file=screen, force_terminal=True, color_system=None, width=80,
                       highlight=False, soft_wrap=False)


def test_a_terminal_shows_what_the_reply_waits_for_until_it_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    screen = Screen()
    out, status = terminal(screen), terminal(screen)  # stdout and stderr: one terminal
    with Store(tmp_path / "h.db") as store:
        engine = open_session(store, Settings(), SlowToStart(model="slow-7b"), "旅行",
                              strategy="window", activity=ConsoleActivity(status))
        Repl(engine, out, status).turn("杭州明天天气怎么样？")
        [turn] = store.turns.turns(engine.session.id)
    shown = screen.getvalue()
    assert "waiting for slow-7b  Ctrl-C cancels the reply" in shown
    # Gone before the reply is drawn where it was, and the reply stored whole.
    assert shown.rindex("waiting for") < shown.index("echo #1")
    assert turn.reply == "echo #1: 杭州明天天气怎么样？"


def test_the_reply_spinner_gives_way_to_a_strategy_step_until_the_reply_starts() -> None:
    activity = ConsoleActivity(Console(file=Screen(), force_terminal=True, width=100))
    step = ActivityStep(Work.SUMMARIZING, 1, 5)
    with activity.awaiting_reply("m") as replied:
        assert activity._spinner is not None
        with activity.doing(step):  # one live display at a time: the step's
            assert activity._spinner is None
        assert activity._spinner is not None  # still waiting for the reply
        replied()
        assert activity._spinner is None
        with activity.doing(step):  # a step after the reply (a summary)
            pass
        assert activity._spinner is None  # not back once the reply has started
    assert activity._spinner is None


def test_off_a_terminal_nothing_is_shown_while_waiting() -> None:
    err = io.StringIO()
    activity = ConsoleActivity(Console(file=err, force_terminal=True))  # FORCE_COLOR in a log
    with activity.awaiting_reply("m") as replied:
        replied()
    assert err.getvalue() == ""


def test_the_wait_counts_its_seconds() -> None:
    """The spinner said only "waiting for M" while the embedded model read a long prompt,
    a minute at times: nothing showed it was still at work. It counts the seconds."""
    screen = Screen()
    activity = ConsoleActivity(terminal(screen))
    with activity.awaiting_reply("本地模型") as replied:
        wait_until(lambda: "waiting for 本地模型 · 1 s" in screen.getvalue(), "a second counted")
        replied()
    assert "waiting for 本地模型  Ctrl-C" in screen.getvalue()  # before a whole second
