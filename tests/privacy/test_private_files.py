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
