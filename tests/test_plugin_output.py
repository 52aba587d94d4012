"""What a plugin's code prints while chatmem runs it goes to stderr: stdout holds a command's
--json, ask's reply and MCP's protocol stream, and chatmem's own output stays there."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import TextIO

import pytest
from cli_runner import invoke
from plugin_site import Install
from waiting import HANG

import chatmem
from chatmem.plugin_output import plugin_prints_to_stderr

NOISY = '''
from chatmem.providers.scripted import ScriptedProvider


class NoisyStream:
    def __init__(self, inner):
        self.inner = inner
        self.usage = inner.usage
        self.rendered_prompt = None

    def __iter__(self):
        for piece in self.inner:
            print("noisy: 一段回复")
            yield piece

    def close(self):
        print("noisy: 关闭")


class Noisy(ScriptedProvider):
    def stream(self, messages):
        print("noisy: 开始回复")
        return NoisyStream(super().stream(messages))

    def complete(self, messages, **options):
        print("noisy: 写摘要")
        return super().complete(messages, **options)

    def token_counter(self):
        print("noisy: 计数")
        return super().token_counter()


def register(plugins):
    plugins.add_provider("noisy", lambda settings: Noisy())
'''


def test_a_plugin_provider_printing_while_it_replies_leaves_json_replies_and_mcp_clean(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-noisy", "chatmem_noisy", NOISY, name="noisy")
    db = str(tmp_path / "h.db")
    asked = invoke("ask", "你好", "--provider", "noisy", "--json", "--db", db, code=0)
    assert json.loads(asked.stdout)["reply"] == "echo #1: 你好"
    assert "noisy: 开始回复" in asked.stderr and "noisy: 一段回复" in asked.stderr
    plain = invoke("ask", "再说一次", "--provider", "noisy", "--db", db, code=0)
    assert plain.stdout == "echo #1: 再说一次\n"  # chatmem's own reply: still on stdout
    assert "noisy: 一段回复" in plain.stderr

    errors = tmp_path / "mcp-stderr.txt"
    with errors.open("w", encoding="utf-8") as errlog:
        recorded = _record_over_mcp(tmp_path / "site", tmp_path / "m.db", errlog)
    # A summary asks the provider for one: its prints went to stderr, not into the protocol.
    assert recorded["turn"] == 1 and recorded["notices"][0].startswith("summary v1")
    assert "noisy: 写摘要" in errors.read_text(encoding="utf-8")


COUNTING = '''
from chatmem.providers.scripted import ScriptedProvider


class Counting:
    """Counts as the scripted model's tokenizer does, with a debug line each time."""

    def __init__(self, inner):
        self.inner = inner
        self.key, self.approximate = inner.key, inner.approximate
        self.priming, self.additive = inner.priming, inner.additive

    def count_text(self, text):
        print("counting: 数文字")
        return self.inner.count_text(text)

    def count_message(self, role, content):
        print("counting: 数一条")
        return self.inner.count_message(role, content)

    def count_messages(self, messages):
        print("counting: 数全部")
        return self.inner.count_messages(messages)


class CountingModel(ScriptedProvider):
    def token_counter(self):
        return Counting(super().token_counter())


def register(plugins):
    plugins.add_provider("counting", lambda settings: CountingModel())
'''


def test_a_plugin_token_counter_printing_while_it_counts_leaves_json_and_replies_clean(
        installed: Install, tmp_path: Path) -> None:
    """Counting runs outside the provider's other calls too (the input and the reply after
    the turn, the context's total): its prints went into ask's stdout."""
    installed("chatmem-counting", "chatmem_counting", COUNTING, name="counting")
    db = str(tmp_path / "h.db")
    asked = invoke("ask", "日记", "你好", "--provider", "counting", "--json", "--db", db, code=0)
    assert json.loads(asked.stdout)["reply"] == "echo #1: 你好"
    assert "counting: 数一条" in asked.stderr
    plain = invoke("ask", "日记", "再说一次", "--provider", "counting", "--db", db, code=0)
    assert plain.stdout == "echo #1: 再说一次\n"  # chatmem's own reply: still on stdout
    assert "counting: 数一条" in plain.stderr
    shown = invoke("inspect", "日记", "--next", "还有呢", "--provider", "counting", "--json",
                   "--db", db, code=0)
    assert json.loads(shown.stdout)["context"]["tokens"] > 0


CHATTY = '''
from chatmem.memory.buffer import BufferStrategy


