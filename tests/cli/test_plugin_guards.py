"""What a plugin's failures carry and do: never a key (whatever the class of what it raises,
chatmem's own ProviderError included), never the end of a chat (SystemExit), blamed on the
plugin whose code failed (a token counter's bad count), and a context it builds over its
budget warned of as one assemble() builds.

Each test installs a real plugin (a module and its .dist-info on sys.path, as pip leaves
one); what each part of it does wrong is chosen by the environment variable LEAK.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import invoke
from plugin_site import STREAM, Install

from chatmem.store import Store

KEY = "sk-proj-LEAKYkey0123456789abcdefghij"

LEAKY = '''
import os
import sys

import numpy as np

from chatmem.errors import ProviderError
from chatmem.memory.assembly import input_part
from chatmem.memory.base import Context, Message, Part
from chatmem.memory.reasons import TextReason
from chatmem.memory.window import WindowStrategy
from chatmem.providers.scripted import ScriptedProvider
from chatmem.tokens import counter_for_model


def leak():
    return os.environ.get("LEAK", "")


def key():
    return os.environ.get("OPENAI_API_KEY", "")


class Leaky(ScriptedProvider):
    name = "leaky"

    def stream(self, messages):
        if leak() == "perr":
            raise ProviderError(f"server refused key {key()} 密钥被拒")
        if leak() == "midstream_perr":
            def cut():
                yield "partial 部分 "
                raise ProviderError(f"quota exceeded for key {key()} 配额用完")
            return _Stream(cut())
        if leak() == "midstream_exit" and "退出" in messages[-1]["content"]:
            def cut():
                yield "partial 部分 "
                sys.exit(2)
            return _Stream(cut())
        return super().stream(messages)

    def token_counter(self):
        return NegativeCounter() if leak() == "negcount" else counter_for_model("gpt-4o-mini")

''' + STREAM + '''

class NegativeCounter:
    key = "negative"
    approximate = False
    priming = 3
    additive = True

    def count_text(self, text):
        return -len(text)

    def count_message(self, role, content):
        return -len(content)

    def count_messages(self, messages):
        return -sum(len(m["content"]) for m in messages)


class Keyed(WindowStrategy):
    name = "keyed"
    description = "fails as LEAK says, quoting the key 引用密钥"

    def __init__(self, **params):
        if leak() == "init" and params:  # (registering builds it with its defaults)
            raise RuntimeError(f"cannot start with key {key()}")
        super().__init__(**params)

    def build(self, request):
        if leak() == "build":
            raise RuntimeError(f"build exploded with key {key()} 构建失败")
        if leak() == "build_perr":
            raise ProviderError(f"build asked a model with key {key()}")
        if leak() == "build_exit":
            raise SystemExit("usage: keyed [-h]")
        if leak() == "huge":
            huge = Message.counted("system", "word 词 " * 3000, request.counter)
            return Context((Part("summary", (huge,), TextReason("huge 巨大")),
                            input_part(request)))
        return super().build(request)

    def update(self, env):
        if leak() == "update":
            raise ValueError(f"update exploded with key {key()} 更新失败")
        return super().update(env)


class Embedder:
    key = "leakye:1"
    dimensions = 4

    def embed(self, texts, *, query=False):
        if leak() == "embed":
            raise ConnectionError(f"401 Incorrect API key provided: {key()}")
        if leak() == "embed_perr":
            raise ProviderError(f"embedding key {key()} refused 拒绝")
        return np.ones((len(texts), 4), dtype=np.float32) / 2


def register(plugins):
    if leak() == "register":
        raise RuntimeError(f"register failed for key {key()}")
    plugins.add_provider("leaky", lambda settings: Leaky())
    plugins.add_strategy(Keyed)
    plugins.add_embedder("leakye", lambda settings: Embedder())
'''

PLUGIN = "(plugin leaky (chatmem-leaky 0.1.0))"


@pytest.fixture
def leaky(installed: Install, monkeypatch: pytest.MonkeyPatch) -> None:
    installed("chatmem-leaky", "chatmem_leaky", LEAKY, name="leaky")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def _no_key_in(tmp_path: Path) -> None:
    for path in tmp_path.glob("h.db*"):
        assert KEY.encode() not in path.read_bytes(), path.name


def test_a_provider_error_a_plugin_raises_never_shows_or_stores_the_key(
        leaky: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """README tells a plugin to raise ProviderError; one that quoted the key put it on the
    screen, into turns.error and inspect, where a ConnectionError's text was masked."""
    db = str(tmp_path / "h.db")
    monkeypatch.setenv("LEAK", "midstream_perr")
    chatted = invoke("chat", "s", "--provider", "leaky", "--db", db, input="hello 你好\n")
    assert chatted.exit_code == 1 and KEY not in chatted.output
    assert "error: quota exceeded for key [api key] 配额用完" in chatted.stderr
    shown = invoke("inspect", "s", "--request", "1", "--json", "--db", db, code=0)
    assert KEY not in shown.output
    turn = json.loads(shown.stdout)["turn"]
    assert turn["status"] == "failed"
    assert turn["error"] == "quota exceeded for key [api key] 配额用完"
    plain = invoke("inspect", "s", "--request", "1", "--db", db, code=0)
    assert KEY not in plain.output and "[api key]" in plain.output
    monkeypatch.setenv("LEAK", "perr")
    asked = invoke("ask", "s", "again 再来", "--provider", "leaky", "--db", db, code=1)
    assert asked.stderr.splitlines() == ["error: server refused key [api key] 密钥被拒"]
    _no_key_in(tmp_path)


