"""A reply is answered once its turn is stored, not after the memory update that follows it
(a summary, facts: a call to the helper model). The response waited for that update: a slow
or stalled helper made an SDK client with a timeout fail although the whole reply had come and
was stored, and its retries asked the model again (billed twice, the turn stored twice).
The conversation's next request still waits for the update, and a server stopped meanwhile
finishes it before it exits. Real HTTP both ways, a real history file."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from chat_server import ChatServer
from waiting import HANG, wait_until

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from openai import OpenAI
from test_proxy import RunningProxy

from chatmem.config.settings import Settings
from chatmem.memory.summarizer import DEFAULT_PROMPT
from chatmem.store import Store

REPLY = "Hello from the test server."
CLIENT_TIMEOUT = HANG / 2
"""The client's own timeout: the reply and its storing take milliseconds (but the first
turn of a fresh `chatmem serve` process on a loaded machine took over 20 s), the held
summary until the test releases it (which it does only once the reply is answered) or for
HANG: a reply held behind its summary still times out, at half that."""
SPOKEN = [("memory-after-en", "I live in Lisbon.", "Where do I live?"),
          ("之后再记", "我住在里斯本。", "我住在哪里？")]


def ask(base_url: str, conversation: str, text: str, stream: bool) -> tuple[str, str]:
    """The reply's text and the turn chatmem names, as an SDK client with a timeout gets
    them (no retries: a retry would hide the timeout)."""
    client = OpenAI(base_url=base_url, api_key="unused", max_retries=0,
                    timeout=CLIENT_TIMEOUT)
    headers = {"X-Chatmem-Conversation": quote(conversation)}
    messages = [{"role": "user", "content": text}]
    if not stream:
        raw = client.chat.completions.with_raw_response.create(
            model="test-small", messages=messages,  # type: ignore[arg-type]
            extra_headers=headers)
        return raw.parse().choices[0].message.content or "", raw.headers["x-chatmem-turn"]
    said, turn = "", ""
    for chunk in client.chat.completions.create(
            model="test-small", messages=messages,  # type: ignore[arg-type]
            extra_headers=headers, stream=True):
        if chunk.choices:
            said += chunk.choices[0].delta.content or ""
        turn = (chunk.model_extra or {}).get("chatmem", {}).get("turn", turn)
    return said, quote(turn, safe="@")


def summarizing(request: dict[str, object]) -> bool:
    return DEFAULT_PROMPT[:40] in str(request.get("messages"))


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not-streamed"])
@pytest.mark.parametrize(("conversation", "first", "second"), SPOKEN, ids=["en", "zh"])
def test_a_reply_is_answered_once_stored_and_the_next_waits_for_its_memory_update(
        chat_server: ChatServer, db_path: Path, stream: bool, conversation: str,
        first: str, second: str) -> None:
    chat_server.plan = ["ok", "slow"]  # the reply; then the summary, held after its first piece
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="summary") as proxy:
        try:
            answered = ask(proxy.base_url, conversation, first, stream)
            # Answered while the summary of its turn is still being made.
            assert not chat_server.release.is_set()
            assert answered == (REPLY, f"{quote(conversation)}@1")
            wait_until(lambda: len(chat_server.requests) == 2, "the summary asked")
            assert summarizing(chat_server.requests[1])
            seen: list[tuple[str, str]] = []
            later = threading.Thread(target=lambda: seen.append(
                ask(proxy.base_url, conversation, second, stream)))
            later.start()
            time.sleep(0.5)
            # The conversation's next request waits for the update: not sent meanwhile.
            assert len(chat_server.requests) == 2 and later.is_alive()
        finally:
            chat_server.release.set()
        later.join(HANG)
        assert seen == [(REPLY, f"{quote(conversation)}@2")]
    replied = [r for r in chat_server.requests if not summarizing(r)]
    assert len(replied) == 2
    # Sent with the summary the first turn's update made (`summary` sends no earlier turn).
    assert second in str(replied[1]["messages"]) and REPLY in str(replied[1]["messages"])
    with Store(db_path) as store:
        session = store.sessions.session(conversation)
        assert [(t.input, t.status) for t in store.turns.turns(session.id)] == [
            (first, "ok"), (second, "ok")]
        assert [s.text for s in store.memory.summaries(session.id)] == [REPLY, REPLY]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serving(base: str) -> bool:
    """Whether the server answers HTTP, asked where it answers without the model's endpoint
    (a 404). Not GET /v1/models, which asks the endpoint's list: one that outlived its
    second of waiting (a fresh server, a loaded machine) reached the chat server after the
    plan was set and took the reply's place in it (the reply held: a client timeout) or the
    summary's (the summary answered at once: the server exited before the test looked)."""
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(f"{base}/chatmem/listening", timeout=1).read()
    except urllib.error.HTTPError:
        return True  # answered, if only to say the path is not served
    except OSError:
        return False
    return True


