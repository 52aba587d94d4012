"""A served client's long history is written as an import is (chatmem.store.unfinished):
batches, each its own transaction, under an unfinished name that takes the place of the
session opened for it in one short transaction at the end.

Review: a gzip body of 49 KB (200,000 user/assistant pairs) was stored in one write of 35 s,
and a concurrent `chatmem ask` on the same file waited 26.8 s for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import History
from test_import_batches import impatient

from chatmem.app.adopted_history import adopt_history
from chatmem.app.client_history import ClientMessage
from chatmem.app.workspace import Workspace
from chatmem.config.settings import Settings
from chatmem.errors import StoreError
from chatmem.store import Store

BATCH = 3


@pytest.fixture
def workspace(history: History, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    monkeypatch.setattr("chatmem.app.session_files.IMPORT_BATCH", BATCH)
    with Workspace(Settings(provider="scripted", db=str(history.location))) as ws:
        yield ws


SAID = [ClientMessage("user" if i % 2 else "assistant", f"第{i}句 line {i}")
        for i in range(1, 11)]


def _names(store: Store) -> list[str]:
    return sorted(row.name for row in store.sessions.list_sessions())


def test_another_connection_writes_between_batches_and_the_history_is_stored_whole(
        history: History, workspace: Workspace) -> None:
    opened = workspace.store.sessions.create_session("会话", "window", {"turns": 3},
                                                     system="简短")
    seen: list[tuple[int, int, list[str], int]] = []
    with impatient(history.open()) as other:

        def between(done: int, total: int) -> None:
            other.sessions.create_session(f"写-{done}", "buffer")  # commits at once
            # The opened session holds nothing meanwhile: no one reads half a history.
            seen.append((done, total, _names(other),
                         other.history.message_count(opened.id, at_most=99)))

        assert adopt_history(workspace, "会话", SAID, progress=between, opened=True) is True
        assert [(done, total, held) for done, total, _, held in seen] == [
            (3, 10, 0), (6, 10, 0), (9, 10, 0), (10, 10, 0)]
        assert _names(other) == sorted(["写-3", "写-6", "写-9", "写-10", "会话"])
        session = other.sessions.session("会话")
        stored = other.history.messages(session.id)
    assert session.id != opened.id  # the engine opens it anew
    assert (session.strategy, session.params, session.system) == ("window", {"turns": 3},
                                                                   "简短")
    assert [(m.position, m.role, m.content) for m in stored] == [
        (i, m.role, m.content) for i, m in enumerate(SAID, 1)]
    assert adopt_history(workspace, "会话", SAID) is False  # nothing twice


def test_a_session_written_meanwhile_keeps_its_own_and_gets_nothing_of_the_adoption(
        history: History, workspace: Workspace) -> None:
    opened = workspace.store.sessions.create_session("会话", "window")
    with history.open() as other:

        def chat(done: int, total: int) -> None:
            if done == BATCH:  # another process's turn in it, after the first batch
                other.history.import_messages(opened.id, [{"role": "user", "content": "你好"}])

        with pytest.raises(StoreError, match="'会话' was written to while"):
            adopt_history(workspace, "会话", SAID, progress=chat, opened=True)
        assert _names(other) == ["会话"]  # no unfinished session left behind
        assert [m.content for m in other.history.messages(opened.id)] == ["你好"]


def test_a_session_that_holds_messages_gets_the_rest_a_batch_at_a_time(
        workspace: Workspace) -> None:
    opened = workspace.store.sessions.create_session("会话", "window")
    workspace.store.history.import_messages(opened.id, [{"role": "user",
                                                         "content": SAID[0].content}])
    batches: list[int] = []
    assert adopt_history(workspace, "会话", SAID,
                         progress=lambda done, total: batches.append(done)) is False
    assert batches == [3, 6, 9]
    assert [m.content for m in workspace.store.history.messages(opened.id)] == [
        m.content for m in SAID]


TERMINAL = [{"role": "user", "content": "我在终端里打的 typed in the terminal"},
            {"role": "assistant", "content": "好的 OK"}]


def test_the_request_sent_again_stores_the_clients_whole_history_after_the_turn_written_meanwhile(
        history: History, workspace: Workspace) -> None:
    """Review: serve said "send the request again"; the retry counted the terminal's turn as
    the client's first two messages and stored from its third on ("message 0" never stored)."""
    opened = workspace.store.sessions.create_session("会话", "window")
    with history.open() as other:

        def chat(done: int, total: int) -> None:
            if done == BATCH:
                other.history.import_messages(opened.id, TERMINAL)

        with pytest.raises(StoreError, match="send the request again"):
            adopt_history(workspace, "会话", SAID, progress=chat, opened=True)
    batches: list[int] = []
    assert adopt_history(workspace, "会话", SAID,
                         progress=lambda done, total: batches.append(done)) is False
    assert batches == [3, 6, 9, 10]
    stored = [m.content for m in workspace.store.history.messages(opened.id)]
    assert stored == [m["content"] for m in TERMINAL] + [m.content for m in SAID]
    assert adopt_history(workspace, "会话", SAID) is False  # nothing twice
    assert workspace.store.history.message_count(opened.id, at_most=99) == 12


