"""A plugin that fails while it runs: one line naming it and its plugin, never a traceback;
the chat goes on, a failed reply is recorded as failed, and nothing stored is lost.

A plugin's strategy, provider or embedder may raise whatever its code or its client library
raises (KeyError, ConnectionError, RuntimeError); chatmem's own raise its errors. Each test
installs a real plugin (a module and its .dist-info on sys.path, as pip leaves one).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_runner import invoke
from plugin_site import FRAGILE, STREAM, Install, unimportable

from chatmem.plugins import load_registries
from chatmem.store import Store

CRASHER = '''
from chatmem.memory.window import WindowStrategy

class Crasher(WindowStrategy):
    name = "crasher"
    description = "breaks once two turns are stored"

    def build(self, request):
        if request.history.turn_count() >= 2:
            raise KeyError("boom 爆炸")
        return super().build(request)

class Forgetful(WindowStrategy):
    name = "forgetful"
    description = "cannot update its memory"

    def update(self, env):
        raise RuntimeError("state store unreachable\\nsecond line")

def register(plugins):
    plugins.add_strategy(Crasher)
    plugins.add_strategy(Forgetful)
'''

FLAKY = '''
from chatmem.providers.scripted import ScriptedProvider

class Flaky(ScriptedProvider):
    name = "flaky"

    def __init__(self):
        super().__init__()
        self.streams = 0

    def stream(self, messages):
        self.streams += 1
        if self.streams == 2:
            def broken():
                yield "partial 部分"
                raise ConnectionError("connection reset by peer 连接被重置")
            return _Stream(broken())
        return super().stream(messages)
''' + STREAM + '''
def refuse(settings):
    raise ValueError("flaky2 needs FLAKY_TOKEN set")

def no_models(settings):
    raise ConnectionError("cannot list models: 服务不可用")

class Down:
    key = "down:1"
    dimensions = 4

    def embed(self, texts, *, query=False):
        raise RuntimeError("embedding service down")

class AsksDown:
    """Embeds what is stored; asking (a query) finds the service down."""
    key = "asksdown:1"
    dimensions = 4

    def embed(self, texts, *, query=False):
        if query:
            raise RuntimeError("query endpoint down 查询服务不可用")
        import numpy as np
        return np.ones((len(texts), 4), dtype=np.float32) / 2

def register(plugins):
    plugins.add_provider("flaky", lambda settings: Flaky(), models=no_models)
    plugins.add_provider("flaky2", refuse)
    plugins.add_embedder("down", lambda settings: Down())
    plugins.add_embedder("asksdown", lambda settings: AsksDown())
'''


def test_a_strategy_that_raises_fails_its_turn_in_one_line_and_the_chat_goes_on(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-crasher", "chatmem_crasher", CRASHER, name="crasher")
    db = str(tmp_path / "h.db")
    chatted = invoke("chat", "c", "-s", "crasher", "--provider", "scripted", "--db", db,
                     input="one 一\ntwo 二\nthree 三\n/strategy window\nfour 四\n")
    assert "Traceback" not in chatted.output
    errors = [line for line in chatted.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: strategy 'crasher' failed in its build: KeyError: 'boom 爆炸' "
                      "(plugin crasher (chatmem-crasher 0.1.0))"]
    assert chatted.stdout.splitlines()[-1] == "echo #3: four 四"  # the chat went on
    with Store(db) as store:
        said = [m.content for m in store.history.messages(store.sessions.session("c").id)]
    assert said == ["one 一", "echo #1: one 一", "two 二", "echo #2: two 二",
                    "four 四", "echo #3: four 四"]
    asked = invoke("ask", "hi", "-s", "crasher", "--provider", "scripted", "--db", db)
    assert asked.exit_code == 0  # no history in a one-off question: it builds
    for command in (("inspect", "c", "--next", "x", "-s", "crasher"),
                    ("replay", "c", "-s", "crasher")):
        result = invoke(*command, "--provider", "scripted", "--db", db)
        assert result.exit_code != 0 and "Traceback" not in result.output, command
        assert result.stderr.splitlines() == [
            "error: strategy 'crasher' failed in its build: KeyError: 'boom 爆炸' "
            "(plugin crasher (chatmem-crasher 0.1.0))"], command


def test_a_strategy_whose_update_raises_keeps_every_turn_and_says_so(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-crasher", "chatmem_crasher", CRASHER, name="crasher")
    db = str(tmp_path / "h.db")
    for _ in range(2):  # a later chat catches up, fails the same way, and goes on
        chatted = invoke("chat", "f", "-s", "forgetful", "--provider", "scripted", "--db", db,
                         input="one\ntwo 二\n", code=0)
        assert "Traceback" not in chatted.output
        assert "state store unreachable second line" in chatted.stderr
    with Store(db) as store:
        assert store.history.turn_count(store.sessions.session("f").id) == 4


def test_a_provider_that_raises_records_a_failed_turn_and_the_chat_goes_on(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-flaky", "chatmem_flaky", FLAKY, name="flaky")
    db = str(tmp_path / "h.db")
    chatted = invoke("chat", "p", "--provider", "flaky", "--db", db,
                     input="one\ntwo 二\nthree\n")
    assert chatted.exit_code == 1 and "Traceback" not in chatted.output
    assert [line for line in chatted.stderr.splitlines() if line.startswith("error:")] == [
        "error: provider 'flaky' failed: ConnectionError: connection reset by peer 连接被重置"
        " (plugin flaky (chatmem-flaky 0.1.0))"]
    assert "three" in chatted.stdout.splitlines()[-1]
    # The failed attempt is the second request; the conversation's turn 2 is "three".
    shown = json.loads(invoke("inspect", "p", "--request", "2", "--json", "--db", db,
                              code=0).stdout)
    assert shown["turn"]["status"] == "failed" and "连接被重置" in shown["turn"]["error"]
    kept = json.loads(invoke("inspect", "p", "--turn", "2", "--json", "--db", db,
                             code=0).stdout)["turn"]
    assert (kept["status"], kept["input"], kept["number"], kept["request"]) == (
        "ok", "three", 2, 3)
    started = invoke("ask", "hi", "--provider", "flaky2", "--db", db, code=1)
    assert started.stderr == ("error: provider 'flaky2' could not start: ValueError: flaky2 "
                              "needs FLAKY_TOKEN set (plugin flaky (chatmem-flaky 0.1.0))\n")
    listed = invoke("models", "--provider", "flaky", code=1)
    assert listed.stderr == ("error: provider 'flaky' could not list its models: "
                             "ConnectionError: cannot list models: 服务不可用 "
                             "(plugin flaky (chatmem-flaky 0.1.0))\n")


def test_an_embedder_that_raises_is_one_line_from_chatmem_index(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-flaky", "chatmem_flaky", FLAKY, name="flaky")
    db = str(tmp_path / "h.db")
    config = tmp_path / "config.toml"
    config.write_text('[embeddings]\nprovider = "down"\n', encoding="utf-8")
    chatted = invoke("chat", "d", "-s", "retrieval", "--provider", "scripted", "--db", db,
                     "--config", str(config), input="alpha beta\ngamma 中文\n", code=0)
    assert "Traceback" not in chatted.output
    # The chat's own indexing names the plugin as `chatmem index` does, where it says the
    # error (the background indexer may end with the chat before it meets it, and then says
    # only that messages wait for vectors).
    lines = chatted.stderr.splitlines()
    assert any("indexing stopped" in line for line in lines)
    assert all("embedding service down (plugin flaky (chatmem-flaky 0.1.0))" in line
               for line in lines if "embedding service down" in line)
    indexed = invoke("index", "d", "--db", db, "--config", str(config))
    assert indexed.exit_code == 1 and "Traceback" not in indexed.output
    assert indexed.stderr.splitlines()[-1] == (
        "error: embedder 'down' failed: RuntimeError: embedding service down "
        "(plugin flaky (chatmem-flaky 0.1.0))")


def test_an_eval_whose_embedder_fails_says_its_figures_are_of_words_alone(
        installed: Install, tmp_path: Path) -> None:
    """Every probe was ranked by words alone and the eval said nothing: its recall read as
    that of words and meaning."""
    installed("chatmem-flaky", "chatmem_flaky", FLAKY, name="flaky")
    config = tmp_path / "config.toml"
    config.write_text('[embeddings]\nprovider = "asksdown"\n', encoding="utf-8")
    transcript = tmp_path / "会话.jsonl"
    transcript.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in [
        {"role": "user", "content": "我的猫叫小黑"}, {"role": "assistant", "content": "好的"},
        {"role": "user", "content": "weather today"}, {"role": "assistant", "content": "sunny"},
        {"probe": "猫叫什么?", "expect_text": ["小黑"]}]) + "\n", encoding="utf-8")
    for probes_only, failed in (([], "2 contexts of 3"), (["--probes-only"], "1 context of 1")):
        evaluated = invoke("eval", str(transcript), "-s", "retrieval:recent=0", "--provider",
                           "scripted", "--config", str(config), "--json", *probes_only,
                           code=0)
        notices = json.loads(evaluated.stdout)["strategies"][0]["notices"]
        said = [n for n in notices if "ranked by words alone" in n]
        assert said == [f"{failed} ranked by words alone: embedding the input failed "
                        "(embedder 'asksdown' failed: RuntimeError: query endpoint down "
                        "查询服务不可用 (plugin flaky (chatmem-flaky 0.1.0)))"], notices


def test_a_plugin_embedder_failing_on_the_input_is_named_with_its_plugin(
        installed: Install, tmp_path: Path) -> None:
    """A chat's warning and inspect's recall line named the embedder but not the plugin that
    registered it, as every other failure of a plugin's code is named."""
    installed("chatmem-flaky", "chatmem_flaky", FLAKY, name="flaky")
    config, db = tmp_path / "config.toml", tmp_path / "h.db"
    config.write_text('[embeddings]\nprovider = "asksdown"\n', encoding="utf-8")
    common = ["--provider", "scripted", "--config", str(config), "--db", str(db)]
    invoke("chat", "猫", "-s", "retrieval:recent=0", *common, input="我的猫叫小黑\n", code=0)
    invoke("index", "猫", *common[2:], code=0)  # a stored vector: the input's is asked for
    chatted = invoke("chat", "猫", *common, input="猫叫什么?\n", code=0)
    by = "查询服务不可用 (plugin flaky (chatmem-flaky 0.1.0))"
    assert by in chatted.stderr, chatted.stderr
    inspected = invoke("inspect", "猫", "--next", "小黑?", *common, code=0)
    assert by in " ".join(inspected.stdout.split()), inspected.stdout


