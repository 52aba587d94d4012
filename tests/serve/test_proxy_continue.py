"""Open WebUI's "Continue" on a reply cut short (at the reply cap, or stopped) sends the
history up to and with that reply, the assistant's, last, and appends what comes back to
it. chatmem refused it ("the last message must be the user's"). The model is sent the
reply so far to go on with, the client gets what it adds, and one reply is stored: the
turn it continues is replaced by the whole reply, or, where the cut reply was never stored
(a stop is stored as cancelled, out of memory), the exchange is stored once, whole."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from openai import OpenAI
from test_proxy import RunningProxy

from chatmem.config.settings import Settings

ID = {"X-Chatmem-Conversation": "continue-1"}


def _visible(db: Path) -> list[tuple[str, str]]:
    """The session's messages as memory holds them: those of turns not replaced."""
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "select m.role, m.content from messages m join turns t on m.id in"
            " (t.user_message_id, t.assistant_message_id) where t.superseded_by is null"
            " and t.status = 'ok' order by m.position").fetchall()


@pytest.mark.parametrize("stream", [True, False])
def test_a_continue_goes_on_with_the_cut_reply_and_stores_one_reply(
        chat_server: ChatServer, db_path: Path, stream: bool) -> None:
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    asked = [{"role": "user", "content": "讲讲杭州的西湖"}]
    with RunningProxy(settings, strategy="window") as running:
        client = OpenAI(base_url=running.base_url, api_key="k", timeout=HANG)
        first = client.chat.completions.create(model="test-small", messages=asked,
                                               extra_headers=ID)
        assert first.choices[0].message.content == "Hello from the test server."
        cut = "Hello from the"  # as the client shows it, cut short
        chat_server.reply_words = [" test", " server", " again."]
        continued = [*asked, {"role": "assistant", "content": cut}]
        if stream:
            added = "".join(chunk.choices[0].delta.content or ""
                            for chunk in client.chat.completions.create(
                                model="test-small", messages=continued, stream=True,
                                extra_headers=ID) if chunk.choices)
        else:
            added = client.chat.completions.create(
                model="test-small", messages=continued,
                extra_headers=ID).choices[0].message.content or ""
        chat_server.reply_words = ["好的。"]
        after = client.chat.completions.create(
            model="test-small", extra_headers=ID,
            messages=[*asked, {"role": "assistant", "content": cut + added},
                      {"role": "user", "content": "And in English?"}])
    assert added == " test server again."
    sent = chat_server.requests[1]["messages"]
    assert sent[-2:] == [{"role": "user", "content": "讲讲杭州的西湖"},
                         {"role": "assistant", "content": cut}]
    assert after.choices[0].message.content == "好的。"
    assert _visible(db_path) == [
        ("user", "讲讲杭州的西湖"), ("assistant", "Hello from the test server again."),
        ("user", "And in English?"), ("assistant", "好的。")]
    with sqlite3.connect(db_path) as conn:  # what was sent, as inspect shows it
        [context] = conn.execute("select context from turns where number = 2").fetchone()
    last = json.loads(context)["parts"][-1]
    assert last["reason"] == {"kind": "new_input", "continued": True}
    assert [(m["role"], m["content"]) for m in last["messages"]] == [
        ("user", "讲讲杭州的西湖"), ("assistant", cut)]


def test_a_continue_of_a_reply_never_stored_stores_the_exchange_once(
        chat_server: ChatServer, db_path: Path) -> None:
    """A stopped reply is stored as cancelled, out of memory: its Continue is the exchange's
    one stored turn, the question and the whole reply."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    with RunningProxy(settings, strategy="window") as running:
        answered = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                              headers=ID, json={"model": "test-small", "messages": [
                                  {"role": "user", "content": "Tell me about Porto"},
                                  {"role": "assistant", "content": "Porto is"}]})
    assert answered.status_code == 200, answered.text
    assert _visible(db_path) == [
        ("user", "Tell me about Porto"), ("assistant", "Porto isHello from the test server.")]


def _asked(client: OpenAI, chat_server: ChatServer, history: list[dict[str, str]],
           exchanges: list[tuple[str, str]]) -> None:
    """Each question asked with `history` (the client's, added to), answered as given."""
    for said, answer in exchanges:
        chat_server.reply_words = [answer]
        history.append({"role": "user", "content": said})
        reply = client.chat.completions.create(model="test-small", messages=history)
        history.append({"role": "assistant", "content": reply.choices[0].message.content or ""})


def _continued_then_trimmed(client: OpenAI, chat_server: ChatServer,
                            history: list[dict[str, str]], added: str) -> None:
    """The last reply continued (the model adding `added`), then a question asked with the
    last two exchanges only, as a client that trims its history sends it."""
    chat_server.reply_words = [added]
    reply = client.chat.completions.create(model="test-small", messages=history)
    history[-1]["content"] += reply.choices[0].message.content or ""
    chat_server.reply_words = ["好的。"]
    window = [*history[-4:], {"role": "user", "content": "谢谢"}]  # two exchanges
    client.chat.completions.create(model="test-small", messages=window)


def test_a_client_that_trims_its_history_goes_on_after_a_continue(
        chat_server: ChatServer, db_path: Path) -> None:
    """A client without an id that sends only its last exchanges is found again by the
    exchange the server answered last: after a Continue it was filed under the words the
    model added alone, not the reply the client shows (and sends back) whole, and the
    client's next window began a new session, holding its two exchanges once more."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    history: list[dict[str, str]] = []
    with RunningProxy(settings, strategy="window") as running:
        client = OpenAI(base_url=running.base_url, api_key="k", timeout=HANG)
        _asked(client, chat_server, history, [("讲讲西湖", "西湖在杭州。"),
                                              ("And Leifeng Pagoda?", "It"),
                                              ("它什么时候倒的？", "It fell")])
        _continued_then_trimmed(client, chat_server, history, " in 1924.")
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("select count(*) from sessions").fetchone() == (1,)
    assert _visible(db_path)[-4:] == [
        ("user", "它什么时候倒的？"), ("assistant", "It fell in 1924."),
        ("user", "谢谢"), ("assistant", "好的。")]


def test_a_continued_reply_holding_the_api_key_is_stored_masked_and_goes_on(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reply so far is the client's text (Open WebUI lets it be edited before a
    Continue), as its history is, which serve masks: it was sent and stored with the key,
    and the exchange was filed under it unmasked, so a client without an id that trims its
    history, sending it back masked alike, began a new session."""
    key = "sk-test-CONTINUE-0a1b2c3d4e5f6789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    history: list[dict[str, str]] = []
    with RunningProxy(settings, strategy="window") as running:
        client = OpenAI(base_url=running.base_url, api_key="k", timeout=HANG)
        _asked(client, chat_server, history, [("讲讲西湖", "西湖在杭州。"), ("我的密钥呢？", "It")])
        history[-1]["content"] = f"你的密钥是{key}，"  # edited, then continued
        _continued_then_trimmed(client, chat_server, history, "请保管好。")
    assert chat_server.requests[2]["messages"][-1] == {
        "role": "assistant", "content": "你的密钥是[api key]，"}
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("select count(*) from sessions").fetchone() == (1,)
    assert _visible(db_path)[-4:] == [
        ("user", "我的密钥呢？"), ("assistant", "你的密钥是[api key]，请保管好。"),
        ("user", "谢谢"), ("assistant", "好的。")]
    for path in db_path.parent.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