def test_a_server_stopped_while_a_memory_update_runs_finishes_it_before_it_exits(
        chat_server: ChatServer, tmp_path: Path) -> None:
    """Stopped (SIGTERM) after a reply was answered, while its summary is being made: the
    server waits for it, and stores it, before it exits (the real process)."""
    conversation, first, _ = SPOKEN[1]
    db, port, config = tmp_path / "h.db", free_port(), tmp_path / "config.toml"
    config.write_text(f'provider = "openai"\nmodel = "test-small"\n'
                      f'base_url = "{chat_server.base_url}"\n', encoding="utf-8")
    server = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "serve", "--port", str(port), "--db", str(db),
         "--config", str(config), "-s", "summary"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    base = f"http://127.0.0.1:{port}/v1"

    try:
        wait_until(lambda: serving(base), "the server listening")
        chat_server.plan = ["ok", "slow"]  # the reply; then the summary, held
        assert ask(base, conversation, first, stream=True)[0] == REPLY
        wait_until(lambda: len(chat_server.requests) == 2, "the summary asked")
        assert summarizing(chat_server.requests[1])
        server.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert server.poll() is None  # still making the summary
    finally:
        chat_server.release.set()
        server.terminate()  # (again: as a second SIGTERM, it still finishes what runs)
        server.wait(timeout=HANG)
    with Store(db) as store:
        session = store.sessions.session(conversation)
        assert [s.text for s in store.memory.summaries(session.id)] == [REPLY]


@pytest.mark.parametrize(("conversation", "first", "second"), SPOKEN, ids=["en", "zh"])
def test_a_chat_no_id_names_goes_on_in_its_session_while_its_memory_update_runs(
        chat_server: ChatServer, db_path: Path, conversation: str, first: str,
        second: str) -> None:
    """Its session was kept from other requests until its first turn's job ended, memory's
    update included: the chat's next message, sent once answered, began a session `-2`."""
    chat_server.plan = ["ok", "slow"]
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    client = OpenAI(base_url="", api_key="unused", max_retries=0, timeout=CLIENT_TIMEOUT)
    with RunningProxy(settings, strategy="summary") as proxy:
        client = client.with_options(base_url=proxy.base_url)
        history = [{"role": "user", "content": first}]
        try:
            answered = client.chat.completions.with_raw_response.create(
                model="test-small", messages=history)  # type: ignore[arg-type]
            assert not chat_server.release.is_set()  # its summary still being made
            history.append({"role": "assistant",
                            "content": answered.parse().choices[0].message.content or ""})
            history.append({"role": "user", "content": second})
            seen: list[str] = []
            later = threading.Thread(target=lambda: seen.append(
                client.chat.completions.with_raw_response.create(
                    model="test-small", messages=history,  # type: ignore[arg-type]
                ).headers["x-chatmem-turn"]))
            later.start()
            time.sleep(0.5)
        finally:
            chat_server.release.set()
        later.join(HANG)
    name = answered.headers["x-chatmem-turn"].rpartition("@")[0]
    assert seen == [f"{name}@2"]
    with Store(db_path) as store:
        assert [s.name for s in store.sessions.list_sessions()] == [unquote(name)]


@pytest.mark.parametrize(("conversation", "first", "_"), SPOKEN, ids=["en", "zh"])
def test_past_its_places_for_updates_a_reply_is_answered_after_its_own_update(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch,
        conversation: str, first: str, _: str) -> None:
    """Updates after their answers are bounded (here 1): a flood of conversations with a
    stalled helper made a waiting thread for each of any number of them. The next one is
    answered after its own update, and a place freed is taken again."""
    import chatmem.serve.conversations as conversations

    monkeypatch.setattr(conversations, "UPDATES_AFTER_ANSWER", 1)
    chat_server.plan = ["ok", "slow", "ok", "slow"]  # two replies, each summary held
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="summary") as proxy:
        try:
            assert ask(proxy.base_url, conversation, first, stream=True)[0] == REPLY
            wait_until(lambda: len(chat_server.requests) == 2, "the first summary asked")
            seen: list[tuple[str, str]] = []
            other = threading.Thread(target=lambda: seen.append(
                ask(proxy.base_url, f"{conversation}-2", first, stream=False)))
            other.start()
            wait_until(lambda: len(chat_server.requests) == 4, "the second summary asked")
            time.sleep(0.3)
            # Its reply is stored, but the one place is taken: answered after its update.
            assert seen == [] and other.is_alive()
        finally:
            chat_server.release.set()
        other.join(HANG)
        assert seen == [(REPLY, f"{quote(conversation)}-2@1")]
        # Both updates ended and gave their places back: the next reply is answered early.
        wait_until(lambda: not any(t.name == "chatmem-turn" for t in threading.enumerate()),
                   "both turns' threads ended")
        chat_server.release.clear()
        chat_server.plan = ["ok", "slow"]
        try:
            assert ask(proxy.base_url, f"{conversation}-3", first, stream=True)[0] == REPLY
            assert not chat_server.release.is_set()
        finally:
            chat_server.release.set()
