"""`chatmem serve` over an encrypted history whose key comes from key_command: the command
runs once for the server, not once per request (it may ask a person each time)."""

from __future__ import annotations

import contextlib
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import needs_sqlcipher
from test_proxy import RunningProxy
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from openai import OpenAI

from chatmem.config.settings import Settings
from chatmem.store import Store

pytestmark = needs_sqlcipher
KEY = "served 钥匙 4471"


def test_key_command_runs_once_for_a_server_not_once_per_request(tmp_path: Path) -> None:
    db, runs = tmp_path / "h.db", tmp_path / "runs"
    Store(db, key=KEY).close()
    printing = f"import sys; open({str(runs)!r}, 'a').write('run\\n'); print({KEY!r})"
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(printing)}"
    settings = Settings(provider="scripted", db=str(db), key_command=command)
    with RunningProxy(settings, strategy="window") as running:
        openai = OpenAI(base_url=running.base_url, api_key="unused", max_retries=0,
                        timeout=HANG)
        for n in range(4):  # new conversations and a kept one: each opens the history
            reply = openai.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"hello {n}"}],
                extra_headers={"X-Chatmem-Conversation": f"c{n % 3}"})
            assert (reply.choices[0].message.content or "").endswith(f": hello {n}")
    assert runs.read_text() == "run\n"
    with Store(db, key=KEY) as store:
        assert len(store.sessions.list_sessions()) == 3


@contextlib.contextmanager
def _served_with_the_key(db: Path) -> Iterator[OpenAI]:
    """A client of a server over a new encrypted history whose key key_command prints."""
    Store(db, key=KEY).close()
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(f'print({KEY!r})')}"
    settings = Settings(provider="scripted", db=str(db), key_command=command)
    with RunningProxy(settings, strategy="window") as running:
        yield OpenAI(base_url=running.base_url, api_key="unused", max_retries=0, timeout=HANG)


def test_a_client_s_history_holding_the_key_command_key_is_stored_masked(tmp_path: Path) -> None:
    """The history key key_command gave the server was masked in a request's new message
    (the engine's) but not in the client's earlier messages it sent along, which were
    stored as sent."""
    db = tmp_path / "h.db"
    with _served_with_the_key(db) as openai:
        for conversation in ("opens", "旅行"):
            openai.chat.completions.create(model="m", messages=[
                {"role": "user", "content": f"钥匙是 {KEY}"},
                {"role": "assistant", "content": "好"},
                {"role": "user", "content": f"again {KEY}"}],
                extra_headers={"X-Chatmem-Conversation": quote(conversation)})
    with Store(db, key=KEY) as store:
        said = [m.content for m in store.history.messages(store.sessions.session("旅行").id)]
    assert said[:3] == ["钥匙是 [history key]", "好", "again [history key]"], said


def test_the_first_request_s_history_holding_the_key_command_key_is_stored_masked(
        tmp_path: Path) -> None:
    """Said to leave the history key in the first request's earlier messages unmasked (the
    request that ran key_command): the server opens its history, key_command's key and all,
    before it listens (app.server_history.held_open), so its first request is masked as
    every later one, system message included."""
    db = tmp_path / "h.db"
    with _served_with_the_key(db) as openai:
        openai.chat.completions.create(model="m", messages=[
            {"role": "system", "content": f"系统 {KEY}"},
            {"role": "user", "content": f"钥匙是 {KEY}"},
            {"role": "assistant", "content": "好"},
            {"role": "user", "content": f"again {KEY}"}],
            extra_headers={"X-Chatmem-Conversation": quote("旅行")})
    with Store(db, key=KEY) as store:
        session = store.sessions.session("旅行")
        said = [m.content for m in store.history.messages(session.id)]
        sent = str([(t.context, t.rendered_prompt) for t in store.turns.turns(session.id)])
    assert said[:3] == ["钥匙是 [history key]", "好", "again [history key]"], said
    assert KEY not in sent and "系统 [history key]" in sent