KEYED = '''
import os
from chatmem.providers.scripted import ScriptedProvider

class Keyed(ScriptedProvider):
    """Quotes the key back, as a server echoing the Authorization header would."""
    name = "keyed"

    def __init__(self, settings):
        super().__init__()
        self.key = settings.api_key() or ""

    def stream(self, messages):
        if os.environ.get("KEYED_FAILS"):
            raise ConnectionError("401 from https://api.example/v1, Authorization: Bearer "
                                  + self.key)
        return super().stream([{"role": "user", "content": "回显 Bearer " + self.key}])

    def complete(self, messages, *, purpose=None):
        return "摘要 " + self.key

def models(settings):
    return ["keyed-" + (settings.api_key() or "")]

def register(plugins):
    plugins.add_provider("keyed", Keyed, models=models)
'''


def test_a_plugin_provider_never_shows_or_stores_the_api_key(
        installed: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only chatmem's own openai provider was masked: a plugin's reply, error text and model
    list put the key on the screen and into the history file."""
    installed("chatmem-keyed", "chatmem_keyed", KEYED, name="keyed")
    key = "sk-proj-SECRETabcdefghijklmnop0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    db = str(tmp_path / "h.db")
    replied = invoke("ask", "k", "你好", "--provider", "keyed", "--db", db, code=0)
    assert "回显 Bearer [api key]" in replied.stdout and key not in replied.output
    monkeypatch.setenv("KEYED_FAILS", "1")
    failed = invoke("ask", "k", "再见", "--provider", "keyed", "--db", db, code=1)
    assert failed.stderr.startswith("error: provider 'keyed' failed: ConnectionError: 401 from "
                                    "https://api.example/v1, Authorization: Bearer [api key]")
    listed = invoke("models", "--provider", "keyed", "--json", code=0)
    assert key not in listed.output and "[api key]" in listed.stdout
    shown = invoke("sessions", "show", "k", "--db", db, code=0).output
    assert "[api key]" in shown and key not in shown
    for path in tmp_path.glob("h.db*"):
        assert key.encode() not in path.read_bytes(), path.name


CHATTY = '''
print("loading chatmem-chatty 插件")
from chatmem.providers.scripted import ScriptedProvider

def models(settings):
    import os
    print("chatty: listing models 列出模型")
    return {"dicts": [{"id": "gpt-x"}, {"id": "模型"}], "mixed": ["模型-a", 3, None],
            "text": "abc"}[os.environ.get("MODS", "dicts")]

def register(plugins):
    print("registering chatty 注册")
    plugins.add_provider("mods", lambda settings: ScriptedProvider(), models=models)
    plugins.add_provider("talky", talky, models=lambda settings: [print("listing") or "t-1"][-1:])

def talky(settings):
    print("chatty: connecting to 127.0.0.1 连接")
    return ScriptedProvider()
'''


def test_an_eval_whose_embedder_is_down_says_so_once_not_per_turn(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-flaky", "chatmem_flaky", FLAKY, name="flaky")
    config = tmp_path / "config.toml"
    config.write_text('[embeddings]\nprovider = "down"\n', encoding="utf-8")
    transcript = tmp_path / "会话.jsonl"
    transcript.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in [
        *[{"role": role, "content": f"第{i}句 {role}"} for i in range(1, 5)
          for role in ("user", "assistant")],
        {"probe": "第一句?", "expect_text": ["第1句"]}]) + "\n", encoding="utf-8")
    evaluated = invoke("eval", str(transcript), "-s", "retrieval", "--provider", "scripted",
                       "--config", str(config), "--json", code=0)
    notices = json.loads(evaluated.stdout)["strategies"][0]["notices"]
    # It names the plugin, as the chat's own indexing and `chatmem index` do.
    assert [n for n in notices if n.startswith("indexing failed")] == [
        "indexing failed during the replay: embedder 'down' failed: RuntimeError: "
        "embedding service down (plugin flaky (chatmem-flaky 0.1.0)); recall ranked the"
        " messages without a vector by words"]


def test_what_a_plugin_prints_while_it_loads_goes_to_stderr_not_into_json(
        installed: Install) -> None:
    """One print() in a plugin broke every --json output, ask's reply-only stdout and MCP's
    protocol stream."""
    installed("chatmem-chatty", "chatmem_chatty", CHATTY, name="chatty")
    listed = invoke("strategies", "--json", code=0)
    assert json.loads(listed.stdout)
    assert "loading chatmem-chatty 插件" in listed.stderr
    assert "registering chatty 注册" in listed.stderr
    # Its provider's creation and model list too (they run later, in the command).
    models = invoke("models", "--provider", "talky", "--json", code=0)
    assert json.loads(models.stdout)["models"] == ["t-1"] and "listing" in models.stderr
    asked = invoke("ask", "你好", "--provider", "talky", code=0)
    assert asked.stdout == "echo #1: 你好\n"
    assert "connecting to 127.0.0.1 连接" in asked.stderr


@pytest.mark.parametrize(("kind", "returned"), [("dicts", "a list holding dict"),
                                                 ("mixed", "a list holding None, int"),
                                                 ("text", "str")])
def test_model_names_that_are_not_text_are_one_line_naming_the_provider(
        installed: Install, monkeypatch: pytest.MonkeyPatch, kind: str, returned: str) -> None:
    """A traceback in `chatmem models`, ints and nulls in its --json, a 500 from /v1/models;
    a plain string was listed as one model per character."""
    installed("chatmem-chatty", "chatmem_chatty", CHATTY, name="chatty")
    monkeypatch.setenv("MODS", kind)
    for json_out in ([], ["--json"]):
        listed = invoke("models", "--provider", "mods", *json_out, code=1)
        assert listed.stdout == ""
        assert listed.stderr.splitlines()[-1] == (
            f"error: provider 'mods' could not list its models: its models returned {returned},"
            " not a list of model names (text) (plugin chatty (chatmem-chatty 0.1.0))")


def test_a_plugin_that_exits_or_names_no_module_is_one_warning(installed: Install) -> None:
    installed("chatmem-exit", "chatmem_exit",
              "import sys\n\ndef register(plugins):\n    sys.exit('plugin wants to quit')\n",
              name="exit")
    installed("chatmem-badvalue", "chatmem_badvalue", "def register(plugins):\n    pass\n",
              name="badvalue", entry="chatmem_badvalue:reg ister")
    listed = invoke("strategies", code=0)
    assert listed.stderr.splitlines() == [
        "warning: plugin badvalue (chatmem-badvalue 0.1.0, entry point badvalue = "
        "chatmem_badvalue:reg ister) skipped: could not be imported: entry point value "
        "'chatmem_badvalue:reg ister' is not module or module:function",
        "warning: plugin exit (chatmem-exit 0.1.0, entry point exit = chatmem_exit) skipped: "
        "its register(plugins) raised: SystemExit: plugin wants to quit",
    ]
    assert "buffer" in listed.stdout


def test_a_config_table_for_the_strategy_of_a_plugin_that_fails_to_load_stops_nothing(
        installed: Install, tmp_path: Path) -> None:
    """`[strategies.notebook]` while the plugin that has notebook fails to import: the
    warning says why; commands that build no notebook work; choosing it says it is unknown.
    Without a failed plugin, the same table for an unknown name is still refused (a typo)."""
    installed("chatmem-notebook", "chatmem_notebook", "import chatmem_not_installed\n",
              name="notebook")
    config = tmp_path / "config.toml"
    config.write_text("[strategies.notebook]\nk = 2\n", encoding="utf-8")
    db = str(tmp_path / "h.db")
    chatted = invoke("chat", "s", "--provider", "scripted", "--db", db, "--config",
                     str(config), input="hi\n", code=0)
    assert "warning: plugin notebook" in chatted.stderr  # (once a process)
    for command in (("sessions", "list", "--db", db), ("config", "show"),
                    ("facts", "list", "--db", db)):
        done = invoke(*command, "--config", str(config))
        assert done.exit_code == 0, (command, done.stderr)
    chosen = invoke("chat", "-s", "notebook", "--provider", "scripted", "--db", db,
                    "--config", str(config), input="hi\n")
    assert chosen.exit_code == 2 and "unknown strategy 'notebook'" in chosen.stderr
    sys.path.remove(str(tmp_path / "site"))  # the broken plugin uninstalled
    load_registries.cache_clear()
    config.write_text("[strategies.windw]\nk = 2\n", encoding="utf-8")
    typo = invoke("sessions", "list", "--db", db, "--config", str(config))
    assert typo.exit_code == 2 and "unknown strategy 'windw'" in typo.stderr


def test_an_eval_whose_embedder_is_down_throughout_says_which_figures_are_of_words_alone(
        installed: Install, tmp_path: Path) -> None:
    """The input's vector is not asked for while no message has one, so no context warned:
    a folder's eval printed words-alone recall as that of words and meaning, silently."""
    installed("chatmem-flaky", "chatmem_flaky", FLAKY, name="flaky")
    config = tmp_path / "config.toml"
    config.write_text('[embeddings]\nprovider = "down"\n', encoding="utf-8")
    folder = tmp_path / "对话"
    folder.mkdir()
    for name, said in (("猫.jsonl", "我的猫叫小黑"), ("dog.jsonl", "my dog is called Rex")):
        (folder / name).write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in [
            {"role": "user", "content": said}, {"role": "assistant", "content": "好的 ok"},
            {"role": "user", "content": "weather forecast"}, {"role": "assistant", "content": "晴"},
            {"probe": "猫叫什么? what is the dog called?", "expect_text": ["小黑"]}]) + "\n",
            encoding="utf-8")
    # The probe's context recalled by words alone; the second turn's recalled nothing.
    failure = ("1 context of 3 ranked messages without a vector by words alone: indexing them"
               " failed (embedder 'down' failed: RuntimeError: embedding service down"
               " (plugin flaky (chatmem-flaky 0.1.0)))")
    shown = invoke("eval", str(folder), "-s", "retrieval:recent=0", "--provider", "scripted",
                   "--config", str(config), "-j", "1", code=0)
    assert sorted(line for line in shown.stderr.splitlines() if failure in line) == [
        f"dog.jsonl retrieval recent=0: {failure}", f"猫.jsonl retrieval recent=0: {failure}"]
    as_json = invoke("eval", str(folder), "-s", "retrieval:recent=0", "--provider", "scripted",
                     "--config", str(config), "-j", "1", "--json", code=0)
    for transcript in json.loads(as_json.stdout)["transcripts"]:
        notices = transcript["strategies"][0]["notices"]
        assert failure in notices, notices


