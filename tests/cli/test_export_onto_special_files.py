"""`--force` replaces a file of the user's own, never a FIFO or a device (second reading,
finding 9: an export onto a FIFO swapped it for a plain file, and its reader got nothing)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cli_runner import invoke


def test_an_export_forced_onto_a_fifo_is_one_line_and_the_fifo_kept(tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    invoke("chat", "旅行", "--provider", "scripted", "--db", db, input="我想去杭州\n", code=0)
    pipe = tmp_path / "管道.jsonl"
    os.mkfifo(pipe)
    refused = invoke("sessions", "export", "旅行", "-o", str(pipe), "--force", "--db", db,
                     code=2)
    assert refused.stderr == (
        f"error: {pipe} is a FIFO (named pipe), not a regular file; chatmem does not write "
        f"over it: remove it or choose another path\n")
    assert stat.S_ISFIFO(pipe.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("h.db")) == [
        pipe.name]
