"""A reply that cannot be written (the reader of stdout gone, a full disk, an encoding without
its characters) still has its turn recorded, whole: the model was called and paid for. The
chat then ends with ReplyNotShown, whose exit code says which it was."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TextIO

import pytest
from registered import open_session
from rich.console import Console

from chatmem.config.settings import Settings
from chatmem.errors import ExitCode, ReplyNotShown
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render import make_console
from chatmem.render.errors import error_text
from chatmem.repl.loop import Repl
from chatmem.store import Store
from chatmem.store.records import TurnStatus


@contextmanager
def closed_pipe() -> Iterator[TextIO]:
    """A pipe whose reader has gone (`| head -c 10` after its bytes): writes fail, EPIPE."""
    read, write = os.pipe()
    os.close(read)
    file = os.fdopen(write, "w", encoding="utf-8")
    yield file
    with suppress(OSError):  # what it holds cannot be written when it closes either
        file.close()


@contextmanager
def full_disk() -> Iterator[TextIO]:
    file = open("/dev/full", "w", encoding="utf-8")  # noqa: SIM115 (every write: ENOSPC)
    yield file
    with suppress(OSError):
        file.close()


@contextmanager
def ascii_only() -> Iterator[TextIO]:
    yield io.TextIOWrapper(io.BytesIO(), encoding="ascii")


@pytest.mark.parametrize(("target", "code"), [
    (closed_pipe, ExitCode.STDOUT_CLOSED),
    (full_disk, ExitCode.ERROR),
    (ascii_only, ExitCode.ERROR),
], ids=["closed-pipe", "full-disk", "ascii"])
def test_a_reply_that_cannot_be_written_is_stored_whole_and_the_chat_stops(
        tmp_path: Path, target, code: ExitCode) -> None:
    """It was lost: the error escaped the reply's writer, and the engine stored nothing (0
    messages, 0 turns), nor did a script's next lines stop."""
    db = tmp_path / "h.db"
    with target() as file, Store(db) as store:
        out = Console(file=file, force_terminal=False)
        repl = Repl(open_session(store, Settings(), ScriptedProvider(), "笔记"), out,
                    make_console(stderr=True))
        with pytest.raises(ReplyNotShown) as raised:
            repl.loop(["记住：重要的事情 " + "很长的回答 " * 300, "the next line, never sent"])
    assert raised.value.exit_code == code
    assert (raised.value.address, raised.value.turn) == ("笔记", 1)
    assert "stored as turn 1 of session '笔记'" in error_text(raised.value)
    # The command as typed: 笔记 needs no quotes (render.errors._shell_word), as a fact key's
    # `chatmem facts forget 城市` has none; shlex.quote quoted every letter outside ASCII.
    assert "(`chatmem sessions show 笔记` shows it)" in error_text(raised.value)
    with Store(db) as store:
        session = store.sessions.find_session("笔记")
        assert session is not None
        turns = store.turns.turns(session.id)
        assert [turn.status for turn in turns] == [TurnStatus.OK]
        assert turns[0].reply == "echo #1: 记住：重要的事情 " + "很长的回答 " * 299 + "很长的回答"
