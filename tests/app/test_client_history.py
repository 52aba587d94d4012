"""A chat's id moved to the client's history (`branch_session`): all or nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cli_runner import run
from pg import Team

from chatmem.app.adopted_history import branch_session
from chatmem.app.client_history import AskedWith, ClientMessage
from chatmem.app.workspace import Workspace
from chatmem.config.settings import Settings
from chatmem.errors import StoreError
from chatmem.store import Store
from chatmem.store.sharing import ShareMode


def test_a_branch_that_fails_halfway_leaves_the_session_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review: the rename, the new session and its history were three writes; a failure in
    the last left the id naming an empty session and the history under another name."""
    db = tmp_path / "h.db"
    with Store(db) as store:
        session = store.sessions.create_session("旅行", "window", {})
        store.history.import_messages(session.id, [
            {"role": "user", "content": "我们去杭州"}, {"role": "assistant", "content": "好"}])
    with Workspace(Settings(provider="scripted", db=str(db))) as workspace:
        def fail(*_: object) -> None:
            raise StoreError("the disk is full")

        monkeypatch.setattr(workspace.store.history, "import_messages", fail)
        with pytest.raises(StoreError):
            branch_session(workspace, "旅行", [ClientMessage("user", "我们去苏州")])
    with Store(db) as store:
        assert [s.name for s in store.sessions.list_sessions()] == ["旅行"]
        kept = store.sessions.session("旅行")
        assert [m.content for m in store.history.messages(kept.id)] == ["我们去杭州", "好"]
    with Workspace(Settings(provider="scripted", db=str(db))) as workspace:
        assert branch_session(workspace, "旅行", [ClientMessage("user", "我们去苏州")]) == \
            "旅行.before-edit-1"


def test_a_branch_of_a_shared_chat_stays_shared_as_it_was(team: Team) -> None:
    """Attack: after an edit under a shared session's id, the grantee's `chat ann/proj3`
    failed and the share sat on `proj3.before-edit-1` only."""
    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", "proj3", "我们去杭州", "--provider", "scripted", code=0)
    run(ann, "sessions", "share", "proj3", "--with", "bob", "--write", code=0)
    with Workspace(Settings(provider="scripted", db=ann)) as workspace:
        assert branch_session(workspace, "proj3", [ClientMessage("user", "我们去苏州")]) == \
            "proj3.before-edit-1"
    with Store(ann) as store:
        for name in ("proj3", "proj3.before-edit-1"):
            shares = store.sessions.shares(store.sessions.session(name).id)
            assert [(s.session, s.grantee, s.mode) for s in shares or []] == [
                (name, "bob", ShareMode.WRITE)]
    run(bob, "ask", "ann/proj3", "还有谁去？", "--provider", "scripted", code=0)
    with Store(ann) as store:
        said = store.history.messages(store.sessions.session("proj3").id)
        assert [m.content for m in said if m.role == "user"] == ["我们去苏州", "bob: 还有谁去？"]


@pytest.mark.parametrize(("said", "edited"), [("My employer is Globex.", "My employer is Initech."),
                                              ("我在环球公司上班。", "我在微软公司上班。")])
def test_an_edit_is_told_only_where_the_history_answered_held_the_message(
        said: str, edited: str) -> None:
    """An answered history tells an edit of its message after `prior` from its regenerate;
    one that held no message there, or began otherwise (another chat's), tells nothing."""
    prior = [ClientMessage("user", "Hello"), ClientMessage("assistant", "Hi")]
    answered = AskedWith.of([*prior, ClientMessage("user", said),
                             ClientMessage("assistant", "OK")], "And then?")
    assert answered.edited_at(prior, edited) is True
    assert answered.edited_at(prior, f"  {said}\n") is False
    assert AskedWith.of(prior, said).edited_at(prior, edited) is False
    other = [ClientMessage("user", "Hello"), ClientMessage("assistant", "Hey")]
    assert answered.edited_at(other, edited) is False


def _opening_lookup(tmp_path: Path, edits: int) -> tuple[tuple[str, bool], int]:
    """The session `session_of_opening` finds for the next message of a chat no id names
    whose second message was edited `edits` times (each edit a session `NAME-k`, as serve
    branches one), and the statements the look took."""
    from meter import metered

    from chatmem.app.chat_openings import session_of_opening
    from chatmem.app.compared_text import opening_name

    db = tmp_path / f"e{edits}.db"
    opening = ClientMessage("user", "你好，我们聊聊旅行")
    first = opening_name(opening)
    start = [{"role": "user", "content": opening.content}, {"role": "assistant", "content": "好"}]
    with Store(db) as store:
        for k in range(1, edits + 2):
            name = first if k == 1 else f"{first}-{k}"
            session = store.sessions.create_session(name, "window", {})
            store.history.import_messages(session.id, [
                *start, {"role": "user", "content": f"第二个问题 版本{k}"},
                {"role": "assistant", "content": "嗯"}, {"role": "user", "content": "继续"},
                {"role": "assistant", "content": "好的"}])
        last = name
        # The chat goes on in its newest branch: longer than those it left.
        store.history.import_messages(session.id, [
            {"role": "user", "content": "后来的问题"}, {"role": "assistant", "content": "对"}])
        prior = [ClientMessage(m.role, m.content) for m in store.history.messages(session.id)]
    with Workspace(Settings(provider="scripted", db=str(db))) as workspace:
        _ = workspace.store
        with metered(workspace.store) as meter:
            found = session_of_opening(workspace, first, prior, "再后来的问题")
    assert found == (last, False)
    return found, meter.statements


