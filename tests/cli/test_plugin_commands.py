"""A plugin's strategy, provider and embedder work from the command line where a built-in
one does, and a plugin that cannot be used is one warning naming it, never a broken command.

Plugins are installed as pip installs them (a module and its .dist-info) in a folder put on
sys.path, so importlib.metadata finds them as it finds any installed distribution; the
strategy, provider and embedder are the README's own examples ("Writing a plugin").
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_runner import invoke
from plugin_site import BUILT_IN, CLASH, STREAM, Install, readme_files

from chatmem.plugins import load_registries
from chatmem.store import Store

SUPPORT = Path(__file__).resolve().parents[2] / "sessions" / "support.jsonl"


@pytest.fixture
def anchor(installed: Install) -> None:
    """The README's example plugin, installed."""
    installed("chatmem-anchor", "chatmem_anchor", readme_files()["chatmem_anchor.py"])


# -- a plugin's strategy, everywhere a built-in one goes ---------------------------------


def test_a_plugin_strategy_is_listed_explained_and_chosen(anchor: None, tmp_path: Path) -> None:
    listed = invoke("strategies", "--json", code=0)
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert list(rows) == [*BUILT_IN, "anchor"]
    assert rows["anchor"]["parameters"] == {"head": 1, "k": 3}
    assert rows["anchor"]["plugin"] == "chatmem-anchor 0.1.0" and rows["window"]["plugin"] is None
    assert rows["anchor"]["in_default_eval"] is False and rows["entity"]["sends_facts"] is True
    table = invoke("strategies", width=120, code=0).stdout
    assert "anchor" in table and "chatmem-anchor" in table and listed.stderr == ""
    explained = invoke("strategies", "anchor+window", width=100, code=0).stdout
    assert "anchor.head" in explained and "how many of the first turns" in explained.lower()
    # Which installed distribution a name comes from, as the listing says (a plugin author's
    # report: `strategies NAME` alone did not).
    wide = invoke("strategies", "anchor+window", width=200, code=0).stdout
    titles = [line for line in wide.splitlines() if line.startswith(("anchor ", "window "))]
    assert titles == ["anchor  Send the first turns (where the task was set) and the last k "
                      "turns.  (plugin chatmem-anchor 0.1.0)",
                      "window  Send the last k complete turns; older turns are dropped."]
    db = str(tmp_path / "a.db")
    chatted = invoke("chat", "trip", "-s", "anchor:k=1", "--provider", "scripted", "--db", db,
                     input="my order is ORD-7731\n我们五月去杭州\nthe hotel\nand now?\n", code=0)
    assert chatted.stdout.splitlines()[-1] == "echo #4: and now?"
    with Store(db) as store:
        session = store.sessions.session("trip")
        assert (session.strategy, session.params) == ("anchor", {"head": 1, "k": 1})
    shown = json.loads(invoke("inspect", "trip", "--json", "--db", db, code=0).stdout)
    [history] = [p for p in shown["context"]["parts"] if p["kind"] == "history"]
    # The first turn and the newest one; turn 2 between them is not sent, and said so.
    assert history["reason"] == "anchor head=1 k=1: turns 1, 3"
    assert "turn 2" in shown["context"]["dropped"]
    assert [m["content"] for m in shown["messages"] if m["role"] != "system"] == [
        "my order is ORD-7731", "echo #1: my order is ORD-7731", "the hotel",
        "echo #3: the hotel", "and now?"]


def test_a_plugin_strategy_combines_switches_and_completes_in_the_repl(
    anchor: None, tmp_path: Path
) -> None:
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document
    from registered import open_session

    from chatmem.config.settings import Settings
    from chatmem.providers.scripted import ScriptedProvider
    from chatmem.render import make_console
    from chatmem.repl.completion import SlashCompleter
    from chatmem.repl.loop import Repl

    db = str(tmp_path / "r.db")
    result = invoke("chat", "s", "-s", "anchor+window", "--provider", "scripted", "--db", db,
                    input="hello\n/strategy anchor k=1\nsecond\n/strategy window+anchor\n"
                          "third\n", code=0)
    assert "strategy: anchor head=1 k=1\n" in result.stderr
    assert ("strategy: window+anchor window.k=5 anchor.head=1 anchor.k=1 (kept from the "
            "previous strategy: anchor.k=1)") in result.stderr
    with Store(db) as store:
        assert [t.strategy for t in store.turns.turns(store.sessions.session("s").id)] == [
            "anchor+window", "anchor", "window+anchor"]
        engine = open_session(store, Settings(), ScriptedProvider(), "s")
        completer = SlashCompleter(Repl(engine, make_console(), make_console(stderr=True)))

        def offered(text: str) -> list[str]:
            return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

        assert "anchor" in offered("/strategy an")
        assert offered("/strategy window+anc") == ["window+anchor"]
        assert offered("/strategy anchor ") == ["head=", "k="]
        assert offered("/strategy window+anchor:anchor.") == [
            "window+anchor:anchor.head=", "window+anchor:anchor.k="]


