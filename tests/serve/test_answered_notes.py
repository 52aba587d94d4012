"""What `chatmem serve` keeps of the turns it answered: bounded by bytes as well as by count."""

from __future__ import annotations

from pathlib import Path

from chatmem.app.client_history import AskedWith
from chatmem.app.model_pool import ModelPool
from chatmem.config.settings import Settings
from chatmem.serve.conversations import ServedConversations

MIB = 1024 * 1024


def test_the_notes_of_long_chats_with_long_replies_are_bounded_by_bytes(tmp_path: Path) -> None:
    served = ServedConversations(Settings(provider="scripted", db=str(tmp_path / "h.db")),
                                 ModelPool(), "window")
    # A chat of 10,000 messages (a digest of 8 bytes each) answered with a long Chinese reply.
    each, reply = bytes(80_000), "长回答。" * 5_000
    for n in range(1_000):
        served.note_answered("h.db", f"chat-{n}", n, AskedWith(f"d{n}", 10_000, each,
                                                               b"12345678", reply))
    kept = [n for n in range(1_000) if served.answered("h.db", f"chat-{n}", before=10**9)]
    assert len(kept) * (len(each) + len(reply.encode("utf-16-le"))) <= 32 * MIB
    assert len(kept) > 100  # most of what fits is kept, the newest of them
    assert kept == list(range(1_000 - len(kept), 1_000))


def test_one_note_larger_than_the_bound_is_still_kept(tmp_path: Path) -> None:
    served = ServedConversations(Settings(provider="scripted", db=str(tmp_path / "h.db")),
                                 ModelPool(), "window")
    served.note_answered("h.db", "small", 1, AskedWith("a", 2))
    served.note_answered("h.db", "huge", 2, AskedWith("b", 4_000_000, bytes(33 * MIB)))
    found = served.answered("h.db", "huge", before=10**9)
    assert found is not None and found[0] == 2
    assert served.answered("h.db", "small", before=10**9) is None
    # Noted again, a conversation's earlier note no longer counts.
    served.note_answered("h.db", "huge", 3, AskedWith("c", 2))
    served.note_answered("h.db", "small", 4, AskedWith("a", 2))
    assert [served.answered("h.db", n, before=10**9)[0]  # type: ignore[index]
            for n in ("huge", "small")] == [3, 4]
