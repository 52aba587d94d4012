"""A long history's pages stay in memory between reads: recall reads its pool's messages
all over the file every turn, and in SQLite's default 2 MB of pages the turn's own reads
and writes pushed them out (10,000 turns read ~100 pages from the file again a turn)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatmem.store import Store

IO = Path("/proc/thread-self/io")


def _file_reads() -> int:
    """Read calls this thread made so far (Linux counts them)."""
    return int(IO.read_text().split("syscr: ")[1].split("\n")[0])


@pytest.mark.skipif(not IO.exists(), reason="counts read calls through Linux's /proc")
def test_a_pool_read_again_is_read_from_memory_not_the_file(tmp_path: Path) -> None:
    with Store(tmp_path / "h.db") as store:
        sid = store.sessions.create_session("long", "retrieval", {}).id
        # ~6 MB of messages, English and Chinese: three times SQLite's default cache.
        store.history.import_messages(sid, [
            {"role": "user" if n % 2 else "assistant",
             "content": f"message {n}: " + ("order ORD-{n} to 12 Oak Street " * 30
                                             if n % 3 else f"第{n}天去杭州旅行，预算五千元。" * 40)}
            for n in range(1, 6001)])
        pool = range(1, 6001, 3)  # a page of every part of the file
        first = store.recall.candidate_rows(sid, pool, "cl100k_base")
        before = _file_reads()
        again = store.recall.candidate_rows(sid, pool, "cl100k_base")
        reads = _file_reads() - before
    assert again == first and len(first) == 2000
    assert reads < 20, reads
