"""An older history is upgraded only while nothing else has it open (chatmem.store.upgrading).

An older chatmem still running on the history during an upgrade went on indexing its
messages the old way after the re-folding migration was recorded as done: 婚禮在臺北舉行
was never found by 台北. Every test makes an "old" history by deleting the last migration's
bookkeeping row, as test_schema.py does; the older chatmem is another connection opened
before that (on PostgreSQL under an application_name of its own: an older chatmem sets none).
"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from conftest import History
from matches import matches
from waiting import at_once

from chatmem.errors import StoreError, StoreFailure
from chatmem.history_notices import HistoryUpgrading, WaitingForUpgrade
from chatmem.store import Store
from chatmem.store.upgrading import UPGRADE_WAIT_S, share_again, take_alone

LAST = {"sqlite": "m018_traditional_chinese_folded", "postgres": "p016_traditional_chinese_folded"}
SAID = "婚禮在臺北舉行。"


def _older(history: History) -> Store:
    """A connection to `history` as an older chatmem holds it, the history made older."""
    location = history.location
    if not history.is_file:
        location = f"{location}&application_name=chatmem-0.9"
    store = Store(location, key=history.key)
    session = store.sessions.create_session("trip", "retrieval")
    store.history.import_messages(session.id, [{"role": "user", "content": SAID}])
    with store.db.write():
        store.db.execute(f"DELETE FROM {_bookkeeping(history)} WHERE name = ?",
                         [_last(history)])
    return store


def _bookkeeping(history: History) -> str:
    return "_sqlite_migrations" if history.is_file else "chatmem_migrations"


def _last(history: History) -> str:
    return LAST["sqlite" if history.is_file else "postgres"]


def _upgraded(store: Store, history: History) -> bool:
    return store.db.execute(f"SELECT count(*) FROM {_bookkeeping(history)} WHERE name = ?",
                            [_last(history)]).fetchone()[0] == 1


def test_an_upgrade_is_refused_while_an_older_chatmem_has_the_history_open(
        history: History) -> None:
    told: list[object] = []
    with _older(history) as older:
        with pytest.raises(StoreError) as refused:
            history.open(on_upgrade=told.append)
        assert refused.value.kind is StoreFailure.BUSY
        assert "close it, then run again" in str(refused.value)
        assert "nothing was changed" in str(refused.value)
        assert told == []
        # Nothing changed: the older chatmem goes on, the history still older.
        assert not _upgraded(older, history)
        session = older.sessions.find_session("trip")
        assert session is not None
    # Once it closed, the upgrade runs, says so first, and finds what it wrote.
    with history.open(on_upgrade=told.append) as store:
        assert _upgraded(store, history)
        assert [m.content for m, _ in matches(store, session.id, "台北")] == [SAID]
    assert told == [HistoryUpgrading(store.location, _last(history), _last(history), 1)]


def test_an_open_with_nothing_to_migrate_is_never_refused_for_others_connected(
        history: History) -> None:
    with history.open() as first, history.open() as second:
        session = first.sessions.create_session("shared", "buffer")
        second.history.import_messages(session.id, [{"role": "user", "content": "你好"}])
        with history.open() as third:
            assert third.history.message_count(session.id, at_most=5) == 1


def test_two_chatmems_opening_an_older_history_at_once_both_open_it(history: History) -> None:
    _older(history).close()
    told: list[object] = []
    failures = at_once(lambda: history.open(on_upgrade=told.append).close())
    assert failures == []
    assert sum(isinstance(n, HistoryUpgrading) for n in told) == 1
    with history.open() as store:
        assert _upgraded(store, history)


@pytest.mark.sqlite_only
def test_opening_while_another_chatmem_upgrades_waits_for_it_and_says_so(
        history: History) -> None:
    if history.key is not None:
        pytest.skip("the upgrading connection here is a plain sqlite3 one")
    history.open().close()
    upgrader = sqlite3.connect(history.location, isolation_level=None, check_same_thread=False)
    assert take_alone(upgrader, 5000)  # as an upgrade holds it
    released = threading.Timer(1.0, lambda: (upgrader.execute("COMMIT"),
                                             share_again(upgrader), upgrader.close()))
    told: list[object] = []
    began = time.monotonic()
    released.start()
    try:
        with history.open(on_upgrade=told.append) as store:
            assert store.sessions.list_sessions() == []
    finally:
        released.join()
    assert time.monotonic() - began >= 0.9
    assert told == [WaitingForUpgrade(str(history.location), UPGRADE_WAIT_S)]
