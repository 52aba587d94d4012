"""`inspect` of a turn that sent messages a later `facts forget --purge` rewrote: their counts
are the ones sent, not 0 with the gap put in a "chat template" row."""

from __future__ import annotations

import json

import pytest
from cli_runner import chat, run
from conftest import History


@pytest.mark.parametrize("said", [
    ("I live in Kathmandu now", "city", "Kathmandu"),
    ("我住在加德满都，最近搬的", "城市", "加德满都"),
])
def test_a_purged_message_keeps_the_count_it_was_sent_with(
        history: History, said: tuple[str, str, str]) -> None:
    """After `chatmem facts forget pw city --purge -y`, `chatmem inspect pw` of the turn
    that sent "I live in Kathmandu now" showed it and its reply at [0] tokens and a
    `chat template +26` row: the purge drops the messages' cached counts, which the stored
    context reads its references' counts from. The count sent is kept with the turn."""
    text, key, value = said
    db = history.location
    run(db, "ask", "pw", text, "-s", "window", "--save", "--provider", "scripted", code=0)
    run(db, "ask", "pw", "what is up", "--provider", "scripted", code=0)
    chat(db, "pw", [f"/remember {key}: {value}"], code=0)
    before = json.loads(run(db, "inspect", "pw", "--json", code=0).stdout)["context"]
    run(db, "facts", "forget", "pw", key, "--purge", "-y", code=0)
    after = json.loads(run(db, "inspect", "pw", "--json", code=0).stdout)["context"]
    (history,) = [p for p in after["parts"] if p["kind"] == "history"]
    assert [m["content"] for m in history["messages"]] == [
        text.replace(value, "[forgotten]"), "echo #1: " + text.replace(value, "[forgotten]")]
    sent = [m["tokens"] for p in before["parts"] for m in p["messages"]]
    assert [m["tokens"] for p in after["parts"] for m in p["messages"]] == sent
    assert all(n > 0 for n in sent)
    assert after["tokens"] == before["tokens"]
    # The next turn sends the purged text, counted as it is now.
    run(db, "ask", "pw", "and now?", "--provider", "scripted", code=0)
    now = json.loads(run(db, "inspect", "pw", "--json", code=0).stdout)["context"]
    (history,) = [p for p in now["parts"] if p["kind"] == "history"]
    assert history["messages"][0]["tokens"] not in (0, sent[1])
