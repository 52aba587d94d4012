"""Token counts an OpenAI-compatible server reports are checked as a plugin's are: a count
that is no count (text, a float, a negative number, 10**23, a list) is dropped with one
notice, and the paid reply is stored; a bad count stored before (an older row) reads as
unknown, so `logs` and `inspect` still show the session."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer
from cli_runner import invoke
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.notices import UsageIgnored
from chatmem.providers.openai import OpenAIProvider
from chatmem.store import Store

NO_COUNTS: list[tuple[Any, str]] = [
    ({"prompt_tokens": "lots", "completion_tokens": 5}, "prompt_tokens is 'lots', not a count"),
    ({"prompt_tokens": 10**23, "completion_tokens": 5},
     "prompt_tokens is 100000000000000000000000, more than any request or reply holds"),
    ({"prompt_tokens": 5, "completion_tokens": [1]}, "completion_tokens is list, not a count"),
    ({"prompt_tokens": -1000, "completion_tokens": 5}, "prompt_tokens is -1000, not a count"),
    ({"prompt_tokens": 1.5e300, "completion_tokens": 2.5}, "prompt_tokens is 1.5e+300, not"),
    ("nonsense", "its usage is str, not token counts"),
]


def engine_for(store: Store, server: ChatServer):  # type: ignore[no-untyped-def]
    provider = OpenAIProvider("test-model", base_url=server.base_url, api_key="sk-test",
                              max_retries=0)
    return open_session(store, Settings(), provider, "counts", strategy="buffer")


@pytest.mark.parametrize("mode", ["ok", "json"])
@pytest.mark.parametrize(("usage", "said"), NO_COUNTS)
def test_a_servers_count_that_is_no_count_is_dropped_with_a_notice_and_the_reply_kept(
        store, chat_server, mode: str, usage: Any, said: str) -> None:
    chat_server.usage = usage
    chat_server.plan = [mode]
    result = engine_for(store, chat_server).run_turn("hi 你好")
    assert result.status == "ok" and result.reply == "Hello from the test server."
    [notice] = [n for n in result.notices if isinstance(n, UsageIgnored)]
    assert notice.provider == "openai" and said in notice.wrong
    [turn] = store.turns.turns(result.record.session_id)
    assert (turn.prompt_tokens, turn.completion_tokens, turn.reply) == (
        None, None, "Hello from the test server.")


def test_a_servers_good_counts_are_kept(store, chat_server) -> None:
    chat_server.usage = {"prompt_tokens": 7, "completion_tokens": 5}
    result = engine_for(store, chat_server).run_turn("hi")
    assert not any(isinstance(n, UsageIgnored) for n in result.notices)
    assert (result.record.prompt_tokens, result.record.completion_tokens) == (7, 5)


def test_ask_says_one_line_and_logs_and_inspect_still_read_the_session(
        tmp_path: Path, chat_server) -> None:
    db = str(tmp_path / "h.db")
    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-test"}
    chat_server.usage = {"prompt_tokens": "lots", "completion_tokens": 5}
    asked = invoke("ask", "u", "hi", "--db", db, "--model", "m", env=env, code=0)
    assert asked.stdout.strip() == "Hello from the test server."
    assert "token counts of provider 'openai' ignored" in asked.stderr
    assert "Traceback" not in asked.output


@pytest.mark.parametrize("stored", ["lots", 1.5e300, -1000, 10**18])
def test_a_bad_count_stored_before_reads_as_unknown(tmp_path: Path, chat_server,
                                                    stored: object) -> None:
    """Rows written before counts were checked held 'lots' (every `logs` and `inspect`
    then ended in a traceback), a float or a negative count."""
    db = str(tmp_path / "h.db")
    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-test"}
    invoke("ask", "u", "hi", "--db", db, "--model", "m", env=env, code=0)
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE turns SET prompt_tokens = ?, completion_tokens = ?",
                           (stored, stored))
    logs = invoke("logs", "--db", db, code=0)
    assert "Traceback" not in logs.output and "1.5e+300" not in logs.stdout
    assert "-1,000" not in logs.stdout
    inspect = invoke("inspect", "u", "--db", db, code=0)
    assert "Traceback" not in inspect.output and "1.5e+300" not in inspect.stdout
    as_json = invoke("inspect", "u", "--db", db, "--json", code=0)
    assert '"prompt_tokens": null' in as_json.stdout
    with Store(db) as store:  # the REPL's running total
        [used] = store.logs.usage_by_model(store.sessions.session("u").id)
    assert used.reply_tokens == 0 and 0 < used.prompt_tokens < 1000