@pytest.mark.parametrize(("leak", "said"), [
    ("build", "error: strategy 'keyed' failed in its build: RuntimeError: build exploded with key "
              f"[api key] 构建失败 {PLUGIN}"),
    ("build_perr", "error: build asked a model with key [api key]"),
    ("init", "error: strategy 'keyed' could not start with k=2: RuntimeError: cannot start "
             f"with key [api key] {PLUGIN}"),
])
def test_what_a_plugin_strategy_raises_is_masked(
        leaky: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leak: str,
        said: str) -> None:
    monkeypatch.setenv("LEAK", leak)
    asked = invoke("ask", "hi 你好", "-s", "keyed:k=2", "--provider", "scripted",
                   "--db", str(tmp_path / "h.db"))
    assert asked.exit_code != 0 and KEY not in asked.output
    assert asked.stderr.splitlines()[-1] == said


def test_a_plugin_strategys_failed_update_and_embedder_are_masked(
        leaky: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "h.db")
    monkeypatch.setenv("LEAK", "update")
    chatted = invoke("chat", "u", "-s", "keyed", "--provider", "scripted", "--db", db,
                     input="one 一\ntwo 二\n", code=0)
    assert KEY not in chatted.output
    assert "update exploded with key [api key] 更新失败" in chatted.stderr
    config = tmp_path / "config.toml"
    config.write_text('[embeddings]\nprovider = "leakye"\n', encoding="utf-8")
    failures = (("embed", "ConnectionError: 401 Incorrect API key provided: [api key]"),
                ("embed_perr", "embedding key [api key] refused 拒绝"))
    for leak, _ in failures:
        # Whether the chat's own indexing said why it failed depends on its thread's timing.
        monkeypatch.setenv("LEAK", leak)
        chatted = invoke("chat", f"e-{leak}", "-s", "retrieval", "--provider", "scripted",
                         "--db", db, "--config", str(config), input="note 笔记 x\nwhat 什么?\n")
        assert KEY not in chatted.output, leak
    for leak, cause in failures:
        monkeypatch.setenv("LEAK", leak)
        indexed = invoke("index", f"e-{leak}", "--db", db, "--config", str(config))
        assert KEY not in indexed.output and cause in indexed.stderr, leak
    _no_key_in(tmp_path)


def test_a_plugin_whose_register_quotes_the_key_is_warned_of_masked(
        leaky: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAK", "register")
    listed = invoke("strategies", code=0)
    assert KEY not in listed.output
    assert listed.stderr.splitlines()[-1].endswith(
        "its register(plugins) raised: RuntimeError: register failed for key [api key]")


def test_a_plugin_that_exits_fails_its_turn_and_the_chat_goes_on(
        leaky: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """argparse or click inside a plugin (SystemExit) ended the REPL silently, exit 3, the
    lines typed after it lost."""
    db = str(tmp_path / "h.db")
    monkeypatch.setenv("LEAK", "build_exit")
    chatted = invoke("chat", "x", "-s", "keyed", "--provider", "scripted", "--db", db,
                     input="one 一\n/strategy window\ntwo 二\n")
    assert [line for line in chatted.stderr.splitlines() if line.startswith("error:")] == [
        f"error: strategy 'keyed' failed in its build: SystemExit: usage: keyed [-h] {PLUGIN}"]
    assert chatted.stdout.splitlines()[-1] == "echo #1: two 二"
    monkeypatch.setenv("LEAK", "midstream_exit")
    chatted = invoke("chat", "y", "--provider", "leaky", "--db", db,
                     input="one 退出\ntwo 二\n")
    assert [line for line in chatted.stderr.splitlines() if line.startswith("error:")] == [
        f"error: provider 'leaky' failed: SystemExit: 2 {PLUGIN}"]
    assert chatted.stdout.splitlines()[-1].endswith("two 二")
    with Store(db) as store:
        said = [m.content for m in store.history.messages(store.sessions.session("y").id)]
    assert said[0] == "two 二"


def test_a_plugin_token_counters_negative_count_is_blamed_on_its_provider(
        leaky: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """It was blamed on the built-in strategy whose context held the count: "strategy
    'window' failed: its build returned a 'system' part holding a message of -28 tokens"."""
    monkeypatch.setenv("LEAK", "negcount")
    asked = invoke("ask", "hi 你好", "--provider", "leaky", code=1)
    assert asked.stderr.splitlines() == [
        "error: provider 'leaky' failed: its token counter's count_message returned -5, not a "
        f"count of 0 or more {PLUGIN}"]


def test_a_plugin_context_over_budget_without_assemble_is_warned_of(
        leaky: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAK", "huge")
    db = str(tmp_path / "h.db")
    asked = invoke("ask", "h", "hi 你好", "-s", "keyed", "--provider", "scripted",
                   "--db", db, code=0)
    assert "over" in asked.stderr and "4,000" in asked.stderr
    shown = json.loads(invoke("inspect", "h", "--json", "--db", db, code=0).stdout)
    assert len(shown["context"]["warnings"]) == 1 and "4,000" in shown["context"]["warnings"][0]


def test_a_key_no_provider_of_the_turn_uses_does_not_stop_it(tmp_path: Path) -> None:
    """The guards' masks read the settings' credentials only when there is an error to mask:
    worked out for every build, an OPENAI_API_KEY holding a character no key has stopped
    every turn, of the scripted model too."""
    db = str(tmp_path / "h.db")
    env = {"OPENAI_API_KEY": "sk-abcdefghijklmnop\u2019q"}
    asked = invoke("ask", "你好 hello", "--provider", "scripted", "--db", db, env=env, code=0)
    assert asked.stdout.strip() == "echo #1: 你好 hello"
    chatted = invoke("chat", "c", "-s", "retrieval", "--provider", "scripted", "--db", db,
                     env=env, input="第一 one\n第二 two\n", code=0)
    assert chatted.stdout.splitlines()[-1] == "echo #2: 第二 two"