THREADER = '''
from concurrent.futures import ThreadPoolExecutor

from chatmem.memory.window import WindowStrategy


class Threader(WindowStrategy):
    name = "threader"
    description = "reads the history on a thread of its own"

    def build(self, request):
        with ThreadPoolExecutor(1) as pool:
            pool.submit(lambda: request.history.turns(1, 1)).result()
        return super().build(request)


def register(plugins):
    plugins.add_strategy(Threader)
'''


def test_a_strategy_using_the_history_from_its_own_thread_is_named_not_the_caller(
        installed: Install, tmp_path: Path) -> None:
    """The WrongThread line told a chat's user to open a Workspace per thread, and named
    neither the strategy nor its plugin."""
    installed("chatmem-threader", "chatmem_threader", THREADER, name="threader")
    db = str(tmp_path / "h.db")
    invoke("ask", "第一个问题", "--session", "t", "--provider", "scripted", "--db", db, code=0)
    asked = invoke("ask", "second", "--session", "t", "-s", "threader", "--provider",
                   "scripted", "--db", db)
    assert asked.exit_code != 0 and "Traceback" not in asked.output
    assert [line for line in asked.stderr.splitlines() if line.startswith("error:")] == [
        "error: strategy 'threader' failed: it used the history from a thread of its own: a"
        " strategy reads and writes it (request.history, env.state) only as chatmem calls"
        " build and update (plugin threader (chatmem-threader 0.1.0))"]