def test_a_plugin_strategy_replays_evals_and_answers_what_ifs(anchor: None,
                                                               tmp_path: Path) -> None:
    support = str(SUPPORT)
    scored = json.loads(invoke("eval", support, "-s", "anchor", "-s",
                               "anchor+window:window.k=2", "--provider", "scripted", "--json",
                               code=0).stdout)
    assert [s["strategy"]["label"] for s in scored["strategies"]] == [
        "anchor", "anchor+window window.k=2"]
    assert all(len(s["eval"]["per_probe"]) > 0 for s in scored["strategies"])
    default = json.loads(invoke("eval", support, "--provider", "scripted", "--json",
                                code=0).stdout)
    # A plugin is in the default set only when its class says so (anchor does not).
    assert [s["strategy"]["name"] for s in default["strategies"]] == [
        "buffer", "window", "tokens", "summary-buffer", "entity", "retrieval"]
    db = str(tmp_path / "w.db")
    invoke("replay", support, "-s", "anchor:head=2", "--save-as", "kept", "--db", db,
           "--provider", "scripted", code=0)
    asked = json.loads(invoke("inspect", "kept", "--next", "and my order?", "-s",
                              "anchor:k=0", "--json", "--db", db, code=0).stdout)
    assert asked["strategy"]["label"] == "anchor head=1 k=0"  # the spec given, not head=2
    [history] = [p for p in asked["context"]["parts"] if p["kind"] == "history"]
    assert history["reason"] == "anchor head=1 k=0: turns 1"