def test_a_retry_that_failed_halfway_is_finished_by_the_next_without_a_message_twice(
        workspace: Workspace) -> None:
    opened = workspace.store.sessions.create_session("会话", "window")
    half = [{"role": m.role, "content": m.content} for m in SAID[:4]]
    workspace.store.history.import_messages(opened.id, [*TERMINAL, *half])
    assert adopt_history(workspace, "会话", SAID) is False
    assert [m.content for m in workspace.store.history.messages(opened.id)] == [
        m["content"] for m in TERMINAL] + [m.content for m in SAID]


@pytest.mark.parametrize(("held", "said", "expected"), [
    ("abc", "abcdef", 3), ("xyab", "abcd", 2), ("xy", "abcd", 0), ("aaab", "aab", 3),
    ("aaa", "aaaaaa", 3), ("hihi", "hihihx", 4), ("abab", "abx", 2), ("", "ab", 0)])
def test_stored_up_to_is_the_longest_start_of_the_clients_the_session_ends_with(
        held: str, said: str, expected: int) -> None:
    from chatmem.app.adopted_history import stored_up_to

    def as_messages(text: str) -> list[tuple[str, str]]:
        return [("user", c) for c in text]

    assert stored_up_to(as_messages(held), as_messages(said)) == expected


def _remember(store: Store, session_id: int) -> None:
    store.facts.upsert_fact("储物柜密码 locker code", "4417", scope="session",
                            session_id=session_id)


def test_an_empty_session_that_was_there_keeps_its_facts_and_gets_the_history_in_batches(
        workspace: Workspace) -> None:
    """Review: a served client's long history for `keepme`, which held only a /remember'd
    fact and a /system prompt, deleted that session for a copy: the fact was gone."""
    there = workspace.store.sessions.create_session("会话", "window", system="你是海盗 a pirate")
    _remember(workspace.store, there.id)
    batches: list[int] = []
    assert adopt_history(workspace, "会话", SAID,
                         progress=lambda done, total: batches.append(done)) is False
    assert batches == [3, 6, 9, 10]
    session = workspace.store.sessions.session("会话")
    assert (session.id, session.system) == (there.id, "你是海盗 a pirate")
    assert [f.value for f in workspace.store.facts.facts(session_id=there.id)] == ["4417"]
    assert [m.content for m in workspace.store.history.messages(there.id)] == [
        m.content for m in SAID]
    assert _names(workspace.store) == ["会话"]


def test_a_fact_remembered_while_the_history_is_stored_is_kept_and_the_retry_stores_it(
        history: History, workspace: Workspace) -> None:
    opened = workspace.store.sessions.create_session("会话", "window")
    with history.open() as other:

        def remember(done: int, total: int) -> None:
            if done == BATCH:  # a REPL open on the session: /remember
                _remember(other, opened.id)

        with pytest.raises(StoreError, match="send the request again"):
            adopt_history(workspace, "会话", SAID, progress=remember, opened=True)
        assert _names(other) == ["会话"]  # no unfinished session left behind
        assert other.sessions.session("会话").id == opened.id
        assert [f.value for f in other.facts.facts(session_id=opened.id)] == ["4417"]
    # The request sent again did not open the session: the history goes into it.
    assert adopt_history(workspace, "会话", SAID) is False
    assert [m.content for m in workspace.store.history.messages(opened.id)] == [
        m.content for m in SAID]
    assert [f.value for f in workspace.store.facts.facts(session_id=opened.id)] == ["4417"]


@pytest.mark.parametrize("said", ["My employer is Globex Corporation.", "我在环球公司上班。"])
def test_a_longer_history_after_a_purge_stores_only_what_the_session_lacks(
        workspace: Workspace, said: str) -> None:
    """The session holds its start with a value purged ("[forgotten]"), the client's copy
    the value and an exchange more (answered elsewhere): that start no longer matched the
    client's, and its whole history, the value in it, went after the session's."""
    store = workspace.store
    session = store.sessions.create_session("续", "window", {"turns": 3})
    value = "Globex Corporation" if said.startswith("My") else "环球公司"
    store.history.import_messages(session.id, [
        {"role": "user", "content": said.replace(value, "[forgotten]")},
        {"role": "assistant", "content": "好的"}])
    prior = [ClientMessage("user", said), ClientMessage("assistant", "好的"),
             ClientMessage("user", "预算三千"), ClientMessage("assistant", "记下了")]
    assert adopt_history(workspace, "续", prior) is False
    assert [m.content for m in store.history.messages(session.id)] == [
        said.replace(value, "[forgotten]"), "好的", "预算三千", "记下了"]
