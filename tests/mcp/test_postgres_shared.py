"""`chatmem mcp` for bob on a team's PostgreSQL history, where ann shared her session `trip`
and bob has his own `trip`: every handle the server gives names ann's as `ann/trip`, so a
client's next call reaches the session it was shown, never bob's namesake."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cli_runner import invoke, output
from mcp_calls import mcp_calls
from pg import PostgresServer

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")


@pytest.fixture
def urls(pg_server: PostgresServer, pg_template: str) -> Iterator[tuple[str, str]]:
    name = pg_server.create_database(pg_template)
    ann, bob = pg_server.url(name, "ann"), pg_server.url(name, "bob")
    output("chat", "trip", "--provider", "scripted", "--db", bob, input="我的斑马 zebra\n")
    output("chat", "trip", "--provider", "scripted", "--db", ann,
           input="ann 的袋鼠 kangaroo\n")
    output("sessions", "share", "trip", "--with", "bob", "--write", "--db", ann)
    yield ann, bob
    pg_server.drop_database(name)




def test_a_shared_session_is_listed_searched_and_reached_as_owner_slash_name(
        urls: tuple[str, str]) -> None:
    ann, bob = urls
    listed, everywhere, chinese, started, recorded, mine, transcript = mcp_calls(["--db", bob], [
        ("list_conversations", {}),
        ("search_memory", {"query": "kangaroo"}),
        ("search_memory", {"query": "袋鼠"}),
        ("start_conversation", {"name": "ann/trip"}),
        ("record_turn", {"conversation_id": "ann/trip", "user": "bob 补充一句",
                         "assistant": "好的"}),
        ("search_memory", {"query": "zebra"}),
        ("chatmem://conversations/ann%2Ftrip/transcript", {})])
    assert sorted((c["conversation_id"], c["access"]) for c in listed["conversations"]) == [
        ("ann/trip", "write"), ("trip", "own")]
    for found in (everywhere, chinese):
        assert found["hits"], found
        assert {h["conversation_id"] for h in found["hits"]} == {"ann/trip"}
        assert "袋鼠" in found["hits"][0]["content"]
    assert started["conversation_id"] == "ann/trip" and not started["created"]
    assert recorded["turn"] == 2
    assert {h["conversation_id"] for h in mine["hits"]} == {"trip"}
    assert "bob 补充一句" in transcript["text"] and "斑马" not in transcript["text"]
    # The turn went to ann's session, not to bob's own namesake.
    assert "bob 补充一句" in output("sessions", "show", "trip", "--db", ann)
    assert "bob 补充一句" not in output("sessions", "show", "trip", "--db", bob)


def test_a_plain_name_starts_ones_own_conversation_never_a_share_of_that_name(
        urls: tuple[str, str]) -> None:
    ann, bob = urls
    output("chat", "plan", "--provider", "scripted", "--db", ann, input="ann 的计划\n")
    output("sessions", "share", "plan", "--with", "bob", "--write", "--db", ann)
    started, recorded = mcp_calls(["--db", bob], [
        ("start_conversation", {"name": "plan"}),
        ("record_turn", {"conversation_id": "plan", "user": "bob 的计划", "assistant": "好"})])
    assert started["conversation_id"] == "plan" and started["created"]
    assert recorded["turn"] == 1
    assert "bob 的计划" not in output("sessions", "show", "plan", "--db", ann)
    assert "bob 的计划" in output("sessions", "show", "plan", "--db", bob)


def test_facts_and_contexts_name_a_shared_session_as_owner_slash_name(
        urls: tuple[str, str]) -> None:
    import json

    _, bob = urls
    theirs, mine, listed, context = mcp_calls(["--db", bob], [
        ("remember", {"conversation_id": "ann/trip", "fact": "hotel: 凯悦 Hyatt"}),
        ("remember", {"conversation_id": "trip", "fact": "hotel: Bob Inn"}),
        ("list_facts", {}),
        ("chatmem://conversations/ann%2Ftrip/context/current", {})])
    assert [f["owner"] for f in theirs["facts"]] == ["ann/trip"]
    assert [f["owner"] for f in mine["facts"]] == ["trip"]
    assert sorted((f["owner"], f["value"]) for f in listed["facts"]) == [
        ("ann/trip", "凯悦 Hyatt"), ("trip", "Bob Inn")]
    assert json.loads(context["text"])["session"] == "ann/trip"
    assert json.loads(output("inspect", "ann/trip", "1", "--json", "--db", bob))["session"] \
        == "ann/trip"
    assert json.loads(output("inspect", "trip", "1", "--json", "--db", bob))["session"] == "trip"
    table = invoke("facts", "list", "--db", bob, width=200).stdout
    # Owner and source (/remember in session …) of each.
    assert (table.count("session ann/trip"), table.count("session trip")) == (2, 2)


def test_a_write_to_a_read_only_share_gives_no_advice_a_client_cannot_take(
        urls: tuple[str, str]) -> None:
    ann, bob = urls
    output("chat", "日记", "--provider", "scripted", "--db", ann, input="ann 的日记\n")
    output("sessions", "share", "日记", "--with", "bob", "--db", ann)
    recorded, remembered = mcp_calls(["--db", bob], [
        ("record_turn", {"conversation_id": "ann/日记", "user": "bob 写的", "assistant": "好"}),
        ("remember", {"conversation_id": "ann/日记", "fact": "mood: 开心"})], errors=True)
    for refused in (recorded, remembered):
        assert "session 'ann/日记' is shared with you read-only by ann: it cannot be changed" \
            " (ask ann to share it for writing)" in refused["error"], refused
        assert "fork" not in refused["error"]


def test_a_shared_style_name_no_one_shares_is_said_as_serve_says_it(
        urls: tuple[str, str]) -> None:
    _, bob = urls
    refused, = mcp_calls(["--db", bob], [("start_conversation", {"name": "ann/work"})],
                         errors=True)
    assert refused["error"].endswith(
        ": no session 'ann/work' is shared with you (OWNER/NAME names a session another role"
        " shares with you; a name without a '/' names one of your own)")


def test_a_write_grantee_forgets_only_his_own_fact_dry_run_or_not(
        urls: tuple[str, str]) -> None:
    """His `forget` of ann's fact in her session forgot it (p033): now it is refused, and a
    dry run says so as well; his own he forgets."""
    ann, bob = urls
    mcp_calls(["--db", ann], [("remember", {"conversation_id": "trip", "fact": "心情: 开心"})])
    mcp_calls(["--db", bob], [("remember", {"conversation_id": "ann/trip",
                                           "fact": "mood: tired"})])
    listed, = mcp_calls(["--db", bob], [("list_facts", {"conversation_id": "ann/trip"})])
    ids = {f["value"]: f["id"] for f in listed["facts"]}
    hers, his = ids["开心"], ids["tired"]
    answers = mcp_calls(["--db", bob], [("forget", {"fact_id": hers}),
                                        ("forget", {"fact_id": hers, "confirm": True}),
                                        ("forget", {"fact_id": his, "confirm": True})],
                        errors=True)
    for refused in answers[:2]:
        assert f"fact {hers} of session 'ann/trip' (心情 = 开心) was stated by ann, not you" \
            in refused["error"], refused
    assert answers[2]["done"] is True
    kept, = mcp_calls(["--db", ann], [("list_facts", {"conversation_id": "trip"})])
    assert [f["value"] for f in kept["facts"]] == ["开心"]


def test_list_facts_names_who_stated_each_fact_in_a_shared_conversation(
        urls: tuple[str, str]) -> None:
    """A fact bob stated in ann's conversation listed without its speaker read as hers."""
    ann, bob = urls
    mcp_calls(["--db", ann], [("remember", {"conversation_id": "trip", "fact": "心情: 开心"})])
    remembered, = mcp_calls(["--db", bob], [
        ("remember", {"conversation_id": "ann/trip", "fact": "mood: tired"})])
    assert [f["speaker"] for f in remembered["facts"]] == ["bob"]
    for listed in (*mcp_calls(["--db", ann], [("list_facts", {"conversation_id": "trip"})]),
                   *mcp_calls(["--db", bob], [("list_facts", {"conversation_id": "ann/trip"})])):
        assert sorted((f["value"], f["speaker"]) for f in listed["facts"]) == [
            ("tired", "bob"), ("开心", None)], listed
