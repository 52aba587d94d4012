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


@pytest.fixture(params=["sqlite", "postgresql"])
def history(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh history: a SQLite file, or a PostgreSQL database."""
    return (str(tmp_path / "h.db") if request.param == "sqlite"
            else str(request.getfixturevalue("pg_url")))


def _cut_off_chats(db: str, partials: dict[str, str | None], whole: str | None = None) -> str:
    """Sessions of one opening (`NAME`, `NAME-2`…) each holding the same two exchanges and a
    request asking 讲个故事 cut off with `partials`' reply so far (None: it failed), then
    one (`whole`'s) that had it answered whole; NAME."""
    from chatmem.app.compared_text import opening_name
    from chatmem.store.records import TurnRecord, TurnStatus

    first = opening_name(ClientMessage("user", "你好"))
    start = [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"},
             {"role": "user", "content": "今天星期几？"},
             {"role": "assistant", "content": "星期一"}]
    with Store(db) as store:
        for k, partial in enumerate(partials.values(), 1):
            session = store.sessions.create_session(
                first if k == 1 else f"{first}-{k}", "window", {})
            store.history.import_messages(session.id, start)
            store.turns.record_turn(TurnRecord(
                session.id, TurnStatus.CANCELLED if partial is not None else TurnStatus.FAILED,
                "讲个故事", {}, "window", reply=partial))
        if whole is not None:
            session = store.sessions.create_session(f"{first}-{len(partials) + 1}", "window", {})
            store.history.import_messages(session.id, [
                *start, {"role": "user", "content": "讲个故事"},
                {"role": "assistant", "content": whole}])
    return first


def _kept(partial: str) -> list[ClientMessage]:
    """A client's history of `_cut_off_chats`' chat that kept `partial` as the reply."""
    return [ClientMessage("user", "你好"), ClientMessage("assistant", "你好！"),
            ClientMessage("user", "今天星期几？"), ClientMessage("assistant", "星期一"),
            ClientMessage("user", "讲个故事"), ClientMessage("assistant", partial)]


def test_a_chat_going_on_as_sent_wins_over_one_whose_reply_was_cut_off(history: str) -> None:
    """fin70 (clients70's cut-off match had no test of this): a chat whose history a session
    holds whole goes on there, though a session before it holds that history but its last
    exchange, whose cut-off request asked the same."""
    from chatmem.app.chat_openings import session_of_opening

    first = _cut_off_chats(history, {"ann": "从前有座山"}, whole="很久很久以前，有一只猫。")
    with Workspace(Settings(provider="scripted", db=history)) as ws:
        assert session_of_opening(ws, first, _kept("很久很久以前，有一只猫。"), "然后呢") == (
            f"{first}-2", False)
        assert session_of_opening(ws, first, _kept("从前有座山"), "然后呢") == (first, False)


def test_a_cut_off_reply_goes_on_in_the_chat_that_was_given_it(history: str) -> None:
    """fin70: two chats alike so far (one greeting, one canned reply) whose users both
    stopped the same question's reply: the second went on in the first's session (the
    first cut-off match), and the first then in the second's, each chat's memory (pins,
    facts, summaries) the other's from then on. The reply the request got so far is stored
    with it: the client's copy of it names its chat. A failed one (no reply) still goes on."""
    from chatmem.app.chat_openings import session_of_opening

    first = _cut_off_chats(history, {"ann": "从前有座山，", "bob": "很久以前",
                                 "cy": "<think>想一想</think>有一只猫", "dee": None})
    with Workspace(Settings(provider="scripted", db=history)) as ws:
        assert session_of_opening(ws, first, _kept("很久以前"), "然后呢") == (
            f"{first}-2", False)
        assert session_of_opening(ws, first, _kept("从前有座山，山"), "然后呢") == (
            first, False)  # the server had sent it no further than the client kept
        assert session_of_opening(ws, first, _kept("从前有座山"), "然后呢") == (first, False)
        assert session_of_opening(ws, first, _kept("<think>想一"), "然后呢") == (
            f"{first}-3", False)  # stopped while the model still reasoned
        # A reply none was given: the failed request's chat, which was given none.
        assert session_of_opening(ws, first, _kept("一头牛"), "然后呢") == (f"{first}-4", False)
