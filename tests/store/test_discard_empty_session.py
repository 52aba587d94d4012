"""`discard_empty_session` removes only a session that holds nothing: it is what lets a
served client's long history take the place of the session opened for it, and what removes
a session whose only turns were refused.

Review: it checked turns and messages only, so an empty session's /remember'd facts (and
its strategy state, pins, probes, images, prompts…) cascaded away with it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from documents import png

from chatmem.app.conversations import start_conversation
from chatmem.app.workspace import Workspace
from chatmem.config.settings import Settings
from chatmem.images import read_image
from chatmem.store import Store
from chatmem.store.records import SessionRecord
from chatmem.store.sessions import HOLDING, POSTGRESQL_HOLDING


def _fact(store: Store, session_id: int) -> None:
    store.facts.upsert_fact("储物柜密码 locker code", "4417", scope="session",
                            session_id=session_id)


def _profile_fact(store: Store, session_id: int) -> None:
    store.facts.upsert_fact("名字 name", "王丽", scope="user", user="wl",
                            source_session_id=session_id)


def _state(store: Store, session_id: int) -> None:
    store.memory.set_strategy_state(session_id, "window", {"pins": ["我的生日是三月 5"]})


def _probe(store: Store, session_id: int) -> None:
    store.sessions.add_probes(session_id, [{"after_position": 0, "question": "密码？",
                                            "expect_ids": [], "expect_text": ["4417"]}])


def _image(store: Store, session_id: int) -> None:
    image = read_image(png(20, 10))
    assert image is not None
    store.images.keep_images(session_id, [image])


def _later_prompt(store: Store, session_id: int) -> None:
    store.sessions.set_system_prompts(session_id, [(1, None), (2, "你是海盗 a pirate")])


HELD: dict[str, Callable[[Store, int], None]] = {
    "fact": _fact, "profile fact stated there": _profile_fact, "strategy state": _state,
    "probe": _probe, "image": _image, "prompt of a later turn": _later_prompt}


@pytest.mark.parametrize("what", HELD)
def test_a_session_that_holds_anything_is_not_discarded(store: Store, what: str) -> None:
    session = store.sessions.create_session("空的", "window", system="简短")
    HELD[what](store, session.id)
    assert store.sessions.discard_empty_session(session.id) is False
    assert store.sessions.session("空的").id == session.id
    if what == "fact":
        assert [f.value for f in store.facts.facts(session_id=session.id)] == ["4417"]


def test_a_session_that_was_only_opened_is_discarded(store: Store) -> None:
    session = store.sessions.create_session("空的", "window", system="简短")
    assert store.sessions.discard_empty_session(session.id) is True
    assert store.sessions.find_session("空的") is None


def test_every_table_that_names_a_session_is_looked_at(store: Store) -> None:
    # A table added later is either looked at or said to hold nothing worth keeping: who
    # embeds the session's backlog, and PostgreSQL's word index of its messages.
    if store.db.kind == "sqlite":
        tables = {row[0] for row in store.db.execute(
            "SELECT m.name FROM sqlite_master m, pragma_foreign_key_list(m.name) k"
            " WHERE m.type = 'table' AND k.\"table\" = 'sessions'").fetchall()}
        looked_at = {table for table, _ in HOLDING}
    else:
        tables = {row[0] for row in store.db.execute(
            "SELECT DISTINCT c.conrelid::regclass::text FROM pg_constraint c"
            " WHERE c.contype = 'f' AND c.confrelid = 'sessions'::regclass").fetchall()}
        looked_at = {table for table, _ in (*HOLDING, *POSTGRESQL_HOLDING)}
    assert tables - looked_at <= {"index_leases", "message_words", "word_statistics"}
    assert "index_leases" in tables


def _kept_for_good(store: Store, session: SessionRecord) -> None:
    store.retention.set_retention(session.id, 0)


def _renamed(store: Store, session: SessionRecord) -> None:
    store.sessions.rename_session(session.name, "重要的-kept")


def _set_up(store: Store, session: SessionRecord) -> None:
    store.sessions.update_session(session.id, strategy="summary")


SET_ELSEWHERE: dict[str, Callable[[Store, SessionRecord], None]] = {
    "kept for good": _kept_for_good, "renamed": _renamed, "strategy chosen": _set_up}


@pytest.mark.parametrize("what", SET_ELSEWHERE)
def test_a_session_set_up_elsewhere_since_it_was_opened_is_not_discarded(
        store: Store, what: str) -> None:
    """`chat 空的`, nothing said; meanwhile another terminal ran `sessions retention 空的
    forever` (or renamed it, or chose its strategy): /quit removed it all the same, saying
    'session 重要的-kept not kept: nothing was said in it'. What another process set on it
    is meant to be kept, as a fact /remember'd there is."""
    session = store.sessions.create_session("空的", "window")
    SET_ELSEWHERE[what](store, session)
    assert store.sessions.discard_empty_session(session.id, as_seen=session) is False
    assert store.sessions.session_by_id(session.id).id == session.id


@pytest.mark.parametrize("what", SET_ELSEWHERE)
def test_a_chat_that_said_nothing_keeps_what_another_process_set_up(
        tmp_path: Path, what: str) -> None:
    """The same through the engine a chat quits: its session is removed only as it opened it."""
    with Workspace(Settings(db=str(tmp_path / "h.db"), provider="scripted")) as ws:
        engine = start_conversation(ws, "空的")
        with Store(tmp_path / "h.db") as elsewhere:  # another terminal, its own connection
            SET_ELSEWHERE[what](elsewhere, elsewhere.sessions.session_by_id(engine.session.id))
        engine.finish()  # as the chat's end: the backlog closed, then the session looked at
        assert engine.discard_if_unused() is False
    with Store(tmp_path / "h.db") as store:
        assert store.sessions.session_by_id(engine.session.id).id == engine.session.id
