"""One way to write a file only its owner reads (exports, archives, reports, configs)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from chatmem.privacy.files import open_private


def test_a_new_file_is_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        with open_private(tmp_path / "t.md") as f:
            f.write("旅行 trip\n")
        with open_private(tmp_path / "a.zip", binary=True) as raw:
            raw.write(b"PK")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "t.md").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "a.zip").stat().st_mode) == 0o600
    assert (tmp_path / "t.md").read_text(encoding="utf-8") == "旅行 trip\n"


def test_replace_false_keeps_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "keep.jsonl"
    target.write_text("precious\n", encoding="utf-8")
    with pytest.raises(FileExistsError):
        open_private(target, replace=False)
    assert target.read_text(encoding="utf-8") == "precious\n"
    with open_private(target) as f:
        f.write("new\n")
    assert target.read_text(encoding="utf-8") == "new\n"


def test_a_replaced_file_is_0600_even_if_it_was_readable_by_all(tmp_path: Path) -> None:
    """An export over an earlier one (or a file `touch` made 0644) held the conversation
    readable by every user of the machine."""
    target = tmp_path / "trip.jsonl"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o644)
    with open_private(target) as f:
        f.write("我的护照号是 E12345678\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_symbolic_link_is_replaced_never_written_through(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes 笔记\n", encoding="utf-8")
    notes.chmod(0o644)
    link = tmp_path / "report.html"
    link.symlink_to(notes)
    with pytest.raises(FileExistsError):
        open_private(link, replace=False)
    with open_private(link) as f:
        f.write("<html>旅行</html>\n")
    assert notes.read_text(encoding="utf-8") == "my notes 笔记\n"
    assert not link.is_symlink() and link.read_text(encoding="utf-8") == "<html>旅行</html>\n"
    assert stat.S_IMODE(link.stat().st_mode) == 0o600