COUNTER = '''
from concurrent.futures import ThreadPoolExecutor

from chatmem.memory.window import WindowStrategy


def on_a_thread(call):
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result()


class Counter(WindowStrategy):
    name = "counter"
    description = "counts the turns on a thread of its own"

    def build(self, request):
        on_a_thread(request.history.turn_count)
        return super().build(request)


class Lister(WindowStrategy):
    name = "lister"
    description = "lists the newest turns on a thread of its own"

    def update(self, env):
        on_a_thread(lambda: list(env.history.newest_first()))
        return []


def register(plugins):
    plugins.add_strategy(Counter)
    plugins.add_strategy(Lister)
'''


def test_what_the_history_knows_already_is_not_read_from_a_thread_of_its_own_either(
        installed: Install, tmp_path: Path) -> None:
    """A plugin author's report: `request.history.turn_count()` on a thread of the plugin's
    own answered (the count is read once), where README says such a read is an error line;
    only reads reaching the store were refused. Now every read is, on the first turn too."""
    installed("chatmem-counter", "chatmem_counter", COUNTER, name="counter")
    db = str(tmp_path / "h.db")
    line = ("error: strategy '{}' {}: it used the history from a thread of its own: a"
            " strategy reads and writes it (request.history, env.state) only as chatmem calls"
            " build and update (plugin counter (chatmem-counter 0.1.0))")
    for turn in ("第一个问题", "second"):
        asked = invoke("ask", turn, "--session", "c", "-s", "counter", "--provider",
                       "scripted", "--db", db)
        assert asked.exit_code == 1 and "Traceback" not in asked.output
        assert [s for s in asked.stderr.splitlines() if s.startswith("error:")] == [
            line.format("counter", "failed")]
        invoke("ask", turn, "--session", "c", "-s", "window", "--provider", "scripted",
               "--db", db, code=0)
    listed = invoke("ask", "third", "--session", "c", "-s", "lister", "--provider",
                    "scripted", "--db", db, code=0)  # the turn stands; its update is retried
    assert ("memory update failed, will retry next turn: "
            + line.format("lister", "could not update its memory").removeprefix("error: ")
            in listed.stderr.splitlines())


