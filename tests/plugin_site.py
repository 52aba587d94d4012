"""Plugins installed for a test: a module and its `.dist-info` (METADATA, entry_points.txt),
written as pip writes them, so importlib.metadata finds them like any installed plugin."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from pathlib import Path

Install = Callable[..., None]
"""What the `installed` fixture (tests/cli/conftest.py) gives: install(dist, module, code, ...)."""
README = Path(__file__).resolve().parent.parent / "README.md"
BUILT_IN = ["buffer", "window", "tokens", "summary", "summary-buffer", "entity", "retrieval"]
"""chatmem's own strategies, in the order they are registered (and listed)."""

STREAM = """
class _Stream:
    def __init__(self, deltas):
        self.deltas, self.usage, self.rendered_prompt = deltas, None, None

    def __iter__(self):
        return self.deltas

    def close(self):
        pass
"""
"""A plugin provider's reply stream over the deltas it is given (a generator that may break
off); a plugin's code adds it where its provider's stream() returns one."""

CLASH = """
from chatmem.memory.window import WindowStrategy
from chatmem.memory.buffer import BufferStrategy

class Mine(BufferStrategy):
    name = "mine"
    description = "a strategy of its own"

class Window(WindowStrategy):
    description = "another window"

def register(plugins):
    plugins.add_strategy(Mine)
    plugins.add_strategy(Window)
"""
"""A plugin registering a strategy of its own and one named as a built-in: refused whole."""

PINNED = """
from dataclasses import dataclass

from chatmem.memory.buffer import BufferStrategy
from chatmem.memory.params import param


@dataclass(frozen=True)
class PinnedParams:
    note: str = param("记住用户", "the pinned note")
{fields}


class Pinned(BufferStrategy):
    name = "pinned"
    description = "every turn, and a pinned note"
    OPTIONS = PinnedParams


def register(plugins):
    plugins.add_strategy(Pinned)
"""
"""A plugin strategy with a saved parameter; `{fields}` is where versions of it differ
(one adds a parameter, a later one drops or narrows it)."""

FORGETS = """
from chatmem.memory.buffer import BufferStrategy

class Forgets(BufferStrategy):
    name = "forgets"
    description = "keeps state it never manages to write"
    keeps_state = True

    def update(self, env):
        raise KeyError("记忆更新失败")

def register(plugins):
    plugins.add_strategy(Forgets)
"""
"""A plugin strategy keeping state whose every update fails: what a what-if rebuilds
rests on state never written, and it must say so."""


BUILD_FAILS = """
from chatmem.memory.buffer import BufferStrategy

class Boom(BufferStrategy):
    name = "boom"
    description = "fails whenever it builds a context"

    def build(self, request):
        raise RuntimeError("上下文炸了")

def register(plugins):
    plugins.add_strategy(Boom)
"""
"""A plugin strategy whose every context fails: a comparison's other strategies stand."""


LEDGER = '''
import re

from chatmem.memory.assembly import assemble
from chatmem.memory.base import BaseStrategy
from chatmem.memory.context import Message, Part
from chatmem.memory.reasons import TextReason

NUMBER = re.compile(r"[0-9]+")


class Ledger(BaseStrategy):
    name = "ledger"
    description = "账本: every number the user said, with its turn"
    keeps_state = True

    def update(self, env):
        state = env.state.get(self.name)
        covered, items = int(state.get("covered", 0)), list(state.get("items", []))
        total = env.history.turn_count()
        if total > covered:
            for turn in env.history.turns(covered + 1, total):
                items += [f"{turn.number}:{n}" for m in turn.messages if m.role == "user"
                          for n in NUMBER.findall(m.content)]
            env.state.set(self.name, covered=total, items=items)
        return []

    def build(self, request):
        items = request.state.get(self.name).get("items", [])
        text = "账本：" + "；".join(items)
        parts = [Part("summary", (Message.counted("system", text, request.counter),),
                      TextReason("账本"))] if items else []
        return assemble(request, parts, budget=self.budget(request))


def register(plugins):
    plugins.add_strategy(Ledger)
'''
"""A stateful plugin strategy whose state names no turn (`covered` is its own word):
what chatmem records the state covers is all a fork or a replaced turn can go by."""


HALTS = '''
import os

from chatmem.providers.base import Purpose
from chatmem.providers.scripted import ScriptedProvider


class Halts(ScriptedProvider):
    """The scripted model, whose Nth summary or fact call (CHATMEM_HALT_AT) is Ctrl-C."""

    name = "halts"
    strategy_calls = 0

    def complete(self, messages, *, purpose=Purpose.CHAT):
        if purpose != Purpose.CHAT:
            self.strategy_calls += 1
            if self.strategy_calls == int(os.environ.get("CHATMEM_HALT_AT", "0")):
                raise KeyboardInterrupt
        return super().complete(messages, purpose=purpose)


def register(plugins):
    plugins.add_provider("halts", lambda settings: Halts())
'''
"""The scripted model under the name `halts`, whose Nth summary or fact call (the
environment's CHATMEM_HALT_AT) is Ctrl-C: a rebuild interrupted halfway, deterministically."""


