"""Exports and reports asked for in a folder every user may write to (/tmp): a file another
user created first, at the destination or at a name chatmem used on the way, never ends up
holding the conversation."""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path

import pytest
from cli_runner import invoke

OTHER_USER = 65534  # nobody

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="planting a file as another user needs root")

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"


def _shared_folder(tmp_path: Path) -> Path:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    return shared


def _plant(path: Path) -> None:
    """An empty file anyone may write, owned by another user, as they would leave it."""
    path.write_bytes(b"")
    path.chmod(0o666)
    os.chown(path, OTHER_USER, OTHER_USER)


def _history(tmp_path: Path) -> str:
    db = str(tmp_path / "h.db")
    invoke("ask", "trip", "我的护照号是 E12345678, keep it secret", "--provider", "scripted",
           "--db", db, code=0)
    return db


def test_an_archive_is_never_written_into_a_partial_file_another_user_planted(
        tmp_path: Path) -> None:
    db, shared = _history(tmp_path), _shared_folder(tmp_path)
    archive = shared / "all.zip"
    planted = shared / f".all.zip.partial-{os.getpid()}"  # the name chatmem used to write
    _plant(planted)
    invoke("sessions", "export", "--all", "-o", str(archive), "--db", db, code=0)
    info = archive.stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (os.geteuid(), 0o600)
    with zipfile.ZipFile(archive) as zf:
        assert "护照" in zf.read("sessions/trip.jsonl").decode()
    assert planted.stat().st_uid == OTHER_USER and planted.read_bytes() == b""
    assert sorted(p.name for p in shared.iterdir()) == [planted.name, "all.zip"]


@pytest.mark.parametrize("command", ["archive", "transcript"])
def test_an_export_over_a_file_another_user_owns_is_refused_in_one_line(
        tmp_path: Path, command: str) -> None:
    db, shared = _history(tmp_path), _shared_folder(tmp_path)
    target = shared / ("all.zip" if command == "archive" else "trip.jsonl")
    _plant(target)
    which = ["--all"] if command == "archive" else ["trip"]
    result = invoke("sessions", "export", *which, "-o", str(target), "--force", "--db", db)
    assert result.exit_code == 2
    assert result.stderr == (f"error: {target} belongs to another user (uid {OTHER_USER}); "
                             f"chatmem does not write over it: remove it or choose another "
                             f"path\n")
    assert target.stat().st_uid == OTHER_USER and target.read_bytes() == b""
    assert [p.name for p in shared.iterdir()] == [target.name]


def test_a_report_over_a_file_another_user_owns_is_refused_in_one_line(tmp_path: Path) -> None:
    shared = _shared_folder(tmp_path)
    report = shared / "report.html"
    _plant(report)
    result = invoke("eval", str(SESSIONS / "travel-zh.jsonl"), "-s", "window",
                    "--provider", "scripted", "--report", str(report))
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"error: {report} belongs to another user (uid {OTHER_USER}); chatmem does not "
        f"write over it: remove it or choose another path")
    assert report.stat().st_uid == OTHER_USER and report.read_bytes() == b""


def test_a_report_at_a_symbolic_link_is_refused_and_the_link_kept(tmp_path: Path) -> None:
    notes = tmp_path / "笔记.txt"
    notes.write_text("my notes 笔记\n", encoding="utf-8")
    report = tmp_path / "report.html"
    report.symlink_to(notes)
    result = invoke("eval", str(SESSIONS / "travel-zh.jsonl"), "-s", "window",
                    "--provider", "scripted", "--report", str(report))
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"error: {report} is a symbolic link; chatmem neither writes through nor replaces "
        f"one: remove it or choose another path")
    assert report.is_symlink() and notes.read_text(encoding="utf-8") == "my notes 笔记\n"
