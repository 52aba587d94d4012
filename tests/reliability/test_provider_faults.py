"""Provider faults against a real HTTP server on 127.0.0.1 (tests/chat_server.py).

Each fault: exit code 1, exactly one `error:` line, retries bounded by
max_retries, and memory untouched (only a failed turn row is recorded) or the
turn complete. The summarizer and the fact extractor fail without losing the
turn and catch up later.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from cli_runner import chat
from registered import open_session
from typer.testing import Result
from waiting import HANG

from chatmem.config.settings import Settings
from chatmem.notices import ReplyCut
from chatmem.providers.openai import OpenAIProvider
from chatmem.store import Store

RETRIES = 1


def config(tmp_path: Path, base_url: str, timeout: float = HANG, **extra: object) -> Path:
    """A config for the test server. The timeout is a hang guard (a server that answers
    is never timed out, however busy the machine): only the hang test sets a short one."""
    path = tmp_path / "config.toml"
    lines = [f'base_url = "{base_url}"', 'model = "m"', f"timeout = {timeout}",
             f"max_retries = {RETRIES}", *(f"{k} = {v!r}".replace("'", '"')
                                           for k, v in extra.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def chat_with_server(tmp_path: Path, base_url: str, text: str = "hello\n",
                     strategy: str = "window", **extra: object) -> Result:
    """`chatmem chat s` on the openai provider at `base_url`, configured as `config` does."""
    return chat(tmp_path / "h.db", "s", text, "--provider", "openai", "-s", strategy,
                "--config", str(config(tmp_path, base_url, **extra)))


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def stored(tmp_path: Path) -> tuple[list[str], list[str]]:
    """(message contents, turn statuses) of session s."""
    with Store(tmp_path / "h.db") as store:
        session = store.sessions.session("s")
        return ([m.content for m in store.history.messages(session.id)],
                [t.status for t in store.turns.turns(session.id)])


FAULTS = [
    ("401", 1, "refused the API key (401): check $OPENAI_API_KEY"),
    # The key was taken: the refusal is the server's to say, not "check $OPENAI_API_KEY".
    ("403-region", 1, "refused the request (403): Country, region, or territory not supported"),
    ("404", 1, "answered 404 for model 'm': check the model name and base_url"),
    ("404-ollama", 1, "answered 404 for model 'm': check the model name and base_url"),
    # Not the model's name to check: the server has no such path.
    ("404-path", 1, "answered 404 without saying model 'm' is unknown"
                    " (Error code: 404 - no route /chat/completions): check base_url"),
    ("429-retry-after", RETRIES + 1, "is rate limiting requests (429) after retries"),
    # Not "wait and try again": no wait ends a used-up quota, and a day is not retried.
    ("429-quota", RETRIES + 1, "answered 429 insufficient_quota: the account's quota is used up;"
                               " check its plan and billing (waiting does not help)"),
    ("429-wait-a-day", 1, "is rate limiting requests (429) and asks to wait 24 h: not retried"),
    ("500", RETRIES + 1, "answered 500: Error code: 500"),
    ("503", RETRIES + 1, "answered 503: Error code: 503"),
    # A gateway's 502/504: the model may have the request (and bill it), so not sent again.
    ("502", 1, "answered 502: Error code: 502"),
    ("504", 1, "answered 504: Error code: 504"),
    ("cut", 1, "broke off before the reply was complete"),
    ("error-event", 1, "reported an error in the middle of the reply: the model ran out of memory"),
    ("invalid-json", 1, "sent data that is not valid JSON in the middle of the reply stream"),
    ("not-utf8", 1, "sent bytes that are not UTF-8 in the middle of the reply stream"),
    ("number-content", 1, "sent a piece of the reply that is not text"),
    ("empty-choices", 1, "ended before the reply was complete"),
    ("empty-reply", 1, "sent an empty reply"),
    ("html", 1, "answered with an HTML page, not an OpenAI-compatible reply: check base_url"),
]


@pytest.mark.parametrize(("mode", "requests", "message"), FAULTS, ids=[f[0] for f in FAULTS])
def test_a_provider_fault_is_one_line_bounded_and_leaves_memory_untouched(
    tmp_path: Path, chat_server, mode: str, requests: int, message: str
) -> None:
    chat_server.plan = [mode] * 5
    result = chat_with_server(tmp_path, chat_server.base_url)
    assert result.exit_code == 1
    errors = error_lines(result.stderr)
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert len(chat_server.requests) == requests  # retries are bounded
    assert stored(tmp_path) == ([], ["failed"])


def test_a_server_that_never_answers_times_out_in_one_line(tmp_path: Path, chat_server) -> None:
    chat_server.plan = ["hang"] * 5
    # The server never answers, so the timeout is reached however busy the machine is.
    result = chat_with_server(tmp_path, chat_server.base_url, timeout=0.5)
    assert result.exit_code == 1
    assert error_lines(result.stderr) == [
        f"error: {chat_server.base_url} did not answer in time: raise timeout or check the server"]
    # The server has the request and may still be answering it (billed): not sent again.
    assert len(chat_server.requests) == 1
    assert stored(tmp_path) == ([], ["failed"])


@pytest.mark.parametrize(("mode", "deadline", "message"), [
    ("keepalive", "idle_timeout", "sent no part of the reply for 0.5 s (idle_timeout)"),
    ("drip", "reply_timeout", "had not finished the reply after 0.5 s (reply_timeout)"),
])
def test_a_server_that_keeps_the_stream_busy_without_finishing_is_stopped_at_a_deadline(
    tmp_path: Path, chat_server, mode: str, deadline: str, message: str
) -> None:
    # Keep-alive comments forever, or 3 characters every 10 ms: each read is quick, so the
    # read timeout (HANG here) never fires; the deadline must. The server gives up after
    # HANG, so a client without deadlines fails this test instead of hanging it.
    chat_server.plan = [mode]
    result = chat_with_server(tmp_path, chat_server.base_url, **{deadline: 0.5})
    assert result.exit_code == 1
    assert error_lines(result.stderr) == [
        f"error: {chat_server.base_url} {message}: nothing was kept; raise {deadline} or"
        " check the server"], result.stderr
    assert len(chat_server.requests) == 1  # a deadline is not retried
    assert stored(tmp_path) == ([], ["failed"])


def test_a_reply_that_keeps_coming_is_not_stopped_by_the_idle_deadline(
    tmp_path: Path, chat_server
) -> None:
    # Pieces arrive 10 ms apart, well inside the idle deadline; only the total one ends it.
    chat_server.plan = ["drip"]
    result = chat_with_server(tmp_path, chat_server.base_url, idle_timeout=2.0, reply_timeout=4.0)
    assert result.exit_code == 1
    assert [line.split(" s ")[-1] for line in error_lines(result.stderr)] == [
        "(reply_timeout): nothing was kept; raise reply_timeout or check the server"]


def test_a_refused_connection_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    result = chat_with_server(tmp_path, url)
    assert result.exit_code == 1
    assert error_lines(result.stderr) == [f"error: cannot reach {url}: is the server running?"]
    assert stored(tmp_path) == ([], ["failed"])


@pytest.mark.parametrize("way", ["https-to-plain-http", "host-not-found", "proxy-refuses"])
def test_a_server_out_of_reach_is_said_with_what_to_check(
    tmp_path: Path, chat_server, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    # Each was "cannot reach URL: is the server running?", though the first and the last
    # server ran (the proxy refused, or the port spoke plain HTTP) and the second's name
    # did not resolve.
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY",
                 "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    url = chat_server.base_url
    if way == "https-to-plain-http":
        url = url.replace("http://", "https://")
    elif way == "host-not-found":
        url = "http://no-such-host.invalid/v1"  # .invalid never resolves (RFC 6761)
    else:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # closed again: no proxy listens there
        monkeypatch.setenv("HTTP_PROXY", f"http://me:proxy-password@127.0.0.1:{port}")
    result = chat_with_server(tmp_path, url)
    assert result.exit_code == 1
    [error] = error_lines(result.stderr)
    assert error.startswith(f"error: cannot reach {url}"), error
    assert error.endswith({
        "https-to-plain-http": "; a server that speaks plain HTTP needs a base_url that"
                               " starts with http://",
        "host-not-found": ": the host name 'no-such-host.invalid' was not found (DNS):"
                          " check base_url",
        "proxy-refuses": " through the proxy $HTTP_PROXY names: is the proxy running?"
                         " (NO_PROXY lists hosts reached directly)"}[way]), error
    assert "proxy-password" not in result.stderr
    assert stored(tmp_path) == ([], ["failed"])


def test_a_redirect_that_turns_the_request_into_a_get_is_said(
    tmp_path: Path, chat_server
) -> None:
    # The client follows a 301 as a browser does, as a GET: the new address's 404 was said
    # as "answered 404 for model 'm': check the model name", of the old address.
    chat_server.plan = ["moved-301"]
    result = chat_with_server(tmp_path, chat_server.base_url)
    assert result.exit_code == 1
    moved = chat_server.base_url.removesuffix("/v1") + "/v2"
    assert error_lines(result.stderr) == [
        f"error: {chat_server.base_url} redirected the request (301) to {moved}, where it"
        f" arrived as a GET, not a POST: set base_url to {moved}"], result.stderr
    assert chat_server.paths == ["/v1/chat/completions", "/v2/chat/completions"]
    assert stored(tmp_path) == ([], ["failed"])


def test_a_non_streamed_json_answer_is_taken_as_the_reply(tmp_path: Path, chat_server) -> None:
    chat_server.plan = ["json"]
    result = chat_with_server(tmp_path, chat_server.base_url)
    assert result.exit_code == 0, result.stderr
    assert stored(tmp_path) == (["hello", "Hello from the test server."], ["ok"])


def test_a_5_mb_reply_is_cut_at_the_reply_cap_and_stored_with_a_notice(
    tmp_path: Path, chat_server
) -> None:
    chat_server.plan = ["huge"]
    provider = OpenAIProvider("m", base_url=chat_server.base_url, api_key="sk-x",
                              timeout=HANG, max_retries=RETRIES, max_tokens=1000)
    with Store(tmp_path / "h.db") as store:
        result = open_session(store, Settings(), provider, "s", strategy="window").run_turn(
            "hello")
    assert result.status == "ok" and ReplyCut() in result.notices
    contents, statuses = stored(tmp_path)
    assert statuses == ["ok"]
    assert 16_000 <= len(contents[1]) <= 16_000 + 10_000  # 1000 tokens × 16 characters


def test_a_failing_summarizer_keeps_the_turn_tells_the_user_and_catches_up(
    tmp_path: Path, chat_server
) -> None:
    # Turn 1's reply, then the summary call fails (500 after its retry).
    chat_server.plan = ["ok", "500", "500"]
    result = chat_with_server(tmp_path, chat_server.base_url, strategy="summary")
    assert result.exit_code == 0, result.stderr
    behind = [line for line in result.stderr.splitlines() if "summary is behind" in line]
    assert len(behind) == 1
    assert stored(tmp_path) == (["hello", "Hello from the test server."], ["ok"])
    with Store(tmp_path / "h.db") as store:
        assert store.memory.summaries(store.sessions.session("s").id) == []
    # The server recovers: the next run catches up on turn 1, then folds turn 2.
    result = chat_with_server(tmp_path, chat_server.base_url, text="again\n", strategy="summary")
    assert result.exit_code == 0, result.stderr
    with Store(tmp_path / "h.db") as store:
        session = store.sessions.session("s")
        covered = [i for s in store.memory.summaries(session.id) for i in s.covered_ids]
        assert covered == [m.id for m in store.history.messages(session.id)]  # each once, in order


def test_a_fact_extractor_answering_junk_keeps_the_turn_and_says_so_once(
    tmp_path: Path, chat_server
) -> None:
    chat_server.plan = ["ok", "ok"]  # the extraction request gets prose, not JSON
    result = chat_with_server(tmp_path, chat_server.base_url, text="my name is Ada\n",
                              strategy="entity")
    assert result.exit_code == 0, result.stderr
    notices = [line for line in result.stderr.splitlines() if "facts not updated" in line]
    assert len(notices) == 1, result.stderr
    assert stored(tmp_path) == (["my name is Ada", "Hello from the test server."], ["ok"])


@pytest.mark.parametrize("mode", ["finished-then-stall", "finished-then-drop"])
def test_a_reply_that_ended_is_kept_when_only_its_trailer_is_lost(
    tmp_path: Path, chat_server, mode: str
) -> None:
    # finish_reason came, so the reply is whole; then no [DONE] on a connection held open
    # (lost at the read timeout, said as not answered in time), or the connection dropped
    # before the usage (said as broken off): the paid reply was thrown away either way.
    # The server sends all it sends at once: only the stall waits for the read timeout.
    chat_server.plan = [mode]
    result = chat_with_server(tmp_path, chat_server.base_url, timeout=5)
    assert result.exit_code == 0, result.stderr
    assert stored(tmp_path) == (["hello", "Hello from the test server."], ["ok"])
    assert len(chat_server.requests) == 1
    if mode == "finished-then-stall":
        with Store(tmp_path / "h.db") as store:
            [turn] = store.turns.turns(store.sessions.session("s").id)
            assert turn.completion_tokens == 5  # the usage that came before the stall
