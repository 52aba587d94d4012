"""One way to write a file only its owner reads (exports, archives, reports, configs)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from chatmem.errors import UsageError
from chatmem.privacy.files import open_private

OTHER_USER = 65534  # nobody


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


def test_a_symbolic_link_is_refused_never_written_through_or_replaced(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes 笔记\n", encoding="utf-8")
    notes.chmod(0o644)
    link = tmp_path / "report.html"
    link.symlink_to(notes)
    for replace in (True, False):
        with pytest.raises(UsageError) as refused:
            open_private(link, replace=replace)
        assert str(refused.value) == (
            f"{link} is a symbolic link; chatmem neither writes through nor replaces one: "
            f"remove it or choose another path")
    assert link.is_symlink() and notes.read_text(encoding="utf-8") == "my notes 笔记\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "report.html"]


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_file_another_user_owns_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    """In a folder all may write to (/tmp), another user can create the report's name
    first: writing into that file would leave the conversation in a file they own."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    planted = shared / "report.html"
    planted.write_text("", encoding="utf-8")
    planted.chmod(0o666)
    os.chown(planted, OTHER_USER, OTHER_USER)
    with pytest.raises(UsageError) as refused:
        open_private(planted)
    assert str(refused.value) == (
        f"{planted} belongs to another user (uid {OTHER_USER}); chatmem does not write over "
        f"it: remove it or choose another path")
    assert planted.stat().st_uid == OTHER_USER and planted.read_bytes() == b""
    assert [p.name for p in shared.iterdir()] == ["report.html"]


def test_a_replaced_file_is_a_new_one_so_what_held_the_old_one_open_reads_nothing_new(
        tmp_path: Path) -> None:
    target = tmp_path / "trip.jsonl"
    target.write_text("old\n", encoding="utf-8")
    with target.open(encoding="utf-8") as held:
        with open_private(target) as f:
            f.write("我的护照号是 E12345678\n")
        assert held.read() == "old\n"
    assert target.read_text(encoding="utf-8") == "我的护照号是 E12345678\n"
    assert target.stat().st_uid == os.geteuid()


def test_an_error_while_writing_leaves_the_old_file_and_no_other(tmp_path: Path) -> None:
    target = tmp_path / "a.zip"
    target.write_bytes(b"earlier archive")
    with pytest.raises(RuntimeError), open_private(target, binary=True) as raw:
        raw.write("half an archive 一半".encode())
        raise RuntimeError("the history could not be read")
    assert target.read_bytes() == b"earlier archive"
    assert [p.name for p in tmp_path.iterdir()] == ["a.zip"]


def test_replace_false_refuses_a_name_taken_while_the_file_was_written(tmp_path: Path) -> None:
    target = tmp_path / "trip.md"
    with pytest.raises(FileExistsError), open_private(target, replace=False) as f:
        f.write("旅行\n")
        target.write_text("written meanwhile\n", encoding="utf-8")
    assert target.read_text(encoding="utf-8") == "written meanwhile\n"
    assert [p.name for p in tmp_path.iterdir()] == ["trip.md"]


@pytest.mark.parametrize("letter", ["𠀀", "😀"])
def test_a_long_name_of_wide_letters_within_the_limit_is_written(tmp_path: Path,
                                                                 letter: str) -> None:
    # 杭州, 59 four-byte letters and .md are 245 bytes, a valid name; its temporary name, cut
    # by letters (64 of them), was over 255 bytes and refused as too long.
    target = tmp_path / ("杭州" + letter * 59 + ".md")
    with open_private(target) as f:
        f.write("导出 export\n")
    assert target.read_text(encoding="utf-8") == "导出 export\n"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_fifo_is_refused_never_replaced_by_a_plain_file(tmp_path: Path) -> None:
    pipe = tmp_path / "导出.jsonl"
    os.mkfifo(pipe)
    for replace in (True, False):
        with pytest.raises(UsageError) as refused:
            open_private(pipe, replace=replace)
        assert str(refused.value) == (
            f"{pipe} is a FIFO (named pipe), not a regular file; chatmem does not write over "
            f"it: remove it or choose another path")
    assert stat.S_ISFIFO(pipe.lstat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == [pipe.name]