def test_a_session_whose_plugin_now_fails_to_load_is_refused_naming_that_plugin(
        installed: Install, tmp_path: Path) -> None:
    """The plugin is installed but its import fails (a library it needs is gone): the
    refusal told the user to "install it again", which pip says is done."""
    installed("chatmem-fragile", "chatmem_fragile", FRAGILE)
    db = str(tmp_path / "h.db")
    invoke("ask", "--session", "笔记", "-s", "fragile", "--save", "--provider", "scripted",
           "--db", db, "记下这个", code=0)
    unimportable(tmp_path / "site", "chatmem_fragile", FRAGILE)
    load_registries.cache_clear()

    refused = invoke("ask", "--session", "笔记", "--provider", "scripted", "--db", db,
                     "还在吗", code=2)
    warning, error = refused.stderr.splitlines()
    assert warning.startswith("warning: plugin chatmem_fragile (chatmem-fragile 0.1.0, entry "
                              "point chatmem_fragile = chatmem_fragile) skipped: could not be "
                              "imported: ModuleNotFoundError")
    assert error == (
        "error: session '笔记' keeps its memory with strategy 'fragile', which no installed "
        "plugin provides now; plugin chatmem_fragile (chatmem-fragile 0.1.0) failed to load "
        "(its warning says why): mend it, or install the strategy's plugin again, or go on "
        "with another (-s NAME) (`chatmem strategies` lists them)")
    with Store(db) as store:
        assert len(store.history.messages(store.sessions.session("笔记").id)) == 2