def test_a_chat_edited_many_times_is_found_at_the_same_cost(tmp_path: Path) -> None:
    """noid67: each request of a chat no id names looked at NAME, NAME-2… NAME-N in turn (two
    statements each): a chat edited N times cost N more each request, N² over its life."""
    _, few = _opening_lookup(tmp_path, 2)
    _, many = _opening_lookup(tmp_path, 30)
    assert many == few


def _statements_after_edits(tmp_path: Path, look: Callable[[Workspace, str, int], None]
                            ) -> list[int]:
    """The statements `look(workspace, NAME, edits)` takes over a chat no id names whose
    second message was edited 2 times, then 30 (`_opening_lookup`'s branches)."""
    from meter import metered

    from chatmem.app.compared_text import opening_name

    costs = []
    for edits in (2, 30):
        _opening_lookup(tmp_path, edits)
        first = opening_name(ClientMessage("user", "你好，我们聊聊旅行"))
        with Workspace(Settings(provider="scripted", db=str(tmp_path / f"e{edits}.db"))) as ws:
            _ = ws.store
            with metered(ws.store) as meter:
                look(ws, first, edits)
        costs.append(meter.statements)
    return costs


def test_the_branch_an_edit_leaves_is_found_at_the_same_cost(tmp_path: Path) -> None:
    """noid67: an edit's new session read each NAME-k's start one statement at a time (two
    with its name), so each edit of a chat edited N times cost N more."""
    from chatmem.app.chat_openings import branched_from

    def look(ws: Workspace, first: str, edits: int) -> None:
        # The newest branch's second message edited again: it leaves that branch.
        edited = [ClientMessage("user", "你好，我们聊聊旅行"), ClientMessage("assistant", "好"),
                  ClientMessage("user", f"第二个问题 版本{edits + 1}"),
                  ClientMessage("assistant", "嗯")]
        name, held = branched_from(ws, first, edited)
        assert name == f"{first}-{edits + 1}"
        assert [m.content for m in held] == [m.content for m in edited] + ["继续"]

    costs = _statements_after_edits(tmp_path, look)
    assert costs[0] == costs[1]


def test_a_regenerate_among_branches_as_long_is_found_at_the_same_cost(tmp_path: Path) -> None:
    """noid67: the branches of a chat edited N times at one place are all as long; a request
    as long as they are read the last two turns of each, two statements each."""
    from chatmem.app.chat_openings import session_of_opening

    def look(ws: Workspace, first: str, edits: int) -> None:
        # Branch 2's "继续" asked again: a regenerate of its last reply.
        prior = [ClientMessage("user", "你好，我们聊聊旅行"), ClientMessage("assistant", "好"),
                 ClientMessage("user", "第二个问题 版本2"), ClientMessage("assistant", "嗯")]
        assert session_of_opening(ws, first, prior, "继续") == (f"{first}-2", False)
        assert session_of_opening(ws, first, prior, "别的") == (f"{first}-{edits + 2}", True)

    costs = _statements_after_edits(tmp_path, look)
    assert costs[0] == costs[1]


def test_a_chat_goes_on_in_its_branch_after_one_before_it_was_deleted(tmp_path: Path) -> None:
    """noid67: NAME-k were looked at until the first name not there: once NAME was deleted
    (`sessions delete`, retention), the chat edited into NAME-2 was not found after a
    restart, and began again in a new NAME holding a copy of its history, the memory built
    in NAME-2 left behind. A new chat that began alike still takes the free name."""
    from chatmem.app.chat_openings import branched_from, session_of_opening
    from chatmem.app.compared_text import opening_name

    _opening_lookup(tmp_path, 3)
    db = tmp_path / "e3.db"
    first = opening_name(ClientMessage("user", "你好，我们聊聊旅行"))
    with Store(db) as store:
        store.sessions.delete_session(first)
        store.sessions.delete_session(f"{first}-3")
        prior = [ClientMessage(m.role, m.content) for m in store.history.messages(
            store.sessions.session(f"{first}-4").id)]
    with Workspace(Settings(provider="scripted", db=str(db))) as ws:
        assert session_of_opening(ws, first, prior, "再后来的问题") == (f"{first}-4", False)
        assert session_of_opening(ws, first, prior[:1], "别的") == (first, True)
        assert session_of_opening(ws, first, prior[:1], "别的", taken={first}) == (
            f"{first}-3", True)
        # An edit of its second message back to branch 2's: the start branch 2 holds.
        edited = [*prior[:2], ClientMessage("user", "第二个问题 版本2"), prior[3]]
        assert branched_from(ws, first, edited)[0] == f"{first}-2"
