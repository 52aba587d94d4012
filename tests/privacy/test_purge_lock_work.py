"""A purge erases texts before it takes the write lock; under it, only what changed since.

Scale review: at 100,000 messages purging a rare name held the write lock 11 s, as every
message holding a character beyond ASCII (40,662 there) went through the fold under it.
Now the purge plans first without the lock and again under it with an eraser that knows
what it made of each text: counted here, the texts erased under the lock are the ones
written or changed in between, and those are erased too (a purge never misses one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from chatmem.privacy import purge as purging
from chatmem.privacy.mentions import MARKER
from chatmem.store import Store
from chatmem.store.records import FactScope

TEXTS = ["我们五月去杭州旅行，预算五千元。", "Zoë ordered 杭州 tea", "İstanbul'da buluştuk",
         "قال بأحمد شيئا", "친구를 만났어요", "ｶﾀｶﾅ のメモ"]


@contextmanager
def counted_erasures(monkeypatch: pytest.MonkeyPatch, store: Store) -> Iterator[dict[str, int]]:
    """Texts the purge's eraser ran on, before and under the write lock."""
    counts = {"before": 0, "under": 0}
    locked = [False]
    real_erase: Callable[..., str] = purging.erase_mentions
    real_write = store.write

    def erase(text: str, *args: Any, **kwargs: Any) -> str:
        counts["under" if locked[0] else "before"] += 1
        return real_erase(text, *args, **kwargs)

    @contextmanager
    def write() -> Iterator[None]:
        with real_write():
            locked[0] = True
            try:
                yield
            finally:
                locked[0] = False

    monkeypatch.setattr(purging, "erase_mentions", erase)
    monkeypatch.setattr(store, "write", write)
    yield counts


def profile(store: Store, count: int) -> tuple[int, int]:
    session = store.sessions.create_session("big", "window")
    messages = [{"role": "user" if n % 2 == 0 else "assistant",
                 "content": f"{TEXTS[n % len(TEXTS)]} #{n}" + (" Zebulon" if n % 50 == 7 else "")}
                for n in range(count)]
    store.history.import_messages(session.id, messages)
    fact = store.facts.upsert_fact("codename", "Zebulon", scope=FactScope.SESSION,
                                   session_id=session.id)
    return session.id, fact.id


def test_a_purge_erases_no_text_under_the_write_lock_that_it_erased_before(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    session_id, fact_id = profile(store, 600)
    with counted_erasures(monkeypatch, store) as counts:
        done = purging.purge_fact(store, fact_id).redaction
    assert counts["before"] >= 600  # every message holds a character beyond ASCII
    assert counts["under"] == 0, counts  # it was every one of them
    assert len(done.rows[purging.Place.MESSAGES]) == 12
    contents = [m.content for m in store.history.messages(session_id)]
    assert not any("Zebulon" in c for c in contents)
    assert sum(MARKER in c for c in contents) == 12


def test_a_message_written_or_changed_between_plan_and_lock_is_erased_too(
        store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    session_id, fact_id = profile(store, 60)
    other = store.history.messages(session_id)[0]
    real_write = store.write

    @contextmanager
    def write_after_another() -> Iterator[None]:
        # Another writer gets the lock first: a new message, and a changed one.
        with real_write():
            store.history.import_messages(session_id, [
                {"role": "user", "content": "我又见到 Zebulon 了"}])
            store.db.execute("UPDATE messages SET content = ? WHERE id = ?",
                             ["杭州 zebulon 说", other.id])
        with real_write():
            yield

    monkeypatch.setattr(store, "write", write_after_another)
    done = purging.purge_fact(store, fact_id).redaction
    contents = [m.content for m in store.history.messages(session_id)]
    assert not any("zebulon" in c.lower() for c in contents), contents
    assert len(done.rows[purging.Place.MESSAGES]) == 2 + 2
    assert contents[0] == f"杭州 {MARKER} 说"