class Chatty(BufferStrategy):
    name = "chatty"
    description = "every turn, with a debug line"

    def build(self, request):
        print("chatty: 组装上下文")
        return super().build(request)

    def update(self, env):
        print("chatty: 更新记忆")
        return super().update(env)


def register(plugins):
    plugins.add_strategy(Chatty)
'''


def test_a_plugin_strategy_printing_while_it_builds_leaves_json_and_replies_clean(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-chatty", "chatmem_chatty", CHATTY, name="chatty")
    db = str(tmp_path / "h.db")
    asked = invoke("ask", "日记", "你好", "-s", "chatty", "--provider", "scripted", "--json",
                   "--db", db, code=0)
    assert json.loads(asked.stdout)["reply"] == "echo #1: 你好"
    assert "chatty: 组装上下文" in asked.stderr and "chatty: 更新记忆" in asked.stderr
    plain = invoke("ask", "日记", "再说一次", "--provider", "scripted", "--db", db, code=0)
    assert plain.stdout == "echo #1: 再说一次\n"  # chatmem's own reply: still on stdout
    assert "chatty: 更新记忆" in plain.stderr  # the catch-up on opening, and after the turn


def _record_over_mcp(site: Path, db: Path, errlog: TextIO) -> dict[str, object]:
    pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}
    params = StdioServerParameters(command=sys.executable, env=env, args=[
        "-m", "chatmem", "mcp", "--db", str(db), "--provider", "noisy"])

    async def work() -> dict[str, object]:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("start_conversation", {"name": "日记",
                                                           "strategy": "summary"})
            result = await session.call_tool("record_turn", {
                "conversation_id": "日记", "user": "今天去了杭州 " * 60,
                "assistant": "记下了 " * 60})
            assert not result.is_error and result.structured_content is not None
            return result.structured_content

    return asyncio.run(asyncio.wait_for(work(), HANG))


def test_only_the_thread_running_plugin_code_prints_to_stderr(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A reply's live display draws from its own thread while the plugin makes the next
    piece; a server answers other requests meanwhile: their output stays on stdout."""
    stdout = sys.stdout
    inside, drawn = threading.Event(), threading.Event()

    def live_display() -> None:
        inside.wait(HANG)
        print("回复的一帧")
        drawn.set()

    other = threading.Thread(target=live_display)
    other.start()
    with plugin_prints_to_stderr():
        print("插件的调试行")
        inside.set()
        drawn.wait(HANG)
    other.join(HANG)
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("回复的一帧\n", "插件的调试行\n")
    assert sys.stdout is stdout


LOUD_IMPORT = '''
import sys

from chatmem.memory.buffer import BufferStrategy

print("正在加载 loading,", end=" ")
print("two lines\\nof it")
sys.stdout.write("half a line")


class Loud(BufferStrategy):
    name = "loud"
    description = "prints as it is imported and registered"


def register(plugins):
    print("registering")
    plugins.add_strategy(Loud)
'''


def test_what_a_plugin_prints_while_it_loads_names_the_plugin(
        installed: Install, tmp_path: Path) -> None:
    """A plugin author's report: a line a plugin printed as it was imported came on stderr on
    every command with nothing saying which of the installed plugins printed it."""
    installed("chatmem-loud", "chatmem_loud", LOUD_IMPORT, name="loud")
    listed = invoke("strategies", "--json", code=0)
    assert "loud" in [s["name"] for s in json.loads(listed.stdout)]  # stdout stays clean
    by = "plugin loud (chatmem-loud 0.1.0): "
    assert listed.stderr.splitlines() == [
        f"{by}正在加载 loading, two lines", f"{by}of it", f"{by}half a lineregistering"]
    assert listed.stderr.endswith("registering\n")
    assert (invoke("ask", "你好", "-s", "loud", "--provider", "scripted", "--db",
                   str(tmp_path / "h.db"), code=0).stdout == "echo #1: 你好\n")


STDERR_IMPORT = '''
import logging
import sys

