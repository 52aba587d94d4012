"""A turn whose reply stops being read because of something else than the model (chatmem
used as a library: the caller's on_delta or on_reply_end raised, or a provider handed in
raised what is not chatmem's): the reply's stream is closed at once (a real HTTP server on
127.0.0.1 sees the hang-up), a failed turn row is recorded and nothing enters memory; the
caller's own exception reaches it as it raised it, the provider's as ProviderFailed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from registered import open_session
from waiting import HANG, wait_until

from chatmem.app import Workspace
from chatmem.app.conversations import open_conversation
from chatmem.config.settings import Settings
from chatmem.errors import ProviderFailed
from chatmem.providers.base import ChatMessages, Usage
from chatmem.providers.guarded import GuardedProvider
from chatmem.providers.openai import OpenAIProvider
from chatmem.store import Store
from chatmem.tokens import TokenCounter, counter_for_model


class CallersOwn(Exception):
    """What a program's callback raises."""


def stored(store: Store, name: str) -> tuple[list[str], list[tuple[str, str | None]]]:
    """(message contents, (status, error) of each turn) of session `name`."""
    session = store.sessions.session(name)
    return ([m.content for m in store.history.messages(session.id)],
            [(t.status, t.error) for t in store.turns.turns(session.id)])


def test_a_callback_that_raises_closes_the_stream_and_is_raised_as_it_is(
        tmp_path: Path, chat_server) -> None:
    chat_server.plan = ["drip"]  # 3 characters every 10 ms until the client hangs up
    provider = OpenAIProvider("m", base_url=chat_server.base_url, api_key="sk-x",
                              timeout=HANG, max_retries=0)
    raised = CallersOwn("the chat window was closed 窗口已关闭")

    def on_delta(delta: str) -> None:
        raise raised

    with Store(tmp_path / "h.db") as store:
        engine = open_session(store, Settings(), provider, "s", strategy="window")
        with pytest.raises(CallersOwn) as caught:
            engine.run_turn("讲个故事", on_delta=on_delta)
        assert caught.value is raised
        wait_until(chat_server.hung_up.is_set, "the server saw the client hang up")
        assert stored(store, "s") == ([], [(
            "failed", "the program receiving the reply failed: CallersOwn: the chat window "
            "was closed 窗口已关闭")])


def test_on_reply_end_raising_records_the_turn_failed(tmp_path: Path) -> None:
    settings = Settings(provider="scripted", db=str(tmp_path / "h.db"))

    def on_reply_end() -> None:
        raise CallersOwn("no screen")

    with Workspace(settings) as ws, open_conversation(ws, "s") as engine:
        with pytest.raises(CallersOwn):
            engine.run_turn("hello", on_reply_end=on_reply_end)
        assert stored(ws.store, "s") == (
            [], [("failed", "the program receiving the reply failed: CallersOwn: no screen")])


class Reply:
    def __init__(self, secret: str) -> None:
        self.usage, self.rendered_prompt = Usage(), None
        self.secret, self.closed = secret, False

    def __iter__(self) -> Iterator[str]:
        yield "partial "
        raise RuntimeError(f"socket reset, key {self.secret}")

    def close(self) -> None:
        self.closed = True


class OwnModel:
    """A program's own model, handed in through Workspace.around (no plugin guards it)."""

    name, model = "mine", "gpt-4o-mini"

    def __init__(self, secret: str) -> None:
        self.replies: list[Reply] = []
        self.secret = secret

    def stream(self, messages: ChatMessages) -> Reply:
        self.replies.append(Reply(self.secret))
        return self.replies[-1]

    def complete(self, messages: ChatMessages, *, purpose: object = None) -> str:
        return "x"

    def token_counter(self) -> TokenCounter:
        return counter_for_model(self.model)

    def close(self) -> None:
        pass


def test_a_handed_in_providers_own_error_is_provider_failed_masked_and_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-library-user-secret-0123456789"
    monkeypatch.setenv("MY_KEY", secret)
    settings = Settings(provider="scripted", db=str(tmp_path / "h.db"), api_key_env="MY_KEY")
    model = OwnModel(secret)
    with Store(tmp_path / "h.db") as store:
        ws = Workspace.around(settings, store, model)  # type: ignore[arg-type]
        with ws, open_conversation(ws, "own") as engine, \
                pytest.raises(ProviderFailed) as caught:
            engine.run_turn("hello")
        assert str(caught.value) == ("provider 'mine' failed: RuntimeError: socket reset, key"
                                     " [api key]")
        # A traceback does not show the original, its text unmasked.
        assert caught.value.__cause__ is None and caught.value.__suppress_context__
        assert model.replies[0].closed
        assert stored(store, "own") == ([], [("failed", str(caught.value))])


class Finished:
    """A reply a plugin streams whole, whose `rendered_prompt` property raises (its message
    holding the key), and which counts its closes."""

    def __init__(self, secret: str) -> None:
        self.usage, self.secret, self.closed = Usage(), secret, 0

    @property
    def rendered_prompt(self) -> str | None:
        raise RuntimeError(f"rendered prompt unavailable, key={self.secret}")

    def __iter__(self) -> Iterator[str]:
        yield "piece-one "
        yield "piece-two 你好"

    def close(self) -> None:
        self.closed += 1


class PluginModel(OwnModel):
    def stream(self, messages: ChatMessages) -> Finished:  # type: ignore[override]
        self.replies.append(Finished(self.secret))  # type: ignore[arg-type]
        return self.replies[-1]  # type: ignore[return-value]


def test_a_plugins_rendered_prompt_that_raises_costs_no_reply_and_a_finished_one_is_closed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The paid reply was shown, then lost to a traceback that printed the key; and a reply
    read to its end was never closed (a plugin holding a connection until close leaked one
    a turn in serve and mcp)."""
    secret = "sk-plugin-secret-0123456789"
    monkeypatch.setenv("MY_KEY", secret)
    settings = Settings(provider="scripted", db=str(tmp_path / "h.db"), api_key_env="MY_KEY")
    model = PluginModel(secret)
    with Store(tmp_path / "h.db") as store:
        ws = Workspace.around(settings, store, GuardedProvider(model))  # type: ignore[arg-type]
        with ws, open_conversation(ws, "plug") as engine:
            result = engine.run_turn("hello 你好")
        assert (result.status, result.reply) == ("ok", "piece-one piece-two 你好")
        assert result.record.rendered_prompt is None
        assert [r.closed for r in model.replies] == [1]  # type: ignore[attr-defined]
        assert stored(store, "plug") == (["hello 你好", "piece-one piece-two 你好"],
                                         [("ok", None)])
