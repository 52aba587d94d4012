"""A chat's id moved to the client's history (`branch_session`): all or nothing."""

from __future__ import annotations

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
        assert [m.content for m in said if m.role == "user"] == ["我们去苏州", "还有谁去？"]


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