CAPPED = STREAM + '''
from chatmem.providers.scripted import ScriptedProvider


class Capped(ScriptedProvider):
    """Says the reply cap it was made with, as a plugin reads it: settings.max_reply_tokens."""

    name = "capped"

    def __init__(self, cap):
        super().__init__()
        self.cap = cap

    def stream(self, messages):
        return _Stream(iter([f"上限 {self.cap}"]))


def register(plugins):
    plugins.add_provider("capped", lambda settings: Capped(settings.max_reply_tokens))
'''
"""A plugin chat provider whose reply is the reply cap its settings gave it."""


def readme_section() -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"^## Writing a plugin\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, "README has no '## Writing a plugin' section"
    return match.group(1)


def readme_files() -> dict[str, str]:
    """The files the README's "Writing a plugin" shows, by name: each is a line
    "`NAME`:" followed by one fenced block."""
    return dict(re.findall(r"^`([\w.\-]+)`:\n\n```\w+\n(.*?)^```", readme_section(),
                           re.S | re.M))


FRAGILE = '''
from chatmem.memory.buffer import BufferStrategy


class Fragile(BufferStrategy):
    name = "fragile"
    description = "needs a library of its own"


def register(plugins):
    plugins.add_strategy(Fragile)
'''
"""A plugin that a session is saved with, then `unimportable` (chatmem-fragile)."""


def unimportable(site: Path, module: str, code: str) -> None:
    """Installed `module` (`code`) made to fail its import, a library it needs gone, as the
    next command finds it (load_registries' cache is the caller's to clear)."""
    (site / f"{module}.py").write_text("import chatmem_library_gone\n" + code,
                                       encoding="utf-8")
    sys.modules.pop(module, None)
    importlib.invalidate_caches()


def install(site: Path, dist: str, module: str, code: str, *, entry: str | None = None,
            name: str | None = None, version: str = "0.1.0") -> None:
    """Distribution `dist` with `module.py` holding `code`, and the entry point
    `name = entry` (default: the module) in the group chatmem.plugins."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(code, encoding="utf-8")
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        f"[chatmem.plugins]\n{name or module} = {entry or module}\n", encoding="utf-8")


NOTED = """
from chatmem.memory.assembly import assemble
from chatmem.memory.buffer import BufferStrategy
from chatmem.memory.context import Message, Part
from chatmem.memory.reasons import TextReason


class Noted(BufferStrategy):
    name = "noted"
    description = "the user's words noted so far, and every turn"
    keeps_state = True

    def update(self, env):
        said = [m.content for t in env.history.turns(1, env.history.turn_count())
                for m in t.messages if m.role == "user"]
        env.state.set(self.name, said=said)
        return []

    def build(self, request):
        said = request.state.get(self.name).get("said", [])
        context = super().build(request)
        if not said:
            return context
        note = Message.counted("system", "noted: " + "、".join(said), request.counter)
        history = [p for p in context.parts if p.kind == "history"]
        return assemble(request, [Part("facts", (note,), TextReason("noted")), *history],
                        budget=self.budget(request))


def register(plugins):
    plugins.add_strategy(Noted)
"""
"""A plugin strategy whose state notes every user message; a fork before its last turn has
none of it until the fork's first turn catches up."""


PONDERS = '''
import os
import time

from chatmem.memory.window import WindowStrategy


class Ponders(WindowStrategy):
    name = "ponders"
    description = "thinks PONDER seconds before each context / 慢慢想"

    def build(self, request):
        time.sleep(float(os.environ.get("PONDER", "0")))
        return super().build(request)


def register(plugins):
    plugins.add_strategy(Ponders)
'''
"""A window strategy whose build sleeps $PONDER seconds: a slow plugin build."""


SLOW_EMBEDDER = '''
import os
import time

import numpy as np


class Slow:
    dimensions = 8
    key = "slowemb:v1"

    def embed(self, texts, *, query=False):
        time.sleep(float(os.environ.get("EMBED_PAUSE", "0")))
        return np.ones((len(texts), 8), dtype=np.float32)


def register(plugins):
    plugins.add_embedder("slowemb", lambda settings: Slow())
'''
"""A plugin embedder pausing EMBED_PAUSE seconds a call (tests/engine/test_slow_embedder.py)."""