def test_a_config_naming_an_uninstalled_plugin_stops_only_the_commands_that_need_it(
        tmp_path: Path) -> None:
    """`strategy = "anchor"`, `provider = "shout"`, `[embeddings] provider = "letters"` once
    their plugin is uninstalled: every command stopped at the config with `unknown strategy
    'anchor' (valid: …)`; now those that need none of them run, and the one that does names
    the key that chose it and the way on."""
    config = tmp_path / "config.toml"
    config.write_text('strategy = "anchor"\n[strategies.anchor]\nk = 2\n'
                      '[embeddings]\nprovider = "letters"\n', encoding="utf-8")
    db = str(tmp_path / "h.db")
    given = ("--db", db, "--config", str(config))
    invoke("chat", "s", "-s", "window", "--provider", "scripted", *given, input="你好\n",
           code=0)
    for command in (("sessions", "list", *given), ("config", "show", "--config", str(config)),
                    ("facts", "list", *given), ("inspect", "s", *given),
                    ("chat", "s", "--provider", "scripted", *given)):
        done = invoke(*command)
        assert done.exit_code == 0, (command, done.stderr)
    chosen = invoke("ask", "hi", "--provider", "scripted", *given, code=2)
    assert chosen.stderr.startswith(f"error: {config}: key 'strategy': unknown strategy "
                                    "'anchor'")
    assert "install that plugin again" in chosen.stderr
    recalled = invoke("ask", "hi", "-s", "retrieval", "--provider", "scripted", *given, code=2)
    assert recalled.stderr.startswith(f"error: {config}: key 'embeddings.provider': unknown "
                                      "embedder 'letters'")
    config.write_text('provider = "shout"\n', encoding="utf-8")
    assert invoke("sessions", "list", *given).exit_code == 0
    asked = invoke("ask", "hi", *given, code=2)
    assert asked.stderr.startswith(f"error: {config}: key 'provider': unknown provider 'shout'")
    # The helper model's provider ([summary] provider, its old name): named as itself, not
    # as the chat's --provider the command was given.
    config.write_text('[summary]\nprovider = "cheap"\n', encoding="utf-8")
    assert invoke("sessions", "list", *given).exit_code == 0
    helped = invoke("ask", "s", "hi", "-s", "summary", "--provider", "scripted", *given, code=2)
    assert helped.stderr.startswith(f"error: {config}: key 'helper_provider': unknown provider "
                                    "'cheap'")


