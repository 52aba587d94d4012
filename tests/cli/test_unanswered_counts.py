"""`sessions list` and `sessions prune` count a session's failed and cancelled turns.

A session whose turns were all cancelled (Ctrl-C before the reply ended) was listed
with "0 turns, 0 messages", as if it held nothing, while `logs` listed its turns.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cli_runner import invoke
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.errors import ProviderError
from chatmem.providers.scripted import ScriptedProvider, ScriptedReply
from chatmem.store import Store


class InterruptedReply(ScriptedReply):
    """What the user's Ctrl-C does to a stream: KeyboardInterrupt mid-reply."""

    def __iter__(self) -> Iterator[str]:
        yield "半个回答 "
        raise KeyboardInterrupt


class InterruptedProvider(ScriptedProvider):
    def stream(self, messages: Any) -> ScriptedReply:
        super().stream(messages)
        return InterruptedReply("x", 0, 1)


class FailingProvider(ScriptedProvider):
    def stream(self, messages: Any) -> ScriptedReply:
        raise ProviderError("the server said no")


def test_cancelled_and_failed_turns_are_counted_where_the_history_has_none(
    tmp_path: Path,
) -> None:
    db = tmp_path / "h.db"
    then = datetime.now(UTC) - timedelta(days=45)
    with Store(db, clock=lambda: then) as store:
        cancelled = open_session(store, Settings(), InterruptedProvider(), "旅行",
                                 strategy="window")
        cancelled.run_turn("写一个很长的故事")
        cancelled.run_turn("again")
        failed = open_session(store, Settings(), FailingProvider(), "m", strategy="window")
        with suppress(ProviderError):
            failed.run_turn("hello")
        failed.provider = ScriptedProvider()
        failed.run_turn("hello again")
    listed = invoke("sessions", "list", "--db", str(db))
    assert listed.exit_code == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[2:]}
    assert "0 (2 cancelled)" in rows["旅行"] and "1 (1 failed)" in rows["m"]
    data = {s["name"]: s for s in json.loads(invoke("sessions", "list", "--json", "--db",
                                                     str(db)).stdout)}
    assert [(data[n]["turns"], data[n]["failed"], data[n]["cancelled"]) for n in ("旅行", "m")] \
        == [(0, 0, 2), (1, 1, 0)]

    dry = invoke("sessions", "prune", "--older-than", "30d", "--dry-run", "--db", str(db))
    assert dry.exit_code == 0, dry.stderr
    assert "session 旅行: idle 45 days, retention 30 days (0 turns, 2 cancelled, 0 messages)" \
        in dry.stderr.splitlines()
    pruned = json.loads(invoke("sessions", "prune", "--older-than", "30d", "--dry-run",
                               "--json", "--db", str(db)).stdout)
    assert {s["name"]: (s["turns"], s["failed"], s["cancelled"]) for s in pruned["sessions"]} \
        == {"旅行": (0, 0, 2), "m": (1, 1, 0)}
