"""Use cases as every front end calls them, asserted on their values (the wording is
render/'s and is tested there)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from file_hash import checkpointed_hash

from chatmem.app import Workspace, facts, sessions
from chatmem.app.adopted_history import adopt_history
from chatmem.app.chat_openings import session_of_opening
from chatmem.app.client_history import ClientMessage
from chatmem.app.conversations import record_turn
from chatmem.app.inspection import InspectMode, inspect_next, inspect_turn, inspect_what_if
from chatmem.app.search import search_memory
from chatmem.config.settings import Settings
from chatmem.errors import NotFound, UsageError
from chatmem.store import FactScope, SessionRecord


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    with Workspace(Settings(provider="scripted", db=str(tmp_path / "h.db"))) as workspace:
        yield workspace


def test_recorded_turns_are_inspected_next_and_as_a_what_if(ws: Workspace) -> None:
    for user, reply in (("My order is ORD-7731.", "Noted."), ("I live in 杭州.", "好的。"),
                        ("Thanks!", "Welcome.")):
        record_turn(ws, "trip", user, reply)
    turn = inspect_turn(ws, "trip", 2)
    assert (turn.mode, turn.text, turn.turn.number if turn.turn else None) == (
        InspectMode.TURN, "I live in 杭州.", 2)
    nxt = inspect_next(ws, "trip", "which order?")
    assert nxt.mode is InspectMode.NEXT and nxt.context.parts[-1].messages[0].content == \
        "which order?"
    window = inspect_what_if(ws, "trip", ws.registries.strategies.parse("window", {"k": "1"}),
                             text="which order?")
    history = window.context.part("history")
    assert history is not None and {m.turn for m in history.messages} == {3}
    assert window.replayed is None or window.replayed.turns == 0


def test_reading_use_cases_leave_the_file_as_it_was(ws: Workspace, tmp_path: Path) -> None:
    record_turn(ws, "trip", "My order is ORD-7731.", "Noted.")
    ws.close()
    before = checkpointed_hash(tmp_path / "h.db")
    with Workspace(Settings(provider="scripted", db=str(tmp_path / "h.db")),
                   create=False) as reading:
        inspect_next(reading, "trip", "order?")
        inspect_what_if(reading, "trip", reading.registries.strategies.parse("summary-buffer"),
                        text="order?")
        search_memory(reading, "order", "trip")
        sessions.show_session(reading, "trip")
        facts.list_facts(reading)
    assert checkpointed_hash(tmp_path / "h.db") == before


def test_remembering_into_the_profile_moves_a_session_fact(ws: Workspace) -> None:
    record_turn(ws, "trip", "hi", "hello")
    session = sessions.session_named(ws, "trip")
    [local] = facts.remember(ws, session, "city: Hangzhou")
    assert local.scope is FactScope.SESSION
    [moved] = facts.remember(ws, session, "city: 杭州", in_profile=True)
    assert moved.scope is FactScope.USER and moved.value == "杭州"
    live = facts.live_facts(ws, session)
    assert [(f.key, f.scope) for f in live] == [("city", FactScope.USER)]  # one fact, one key


def test_a_profile_fact_remembered_for_one_session_changes_that_session_alone(
        ws: Workspace) -> None:
    """`remember` without the profile is this conversation's only: a key the profile knows
    gets the session's own value here, and every other session keeps the profile's."""
    from chatmem.memory.state import SessionState

    record_turn(ws, "甲", "hi", "hello")
    record_turn(ws, "乙", "hi", "hello")
    first, second = sessions.session_named(ws, "甲"), sessions.session_named(ws, "乙")
    [profile] = facts.remember(ws, first, "城市: 北京", in_profile=True)
    [own] = facts.remember(ws, second, "城市: 上海")
    assert own.scope is FactScope.SESSION and own.id != profile.id

    def used(session: SessionRecord) -> list[tuple[str, str]]:
        state = SessionState(ws.store, session.id, session.user)
        return [(f.key, f.value) for f in state.live_facts()]

    assert used(first) == [("城市", "北京")]
    assert used(second) == [("城市", "上海")]
    [again] = facts.remember(ws, second, "城市: 广州")
    assert again.id == own.id  # the session's own value is the one updated
    assert ws.store.facts.fact(profile.id).value == "北京"
    assert used(first) == [("城市", "北京")]


def test_forgetting_names_exactly_one_fact(ws: Workspace) -> None:
    record_turn(ws, "trip", "hi", "hello")
    session = sessions.session_named(ws, "trip")
    facts.remember(ws, session, "city: Hangzhou")
    listing = facts.list_facts(ws, session="trip")
    with pytest.raises(NotFound):
        facts.one_to_forget(ws, "nosuch", [f.fact for f in listing.facts], [], narrow="")
    chosen = facts.one_to_forget(ws, "city", [f.fact for f in listing.facts], [], narrow="")
    facts.forget(ws, chosen)
    assert facts.list_facts(ws, session="trip").facts == []


def test_a_clients_history_is_adopted_past_what_is_stored(ws: Workspace) -> None:
    record_turn(ws, "c", "one", "uno")
    said = [ClientMessage("user", "one"), ClientMessage("assistant", "uno"),
            ClientMessage("user", "two"), ClientMessage("assistant", "dos")]

    def stored() -> list[str]:
        return [m.content for m in ws.store.history.messages(ws.store.sessions.session("c").id)]

    adopt_history(ws, "c", said)
    assert stored() == ["one", "uno", "two", "dos"]
    adopt_history(ws, "c", said)
    assert stored() == ["one", "uno", "two", "dos"]  # nothing twice
    adopt_history(ws, "c", said[:2])
    assert stored() == ["one", "uno", "two", "dos"]  # a client's shorter window
    # The stored history is read only when the client's is longer (reading it every request
    # would make a request's cost grow with it): an edited one, begun as the stored one
    # is, adds its new suffix.
    edited = [*said[:3], ClientMessage("assistant", "EDITED"), ClientMessage("user", "three")]
    adopt_history(ws, "c", edited)
    assert stored() == ["one", "uno", "two", "dos", "three"]  # nothing stored was changed
    adopt_history(ws, "nosuch", said)
    assert ws.store.sessions.find_session("nosuch") is None


def test_a_chat_no_id_names_is_the_session_whose_history_it_sends(ws: Workspace) -> None:
    record_turn(ws, "chat-1", "你好", "您好")
    record_turn(ws, "chat-1", "secret 旺财", "ok")
    record_turn(ws, "chat-1-2", "你好", "您好")

    def said(*texts: str) -> list[ClientMessage]:
        return [ClientMessage("user" if i % 2 == 0 else "assistant", t)
                for i, t in enumerate(texts)]

    def session(prior: list[ClientMessage], text: str, taken: frozenset[str] = frozenset()
                ) -> str:
        name, new = session_of_opening(ws, "chat-1", prior, text, taken=taken)
        assert new == (ws.store.sessions.find_session(name) is None)
        return name

    assert session([], "你好") == "chat-1-3"  # a new chat: a session of its own
    # a name another request has chosen is skipped
    assert session([], "你好", frozenset({"chat-1-3"})) == "chat-1-4"
    assert session(said("你好", "您好"), "weather?") == "chat-1-2"
    assert session(said("你好", "您好", "secret 旺财", "ok"), "and?") == "chat-1"
    # chat-1 asked it and chat-1-2 goes on alike: the chat that goes on wins, so one chat's
    # turn never replaces another's
    assert session(said("你好", "您好"), "secret 旺财") == "chat-1-2"
    assert session(said("你好", "EDITED"), "x") == "chat-1-3"  # an edit: a chat of its own
    record_turn(ws, "chat-1", "third", "three")
    assert session(said("你好", "您好", "secret 旺财", "ok"), "third") == "chat-1"  # asked again


def test_a_chat_begun_under_the_name_an_older_chatmem_gave_its_opening_goes_on_there(
        ws: Workspace) -> None:
    record_turn(ws, "chat-old", "帮我计划杭州之行", "好的")
    record_turn(ws, "chat-new", "帮我计划杭州之行", "好的")
    record_turn(ws, "chat-new", "预算呢？", "五千")
    prior = [ClientMessage("user", "帮我计划杭州之行"), ClientMessage("assistant", "好的")]
    assert session_of_opening(ws, "chat-new", prior, "住哪里？", named_before="chat-old") == (
        "chat-old", False)
    # asked again under the new name, going on under the old: the chat that goes on wins
    assert session_of_opening(ws, "chat-new", prior, "预算呢？", named_before="chat-old") == (
        "chat-old", False)
    longer = [*prior, ClientMessage("user", "预算呢？"), ClientMessage("assistant", "五千")]
    assert session_of_opening(ws, "chat-new", longer, "住哪里？", named_before="chat-old") == (
        "chat-new", False)
    assert session_of_opening(ws, "chat-new", [], "帮我计划杭州之行",
                              named_before="chat-old") == ("chat-new-2", True)


def test_search_ranks_within_a_session_and_across_sessions(ws: Workspace) -> None:
    record_turn(ws, "gym", "My locker code is 4471.", "Noted, locker 4471.")
    record_turn(ws, "gym", "The weather is nice.", "Indeed.")
    record_turn(ws, "trip", "We fly to Lisbon on LH2417.", "Noted: LH2417.")
    inside = search_memory(ws, "locker code", "gym")
    assert inside[0].content == "My locker code is 4471." and inside[0].session == "gym"
    assert all(f.fused is not None for f in inside)
    across = search_memory(ws, "Lisbon flight")
    assert across and across[0].session == "trip"
    record_turn(ws, "旅行", "我们五月去杭州旅行，预算五千元。", "好的，杭州五月。")
    chinese = search_memory(ws, "杭州的预算")
    assert chinese and {f.session for f in chinese} == {"旅行"}
    with pytest.raises(UsageError):
        search_memory(ws, "   ")


def test_search_finds_a_message_longer_than_any_context_budget(ws: Workspace) -> None:
    """A pasted contract of ~7,000 tokens holds the words: it is found (first), though no
    context of the default budget could send it; messages without the words are not."""
    contract = "合同条款 contract clause. " * 1000
    record_turn(ws, "legal", contract, "收到")
    record_turn(ws, "legal", "天气怎么样？", "晴天")
    for query in ("合同条款", "contract clause"):
        found = search_memory(ws, query, "legal")
        assert found and found[0].content == contract, query
        assert all(f.bm25 for f in found), query  # nothing that does not hold the words


def test_a_page_of_a_session_and_the_turn_range(ws: Workspace) -> None:
    for n in range(1, 8):
        record_turn(ws, "long", f"q{n}", f"a{n}")
    page = sessions.show_session(ws, "long", newest=3)
    assert (page.first, page.last, page.total, page.partial) == (5, 7, 7, True)
    chosen = sessions.show_session(ws, "long", sessions.TurnRange.parse("2-3"))
    assert [m.content for m in chosen.messages] == ["q2", "a2", "q3", "a3"]
    assert sessions.TurnRange.parse("6-") == sessions.TurnRange(6, None)
    for bad in ("x-2", "3-1", "0"):
        with pytest.raises(UsageError):
            sessions.TurnRange.parse(bad)
