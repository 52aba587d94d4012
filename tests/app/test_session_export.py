"""export_session: one session to a file, the use case `sessions export` and /export share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chatmem.app import Workspace
from chatmem.app.conversations import record_turn
from chatmem.app.session_export import export_session
from chatmem.config.settings import Settings
from chatmem.errors import NotFound, UsageError
from chatmem.transcripts.reader import read_transcript


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    with Workspace(Settings(provider="scripted", db=str(tmp_path / "h.db"))) as workspace:
        for user, reply in (("My order is ORD-7731.", "Noted."), ("我们五月去杭州。", "好的。")):
            record_turn(workspace, "trip", user, reply)
        yield workspace


def test_a_session_is_written_in_the_format_its_extension_names(
        ws: Workspace, tmp_path: Path) -> None:
    done = export_session(ws, "trip", tmp_path / "trip.jsonl")
    assert (done.messages, done.format, done.unencrypted_copy, done.files_left_out) == (
        4, "jsonl", False, [])
    back = read_transcript(tmp_path / "trip.jsonl")
    assert [m.content for m in back.messages] == ["My order is ORD-7731.", "Noted.",
                                                  "我们五月去杭州。", "好的。"]
    markdown = export_session(ws, ws.store.sessions.session("trip"), tmp_path / "t.md")
    assert markdown.format == "markdown" and "我们五月去杭州。" in (tmp_path / "t.md").read_text()


def test_an_existing_file_is_replaced_only_with_force(ws: Workspace, tmp_path: Path) -> None:
    path = tmp_path / "trip.json"
    path.write_text("mine")
    with pytest.raises(UsageError, match="already exists"):
        export_session(ws, "trip", path)
    assert path.read_text() == "mine"
    assert export_session(ws, "trip", path, force=True).format == "json"
    assert path.read_text() != "mine"


def test_a_format_the_extension_contradicts_or_an_unknown_session_is_refused(
        ws: Workspace, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="md"):
        export_session(ws, "trip", tmp_path / "trip.md", "json")
    with pytest.raises(NotFound):
        export_session(ws, "nope", tmp_path / "nope.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix != ".db"
                  and not p.name.startswith("h.db")) == []