from chatmem.memory.buffer import BufferStrategy

print("导入时的警告 on stderr", file=sys.stderr)
sys.stderr.write("half ")
print("of a line")
logging.getLogger("chatmem_grumpy").warning("a logged warning 日志")


class Grumpy(BufferStrategy):
    name = "grumpy"
    description = "writes to stderr and logs as it is imported and registered"


def register(plugins):
    print("registering on stderr", file=sys.stderr)
    plugins.add_strategy(Grumpy)
'''


def test_what_a_plugin_writes_to_stderr_or_logs_while_it_loads_names_the_plugin(
        installed: Install, tmp_path: Path) -> None:
    """A plugin's stderr lines and `logging` warnings as it was imported came on every command
    with nothing saying which of the installed plugins wrote them (its print() lines did)."""
    installed("chatmem-grumpy", "chatmem_grumpy", STDERR_IMPORT, name="grumpy")
    # A process of its own: logging set up by nobody, as in a user's shell (pytest's log
    # capture would take the warning here).
    listed = subprocess.run(
        [sys.executable, "-m", "chatmem", "strategies", "--json"], capture_output=True,
        text=True, encoding="utf-8", timeout=HANG, check=True, env={
            **os.environ, "PYTHONPATH": os.pathsep.join(
                [str(tmp_path / "site"), str(Path(chatmem.__file__).parent.parent)])})
    assert "grumpy" in [s["name"] for s in json.loads(listed.stdout)]
    by = "plugin grumpy (chatmem-grumpy 0.1.0): "
    assert listed.stderr.splitlines() == [
        f"{by}导入时的警告 on stderr", f"{by}half of a line", f"{by}a logged warning 日志",
        f"{by}registering on stderr"]


PRINTY = '''
import sys

from chatmem.memory.buffer import BufferStrategy


class Printy(BufferStrategy):
    name = "printy"
    description = "every turn, printing as it builds and updates"

    def build(self, request):
        print("PRINTY BUILD")
        request.counter.count_text("数一数")  # the provider's code, called inside the build
        print("组装上下文")
        return super().build(request)

    def update(self, env):
        print("PRINTY UPDATE 更新记忆", file=sys.stderr)
        return super().update(env)


def register(plugins):
    plugins.add_strategy(Printy)
'''


def test_what_a_plugin_strategy_prints_as_it_builds_and_updates_names_the_plugin(
        installed: Install, tmp_path: Path) -> None:
    """`PRINTY BUILD` came bare on stderr, in the middle of the REPL, where what the plugin
    printed as it loaded named it: alone and in a combination; beside a plugin provider,
    whose own lines (its token counter's, called inside the build) are not the strategy's."""
    installed("chatmem-printy", "chatmem_printy", PRINTY, name="printy")
    installed("chatmem-counting", "chatmem_counting", COUNTING, name="counting")
    db = str(tmp_path / "h.db")
    by = "plugin printy (chatmem-printy 0.1.0): "
    for strategy in ("printy", "window+printy"):
        asked = invoke("ask", strategy, "你好", "-s", strategy, "--provider", "scripted",
                       "--db", db, code=0)
        assert asked.stdout == "echo #1: 你好\n"
        assert asked.stderr.splitlines()[:3] == [
            f"{by}PRINTY BUILD", f"{by}组装上下文", f"{by}PRINTY UPDATE 更新记忆"], asked.stderr
    counted = invoke("ask", "计数", "你好", "-s", "printy", "--provider", "counting",
                     "--db", db, code=0)
    assert counted.stdout == "echo #1: 你好\n"
    lines = counted.stderr.splitlines()
    built = lines.index(f"{by}PRINTY BUILD")
    # The counter's line, called inside the build, unlabelled: the provider's, not printy's.
    assert lines[built:built + 3] == [f"{by}PRINTY BUILD", "counting: 数文字",
                                      f"{by}组装上下文"], lines
    assert f"{by}PRINTY UPDATE 更新记忆" in lines
    assert not any(line.startswith(by) and "counting" in line for line in lines), lines