CANCELLED = '''
import asyncio

from chatmem.memory.window import WindowStrategy


class Cancelled(WindowStrategy):
    name = "cancelled"
    description = "its build awaits what was cancelled (asyncio)"

    def build(self, request):
        if request.history.turn_count() >= 1:
            raise asyncio.CancelledError("取消了")
        return super().build(request)


def register(plugins):
    plugins.add_strategy(Cancelled)
'''


def test_a_plugin_raising_a_base_exception_is_one_line_and_the_chat_goes_on(
        installed: Install, tmp_path: Path) -> None:
    """asyncio's CancelledError is a BaseException, not an Exception: from a strategy's build
    the chat ended in a traceback (from a plugin's register, every command did), where a
    plugin's other failures are one line."""
    installed("chatmem-cancelled", "chatmem_cancelled", CANCELLED, name="cancelled")
    installed("chatmem-gone", "chatmem_gone",
              "import asyncio\n\ndef register(plugins):\n    raise asyncio.CancelledError()\n",
              name="gone")
    db = str(tmp_path / "h.db")
    chatted = invoke("chat", "c", "-s", "cancelled", "--provider", "scripted", "--db", db,
                     input="one 一\ntwo 二\n/strategy window\nthree 三\n")
    assert "Traceback" not in chatted.output
    assert [line for line in chatted.stderr.splitlines() if line.startswith("error:")
            ] == ["error: strategy 'cancelled' failed in its build: CancelledError: 取消了 "
                  "(plugin cancelled (chatmem-cancelled 0.1.0))"]
    assert ("warning: plugin gone (chatmem-gone 0.1.0, entry point gone = chatmem_gone) "
            "skipped: its register(plugins) raised: CancelledError") in chatted.stderr
    with Store(db) as store:
        said = [m.content for m in store.history.messages(store.sessions.session("c").id)]
    assert said == ["one 一", "echo #1: one 一", "three 三", "echo #2: three 三"]