def test_the_config_names_a_plugin_strategy_and_checks_its_parameters(
    anchor: None, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('strategy = "anchor"\n[strategies.anchor]\nk = 2\n', encoding="utf-8")
    db = str(tmp_path / "c.db")
    invoke("chat", "c", "--config", str(config), "--db", db, "--provider", "scripted",
           input="hi\n", code=0)
    with Store(db) as store:
        assert store.sessions.session("c").params == {"head": 1, "k": 2}
    config.write_text('strategy = "anchor"\n[strategies.anchor]\nk = -2\n', encoding="utf-8")
    # Checked where it is used: a new session takes it, "c" keeps its own saved parameters.
    refused = invoke("chat", "d", "--config", str(config), "--db", db, "--provider", "scripted",
                     input="hi\n", code=2)
    assert refused.stderr == (f"error: {config}: key 'strategies.anchor': parameter k=-2 of "
                              "strategy 'anchor' must be at least 0\n")
    invoke("chat", "c", "--config", str(config), "--db", db, "--provider", "scripted",
           input="hi\n", code=0)


def test_without_the_plugin_its_sessions_still_list_and_a_clear_error_says_why(
    anchor: None, installed: Install, tmp_path: Path
) -> None:
    db = str(tmp_path / "g.db")
    invoke("chat", "g", "-s", "anchor:k=2", "--provider", "scripted", "--db", db,
           input="hi\n", code=0)
    load_registries.cache_clear()
    sys.path.remove(str(tmp_path / "site"))  # uninstalled
    listed = invoke("sessions", "list", "--db", db, width=120, code=0).stdout
    assert "anchor" in listed and "k=2" in listed
    refused = invoke("chat", "g", "--provider", "scripted", "--db", db, input="hi\n", code=2)
    assert refused.stderr == (
        "error: session 'g' keeps its memory with strategy 'anchor', which no installed plugin "
        "provides now; install it again, or go on with another (-s NAME) (`chatmem strategies`"
        " lists them)\n")
    # The REPL's /switch takes no -s: it is told the way on that works from there.
    switched = invoke("chat", "other", "--provider", "scripted", "--db", db,
                      input="/switch g\n", code=2)
    # (Then `other`, created and left empty, is said not kept.)
    assert switched.stderr.splitlines()[-2] == (
        "error: session 'g' keeps its memory with strategy 'anchor', which no installed plugin "
        "provides now; install it again, or go on with another strategy (/quit, then chatmem"
        " chat g -s NAME)")
    # ... and it goes on with another, keeping every turn.
    invoke("chat", "g", "-s", "window", "--provider", "scripted", "--db", db, input="hi\n",
           code=0)


# -- providers and embedders ------------------------------------------------------------


def test_a_plugin_provider_and_embedder_are_chosen_by_name(installed: Install,
                                                           tmp_path: Path) -> None:
    installed("chatmem-shout", "chatmem_shout", readme_files()["chatmem_shout.py"],
              name="shout")
    db = str(tmp_path / "p.db")
    chatted = invoke("chat", "loud", "--provider", "shout", "--db", db,
                     input="hello there\n你好\n", code=0)
    assert chatted.stdout.splitlines() == ["HELLO THERE", "你好"]
    with Store(db) as store:
        assert store.sessions.session("loud").provider == "shout"
    assert json.loads(invoke("models", "--provider", "shout", "--json", code=0).stdout)[
        "models"] == ["shout"]
    refused = invoke("chat", "--provider", "whisper", "--db", db, input="x\n", code=2)
    assert "must be one of auto, local, openai, scripted, shout, got 'whisper'" in refused.stderr
    config = tmp_path / "config.toml"
    config.write_text('[embeddings]\nprovider = "letters"\n', encoding="utf-8")
    support = str(SUPPORT)
    scored = json.loads(invoke("eval", support, "-s", "retrieval:mode=dense", "--config",
                               str(config), "--provider", "scripted", "--json", code=0).stdout)
    notes = " ".join(scored["strategies"][0]["notices"])
    assert "no embedder" not in notes  # ranked by the plugin's vectors, not by words alone
    config.write_text('[embeddings]\nprovider = "bert"\n', encoding="utf-8")
    bad = invoke("eval", support, "-s", "retrieval", "--config", str(config), code=2)
    # A name near none may be an uninstalled plugin's: refused where it is chosen, naming
    # where it was set.
    assert bad.stderr == (f"error: {config}: key 'embeddings.provider': unknown embedder "
                          "'bert' (valid: auto, local, openai, hash, letters, none); if a "
                          "plugin provided it, install that plugin again, or choose another "
                          "there\n")


GREETER = """
from chatmem.providers.scripted import ScriptedProvider


class Greeter(ScriptedProvider):
    def __init__(self, greeting):
        super().__init__()
        self.greeting = greeting

    def complete(self, messages, **options):
        return self.greeting + " " + super().complete(messages, **options)

    def stream(self, messages):
        return _Stream(iter([self.complete(messages)]))


def register(plugins):
    plugins.add_provider("greeter", lambda settings: Greeter(
        str(settings.options.get("greeting", "你好"))))
"""


def test_a_plugin_provider_reads_a_setting_of_its_own_as_the_readme_says(
        installed: Install, tmp_path: Path) -> None:
    """The config has no table for a plugin (a plugin author's question: where do my settings
    go?); the README sends a setting of one's own through `-o` or a template's options."""
    installed("chatmem-greeter", "chatmem_greeter", STREAM + GREETER, name="greeter")
    db = str(tmp_path / "g.db")
    asked = invoke("ask", "hi", "--provider", "greeter", "-o", "greeting=嗨", "--db", db, code=0)
    assert asked.stdout == "嗨 echo #1: hi\n"
    config = tmp_path / "config.toml"
    config.write_text('[templates.warm]\noptions = { greeting = "welcome" }\n', encoding="utf-8")
    asked = invoke("ask", "hi", "--provider", "greeter", "-t", "warm", "--config", str(config),
                   "--db", db, code=0)
    assert asked.stdout == "welcome echo #1: hi\n"
    config.write_text('[greeter]\ngreeting = "welcome"\n', encoding="utf-8")
    refused = invoke("ask", "hi", "--provider", "greeter", "--config", str(config), "--db", db,
                     code=2)
    assert refused.stderr.startswith(f"error: {config}: unknown key 'greeter'")


# -- a bad plugin, seen from the command line --------------------------------------------


def test_each_bad_plugin_is_one_warning_naming_it_and_the_cli_works(
    installed: Install, tmp_path: Path
) -> None:
    installed("chatmem-broken", "chatmem_broken", "import chatmem_not_installed\n",
              name="broken")
    installed("chatmem-raising", "chatmem_raising",
              "def register(plugins):\n    raise ValueError('bad config')\n", name="raising")
    installed("chatmem-wrong", "chatmem_wrong",
              "def register(plugins):\n    plugins.add_strategy('window')\n", name="wrong")
    installed("chatmem-clash", "chatmem_clash", CLASH, name="clash")
    installed("chatmem-anchor", "chatmem_anchor", readme_files()["chatmem_anchor.py"])
    listed = invoke("strategies", "--json", width=300, code=0)
    assert [r["name"] for r in json.loads(listed.stdout)] == [*BUILT_IN, "anchor"]
    warnings = listed.stderr.splitlines()
    assert warnings == [
        "warning: plugin broken (chatmem-broken 0.1.0, entry point broken = chatmem_broken) "
        "skipped: could not be imported: ModuleNotFoundError: No module named "
        "'chatmem_not_installed'",
        "warning: plugin clash (chatmem-clash 0.1.0, entry point clash = chatmem_clash) "
        "skipped: registered something chatmem cannot use: strategy 'window' is already "
        "registered by chatmem itself",
        "warning: plugin raising (chatmem-raising 0.1.0, entry point raising = "
        "chatmem_raising) skipped: its register(plugins) raised: ValueError: bad config",
        "warning: plugin wrong (chatmem-wrong 0.1.0, entry point wrong = chatmem_wrong) "
        "skipped: registered something chatmem cannot use: 'window' is not a subclass of "
        "chatmem.memory.base.BaseStrategy",
    ]
    db = str(tmp_path / "b.db")
    load_registries.cache_clear()  # as the next command's own process would
    chatted = invoke("chat", "-s", "window+anchor", "--provider", "scripted", "--db", db,
                     input="hi\n", code=0)
    assert chatted.stdout == "echo #1: hi\n"
    assert sum("warning: plugin" in line for line in chatted.stderr.splitlines()) == 4
    helped = invoke("--help", code=0)
    assert "warning" not in helped.stderr  # help loads no plugin


def test_a_provider_whose_plugin_was_skipped_is_refused_with_the_reason(
    installed: Install, tmp_path: Path
) -> None:
    """`--provider NAME` is checked as the options are read, before the command runs: the
    plugin's warning, printed when the command began, was lost, and the user read only that
    NAME is not one of the built-in providers."""
    installed("chatmem-shout", "chatmem_shout",
              "def register(plugins):\n    raise RuntimeError('注册失败')\n", name="shout")
    refused = invoke("ask", "你好", "--provider", "shout", "--db", str(tmp_path / "h.db"),
                     code=2)
    lines = refused.stderr.splitlines()
    assert lines[0] == ("warning: plugin shout (chatmem-shout 0.1.0, entry point shout = "
                        "chatmem_shout) skipped: its register(plugins) raised: RuntimeError: "
                        "注册失败")
    assert "'shout'" in lines[-1] and len(lines) == 2


def test_a_second_use_in_one_process_does_not_warn_again(installed: Install) -> None:
    installed("chatmem-broken", "chatmem_broken2", "raise SystemError('half installed')\n",
              name="broken")
    first = invoke("strategies", code=0)
    again = invoke("strategies", code=0)
    assert first.stderr.count("warning: plugin broken") == 1
    assert "SystemError: half installed" in first.stderr
    assert again.stderr == ""


def test_readme_shows_every_file_it_names() -> None:
    files = readme_files()
    assert set(files) == {"pyproject.toml", "chatmem_anchor.py", "chatmem_notes.py",
                          "chatmem_echo.py", "chatmem_shout.py", "test_chatmem_anchor.py"}
    for name, text in files.items():
        if name.endswith(".py"):
            compile(text, name, "exec")  # whole modules, not fragments
    assert 'anchor = "chatmem_anchor"' in files["pyproject.toml"]