def test_a_strategy_whose_plugin_now_fails_to_load_is_refused_naming_that_plugin(
        installed: Install, tmp_path: Path) -> None:
    """`-s fragile` while fragile's plugin fails its import said only the names -s takes,
    as it says of a typo (the provider's refusal named the plugin)."""
    installed("chatmem-fragile", "chatmem_fragile", FRAGILE)
    unimportable(tmp_path / "site", "chatmem_fragile", FRAGILE)
    load_registries.cache_clear()
    refused = invoke("ask", "-s", "fragile+window", "--provider", "scripted", "--db",
                     str(tmp_path / "h.db"), "你好", code=2)
    warning, error = refused.stderr.splitlines()
    assert warning.startswith("warning: plugin chatmem_fragile (chatmem-fragile 0.1.0")
    assert error.startswith("error: unknown strategy 'fragile' in 'fragile+window'")
    assert error.endswith("; plugin chatmem_fragile (chatmem-fragile 0.1.0) failed to load "
                          "(its warning says why): if it is a plugin's, mend that plugin")


def test_a_provider_whose_plugin_now_fails_to_load_is_refused_naming_that_plugin(
        installed: Install, tmp_path: Path) -> None:
    """`--provider flaky` while flaky's plugin fails its import said only the names
    --provider takes, as it says of a typo."""
    installed("chatmem-flaky", "chatmem_flaky", FLAKY, name="flaky")
    db = str(tmp_path / "h.db")
    unimportable(tmp_path / "site", "chatmem_flaky", FLAKY)
    load_registries.cache_clear()
    refused = invoke("ask", "--provider", "flaky", "--db", db, "你好", code=2)
    warning, error = refused.stderr.splitlines()
    assert warning.startswith("warning: plugin flaky (chatmem-flaky 0.1.0")
    assert "'flaky'" in error and "plugin flaky (chatmem-flaky 0.1.0)" in error
    assert "failed to load" in error


BEHIND = ("error: entity: 1 memory update failed in 1 turn: its figures are of a memory that"
          " did not keep up")
"""A replay whose updates failed exits 1 saying so, as a script cannot read the lines above."""


def test_replaying_a_session_whose_provider_plugin_is_gone_names_it_and_the_way_on(
        installed: Install, tmp_path: Path) -> None:
    """A session recorded with a plugin's provider, replayed after the plugin was
    uninstalled (or while it fails to load): entity's update said "鹦鹉: in the header:
    unknown provider 'flaky' (valid: …)", as of a typo, naming no plugin or way on."""
    installed("chatmem-flaky", "chatmem_flaky", FLAKY, name="flaky")
    db = str(tmp_path / "h.db")
    invoke("ask", "--session", "鹦鹉", "--save", "--provider", "flaky", "--db", db,
           "我叫小明", code=0)
    unimportable(tmp_path / "site", "chatmem_flaky", FLAKY)
    load_registries.cache_clear()
    failing = invoke("replay", "鹦鹉", "-s", "entity", "--db", db, code=1).stderr.splitlines()
    assert failing[0].startswith("warning: plugin flaky (chatmem-flaky 0.1.0")
    assert failing[1:] == [
        "entity: memory update failed, the replay ended before a retry: session '鹦鹉': "
        "recorded with "
        "provider 'flaky', which no installed plugin provides now; plugin flaky (chatmem-flaky"
        " 0.1.0) failed to load (its warning says why): mend it, or install the provider's "
        "plugin again, or choose another with --provider NAME (valid: auto, local, openai, "
        "scripted)", BEHIND]
    sys.path.remove(str(tmp_path / "site"))  # uninstalled
    load_registries.cache_clear()
    gone = invoke("replay", "鹦鹉", "-s", "entity", "--db", db, code=1).stderr.splitlines()
    assert gone == [
        "entity: memory update failed, the replay ended before a retry: session '鹦鹉': "
        "recorded with "
        "provider 'flaky', which no installed plugin provides now; install its plugin again, "
        "or choose another with --provider NAME (valid: auto, local, openai, scripted)", BEHIND]
    assert invoke("replay", "鹦鹉", "-s", "entity", "--provider", "scripted", "--db", db,
                  code=0).stderr == ""
