"""The registries: filled from the `chatmem.plugins` entry points, chatmem's own through the
same hook, each loaded once when first used; a plugin that cannot be used is skipped whole
and recorded as one typed problem. Specs are parsed once into typed parts.

Plugins here are modules in a folder put on sys.path, named by entry points as
importlib.metadata gives them; tests/cli/test_plugin_commands.py installs them as pip does.
"""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
from plugin_site import BUILT_IN, CLASH

from chatmem import builtin_plugin
from chatmem.memory.registry import StrategyRegistry
from chatmem.memory.spec import StrategySpec
from chatmem.plugin_entries import Plugins, ProblemKind
from chatmem.plugins import ENTRY_POINT_GROUP, Registries, load_registries

# -- the registries ---------------------------------------------------------------------


def test_chatmem_registers_its_own_through_the_hook_a_plugin_uses() -> None:
    hooked = Plugins()
    builtin_plugin.register(hooked)
    loaded = Registries(entry_points=list)
    assert [cls.name for cls in hooked.strategies] == loaded.strategies.names() == BUILT_IN
    assert [name for name, _, _ in hooked.providers] == list(loaded.providers) == [
        "local", "openai", "scripted"]
    assert [name for name, _ in hooked.embedders] == list(loaded.embedders) == [
        "local", "openai", "hash"]
    origin = loaded.origin("strategy", "window")
    assert origin is not None and origin.builtin and origin.value == "chatmem.builtin_plugin"
    assert loaded.problems == []
    assert loaded.provider_names() == ["auto", "local", "openai", "scripted"]
    assert loaded.embedder_names() == ["auto", "local", "openai", "hash", "none"]


def test_registries_load_once_and_only_when_first_used() -> None:
    scans: list[int] = []

    def entry_points() -> list[EntryPoint]:
        scans.append(1)
        return []

    loaded = Registries(entry_points=entry_points)
    assert scans == []  # built, handed around, nothing imported or scanned yet
    assert "window" in loaded.strategies
    assert "scripted" in loaded.providers and loaded.problems == []
    assert scans == [1]
    assert load_registries() is load_registries()


def test_capabilities_are_declared_by_the_registered_classes() -> None:
    strategies = Registries(entry_points=list).strategies
    assert [n for n, cls in strategies.items() if cls.sends_facts] == ["entity"]
    assert [n for n, cls in strategies.items() if cls.summarizes] == ["summary", "summary-buffer"]
    assert strategies.default_eval() == ["buffer", "window", "tokens", "summary-buffer",
                                         "entity", "retrieval"]
    combined = strategies.strategy("window+entity")
    assert combined.sends_facts and not combined.summarizes and not combined.needs_embedder
    assert [m.name for m in combined.members] == ["window", "entity"]
    both = strategies.strategy("summary-buffer+retrieval")
    assert both.summarizes and both.needs_embedder and not both.sends_facts
    assert not strategies.strategy("retrieval:mode=bm25").needs_embedder


def entry_point(name: str, value: str, dist: str | None = None) -> Any:
    """An entry point as importlib.metadata gives one; `dist` names its distribution."""
    point = EntryPoint(name, value, ENTRY_POINT_GROUP)
    if dist is None:
        return point
    info = type("Dist", (), {"name": dist, "version": "1.0"})()
    return type("Pointed", (), {"name": name, "value": value, "dist": info,
                                "load": point.load})()




@pytest.mark.parametrize(("code", "kind", "detail"), [
    ("import chatmem_no_such_module\n", ProblemKind.IMPORT_FAILED,
     "ModuleNotFoundError: No module named 'chatmem_no_such_module'"),
    ("def register(plugins):\n    raise RuntimeError('no 网络')\n", ProblemKind.REGISTER_FAILED,
     "RuntimeError: no 网络"),
    ("x = 1\n", ProblemKind.NO_HOOK, "has no register(plugins) function"),
    ("def register(plugins):\n    plugins.add_strategy(len)\n", ProblemKind.REJECTED,
     "is not a subclass of chatmem.memory.base.BaseStrategy"),
    (CLASH, ProblemKind.REJECTED, "strategy 'window' is already registered"),
    # A parameter that may be None: the warning said "'types.UnionType' object has no
    # attribute '__name__'", naming neither the parameter nor what is wrong with it.
    ("from __future__ import annotations\nfrom dataclasses import dataclass\n"
     "from chatmem.memory.buffer import BufferStrategy\nfrom chatmem.memory.params import param\n"
     "@dataclass(frozen=True)\nclass O:\n    limit: int | None = param(None, '上限')\n"
     "class Opt(BufferStrategy):\n    name = 'opt'\n    description = 'd'\n    OPTIONS = O\n"
     "def register(plugins):\n    plugins.add_strategy(Opt)\n", ProblemKind.REJECTED,
     "strategy 'opt': parameter limit is int | None; parameters are int, float, bool or str"),
    # Found as the class is defined, while the plugin imports: the warning said it "could
    # not be imported", as of a missing dependency, though it imported and declared wrong.
    ("from dataclasses import dataclass\nfrom chatmem.memory.window import WindowStrategy\n"
     "@dataclass(frozen=True)\nclass O:\n    k: int = 3\n"
     "class Bare(WindowStrategy):\n    name = 'bare'\n    description = 'd'\n    OPTIONS = O\n"
     "def register(plugins):\n    plugins.add_strategy(Bare)\n", ProblemKind.REJECTED,
     "O.k is not declared with param(default, help)"),
    ("from dataclasses import dataclass\nfrom chatmem.memory.window import WindowStrategy\n"
     "def register(plugins):\n    @dataclass(frozen=True)\n    class O:\n        k: int = 3\n"
     "    class Bare(WindowStrategy):\n        name = 'bare'\n        OPTIONS = O\n"
     "    plugins.add_strategy(Bare)\n", ProblemKind.REJECTED,
     "O.k is not declared with param(default, help)"),
    ("def register(plugins):\n    plugins.add_provider('scripted', print)\n",
     ProblemKind.REJECTED, "provider 'scripted' is already registered by chatmem itself"),
    ("def register(plugins):\n    plugins.add_embedder('none', print)\n",
     ProblemKind.REJECTED, "embedder name 'none' is reserved"),
    ("def register(plugins):\n    plugins.add_provider('Bad Name', print)\n",
     ProblemKind.REJECTED, "provider name must be lowercase letters"),
])
def test_a_plugin_that_cannot_be_used_is_skipped_whole_as_one_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, kind: ProblemKind, detail: str
) -> None:
    module = f"chatmem_bad_{abs(hash(code))}"
    (tmp_path / f"{module}.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = Registries(entry_points=lambda: [entry_point("bad", module, "chatmem-bad")])
    [problem] = loaded.problems
    assert (problem.kind, problem.plugin.name, problem.plugin.value, problem.plugin.dist) == (
        kind, "bad", module, "chatmem-bad")
    assert detail in problem.detail and "\n" not in problem.detail
    # Nothing of it is kept (the clash's other strategy neither), and the built-ins stand.
    assert loaded.strategies.names() == BUILT_IN
    assert list(loaded.providers) == ["local", "openai", "scripted"]
    sys.modules.pop(module, None)


def test_a_name_two_plugins_register_is_neither_plugins_naming_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Said as a provider's clash is: it named the holder's class (chatmem_first.Notes), not
    the distribution to uninstall. The first in distribution-name order used to keep the
    name: installing chatmem-aaa with a `notes` of its own then ran every session saved with
    chatmem-first's `notes` with aaa's (its saved parameters "of another version" dropped,
    its state under that name read and overwritten by another plugin's update). Neither is
    used now, nor a third of that name, and each warning names the other plugin."""
    for module, extra in (("chatmem_first", "also_first"), ("chatmem_second", "also_second"),
                          ("chatmem_third", "also_third")):
        (tmp_path / f"{module}.py").write_text(
            "from chatmem.memory.window import WindowStrategy\n"
            "class Notes(WindowStrategy):\n    name = 'notes'\n    description = '笔记'\n"
            f"class Extra(WindowStrategy):\n    name = '{extra}'\n    description = 'x'\n"
            "def register(plugins):\n    plugins.add_strategy(Extra)\n"
            "    plugins.add_strategy(Notes)\n"
            f"    plugins.add_provider('{extra}', print)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = Registries(entry_points=lambda: [
        entry_point("first", "chatmem_first", "chatmem-first"),
        entry_point("second", "chatmem_second", "chatmem-second"),
        entry_point("third", "chatmem_third", "chatmem-third")])
    assert [(p.plugin.name, p.kind, p.detail) for p in loaded.problems] == [
        ("first", ProblemKind.REJECTED, "strategy 'notes' is registered by plugin second "
         "(chatmem-second 1.0) too: neither is used until one is uninstalled"),
        ("second", ProblemKind.REJECTED, "strategy 'notes' is registered by plugin first "
         "(chatmem-first 1.0) too: neither is used until one is uninstalled"),
        ("third", ProblemKind.REJECTED, "strategy 'notes' is registered by plugin first "
         "(chatmem-first 1.0), plugin second (chatmem-second 1.0) too: neither is used "
         "until one is uninstalled")]
    # Each is skipped whole, as any refused plugin is: its other strategy and provider too.
    assert loaded.strategies.names() == BUILT_IN
    assert list(loaded.providers) == ["local", "openai", "scripted"]
    assert loaded.origin("strategy", "notes") is None
    assert loaded.origin("provider", "also_first") is None
    for module in ("chatmem_first", "chatmem_second", "chatmem_third"):
        sys.modules.pop(module, None)


def test_a_plugin_refused_for_a_built_in_name_withdraws_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module, names in (("chatmem_keeps", "'notes'"), ("chatmem_takes", "'notes', 'window'")):
        (tmp_path / f"{module}.py").write_text(
            "from chatmem.memory.window import WindowStrategy\n"
            "def register(plugins):\n"
            f"    for n in ({names},):\n"
            "        plugins.add_strategy(type('S', (WindowStrategy,), {'name': n, "
            "'description': 'd'}))\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = Registries(entry_points=lambda: [
        entry_point("keeps", "chatmem_keeps", "chatmem-keeps"),
        entry_point("takes", "chatmem_takes", "chatmem-takes")])
    [problem] = loaded.problems
    assert problem.plugin.name == "takes"
    assert "is already registered" in problem.detail  # (its first clash: notes)
    assert loaded.strategies["notes"].__module__ == "chatmem_keeps"
    for module in ("chatmem_keeps", "chatmem_takes"):
        sys.modules.pop(module, None)


def test_a_provider_name_two_plugins_register_is_neither_plugins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in ("chatmem_shout_a", "chatmem_shout_b"):
        (tmp_path / f"{module}.py").write_text(
            "def register(plugins):\n    plugins.add_provider('shout', print)\n"
            "    plugins.add_embedder('letters', print)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = Registries(entry_points=lambda: [
        entry_point("a", "chatmem_shout_a", "chatmem-a"),
        entry_point("b", "chatmem_shout_b", "chatmem-b")])
    assert [(p.plugin.name, p.detail) for p in loaded.problems] == [
        ("a", "provider 'shout' is registered by plugin b (chatmem-b 1.0) too: neither is "
         "used until one is uninstalled"),
        ("b", "provider 'shout' is registered by plugin a (chatmem-a 1.0) too: neither is "
         "used until one is uninstalled")]
    assert "shout" not in loaded.providers and "letters" not in loaded.embedders
    for module in ("chatmem_shout_a", "chatmem_shout_b"):
        sys.modules.pop(module, None)


def test_a_function_may_be_the_entry_point_and_problems_reach_a_listener_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "chatmem_two.py").write_text(
        "from chatmem.memory.window import WindowStrategy\n"
        "class Keep(WindowStrategy):\n    name = 'keep'\n    description = 'kept'\n"
        "def hook(plugins):\n    plugins.add_strategy(Keep)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = Registries(entry_points=lambda: [
        entry_point("two", "chatmem_two:hook"), entry_point("gone", "chatmem_gone_for_good")])
    heard: list[Any] = []
    loaded.listen(heard.append)
    assert heard == []  # nothing loaded yet, nothing to say
    assert "keep" in loaded.strategies
    assert [(p.plugin.name, p.kind) for p in heard] == [("gone", ProblemKind.IMPORT_FAILED)]
    loaded.listen(heard.append)
    assert len(heard) == 1  # said once
    sys.modules.pop("chatmem_two", None)


def test_a_plugins_strategy_is_checked_once_when_it_is_admitted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Checking builds the class with its defaults; admitting a plugin once checked each
    # strategy twice (by hand, then again as the registry added it).
    (tmp_path / "chatmem_counted.py").write_text(
        "from chatmem.memory.window import WindowStrategy\n"
        "built = []\n"
        "class Counted(WindowStrategy):\n    name = 'counted'\n    description = 'counted'\n"
        "    def __init__(self, **params):\n"
        "        built.append(params)\n        super().__init__(**params)\n"
        "def register(plugins):\n    plugins.add_strategy(Counted)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = Registries(entry_points=lambda: [entry_point("counted", "chatmem_counted")])
    assert "counted" in loaded.strategies and loaded.problems == []
    assert sys.modules["chatmem_counted"].built == [{}]
    sys.modules.pop("chatmem_counted", None)


def test_a_registry_adds_several_strategies_all_or_none() -> None:
    from chatmem.memory.buffer import BufferStrategy
    from chatmem.memory.window import WindowStrategy

    registry = StrategyRegistry()
    with pytest.raises(ValueError, match="strategy 'window' is registered twice"):
        registry.add(WindowStrategy, BufferStrategy, WindowStrategy)
    assert registry.names() == []
    registry.add(WindowStrategy, BufferStrategy)
    assert registry.names() == ["window", "buffer"]


def test_specs_are_parsed_once_into_parts_with_their_own_parameters() -> None:
    strategies = Registries(entry_points=list).strategies
    spec = strategies.parse("window+entity:window.k=2", {"max_facts": "7"})
    assert [(p.name, dict(p.params)) for p in spec.parts] == [
        ("window", {"k": "2"}), ("entity", {"max_facts": "7"})]
    assert spec.name == "window+entity" and spec.combined
    assert spec.params == {"window.k": "2", "entity.max_facts": "7"}
    assert spec.label == "window+entity window.k=2 entity.max_facts=7"
    assert strategies.parse("window:k=2") == StrategySpec.single("window", {"k": "2"}) == \
        strategies.parse("window", {"k": "2"})
    assert strategies.parse("window:k=2", {"k": "3"}).params == {"k": "2"}
    assert strategies.parse("window", {"k": "3"}).label == "window k=3"
    assert strategies.parse("tokens:max_tokens=500").slug == "tokens-max_tokens-500"
    assert strategies.create(spec).params == {"window.k": 2, "entity.k": 3,
                                              "entity.max_facts": 7}


@pytest.mark.parametrize(("text", "message"), [
    ("nope", "unknown strategy 'nope' (valid: buffer, window, "),
    ("window:k", "strategy 'window:k': parameters must be key=value, e.g. window:k=2"),
    ("window:k=-1", "parameter k='-1' of strategy 'window' must be at least 0"),
    ("window+entity:k=2", "parameter 'k' is ambiguous for 'window+entity'"),
])
def test_a_bad_spec_is_one_strategy_error(text: str, message: str) -> None:
    from chatmem.errors import StrategyError

    with pytest.raises(StrategyError) as caught:
        Registries(entry_points=list).strategies.parse(text)
    assert str(caught.value).startswith(message)


def test_a_registry_refuses_what_it_cannot_build() -> None:
    from chatmem.memory.window import WindowStrategy

    registry = StrategyRegistry()
    registry.add(WindowStrategy)
    with pytest.raises(ValueError, match="already registered"):
        registry.add(WindowStrategy)

    class Broken(WindowStrategy):
        name = "broken"
        description = "fails to build"

        def __init__(self, **params: Any) -> None:
            raise RuntimeError("no")

    with pytest.raises(TypeError, match=r"Broken\(\) fails with its default parameters"):
        registry.add(Broken)
    assert registry.names() == ["window"]


def test_a_registry_refuses_a_parameter_its_own_rule_or_type_refuses() -> None:
    """A default outside its own range (a session started with it could not be opened
    again), or a parameter of a type `--param` cannot give, is refused when it is added."""
    from dataclasses import dataclass

    from chatmem.memory.buffer import BufferStrategy
    from chatmem.memory.params import param

    @dataclass(frozen=True)
    class OddOptions:
        n: int = param(0, "how many, 至少一个", minimum=1)

    class Odd(BufferStrategy):
        name = "odd"
        description = "a default below its minimum"
        OPTIONS = OddOptions

    @dataclass(frozen=True)
    class ListOptions:
        tags: list = param((), "tags")  # type: ignore[type-arg]  # noqa: RUF009

    class Tags(BufferStrategy):
        name = "tags"
        description = "a list parameter"
        OPTIONS = ListOptions

    registry = StrategyRegistry()
    with pytest.raises(ValueError, match=r"^default parameter n=0 of strategy 'odd' must be "
                                         r"at least 1$"):
        registry.add(Odd)
    with pytest.raises(TypeError, match=r"parameter tags is a list; parameters are int"):
        registry.add(Tags)
    assert registry.names() == []


def test_threads_using_the_registries_first_at_once_load_them_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    (tmp_path / "chatmem_late.py").write_text(
        "from chatmem.memory.window import WindowStrategy\n"
        "class Late(WindowStrategy):\n    name = 'late'\n    description = 'late'\n"
        "def register(plugins):\n    plugins.add_strategy(Late)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    scans: list[int] = []
    second_thread_in = threading.Event()

    def entry_points() -> list[Any]:
        scans.append(1)
        # Without the lock the other thread gets past the loading meanwhile (and says so
        # here, or returns a registry without the plugin); with it, it waits, and this
        # bounded wait runs out.
        second_thread_in.wait(timeout=0.5)
        return [entry_point("late", "chatmem_late")]

    loaded = Registries(entry_points=entry_points)
    start = threading.Barrier(2)
    seen: list[list[str]] = []

    def use() -> None:
        start.wait()
        if scans:
            second_thread_in.set()
        seen.append(loaded.strategies.names())

    threads = [threading.Thread(target=use) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert scans == [1]
    assert seen == [[*BUILT_IN, "late"]] * 2  # neither saw a half-filled registry
    sys.modules.pop("chatmem_late", None)


def test_a_plugin_slow_to_load_is_said_once_and_is_still_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin whose import took seconds (a heavy library, a network call at import) made
    every command wait that long, and nothing said why."""
    import chatmem.plugins
    from chatmem.render.plugins import plugin_problem_line

    monkeypatch.setattr(chatmem.plugins, "SLOW_LOAD", 0.3)
    for module, pause in (("chatmem_slow_one", 0.4), ("chatmem_quick_one", 0)):
        (tmp_path / f"{module}.py").write_text(
            f"import time\ntime.sleep({pause})\n"
            "from chatmem.memory.window import WindowStrategy\n"
            f"class Keep(WindowStrategy):\n    name = '{module[8:].replace('_', '-')}'\n"
            "    description = 'kept'\n"
            "def register(plugins):\n    plugins.add_strategy(Keep)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = Registries(entry_points=lambda: [entry_point("slow", "chatmem_slow_one"),
                                              entry_point("quick", "chatmem_quick_one")])
    heard: list[Any] = []
    loaded.listen(heard.append)
    assert "slow-one" in loaded.strategies and "quick-one" in loaded.strategies
    assert [(p.plugin.name, p.kind) for p in heard] == [("slow", ProblemKind.SLOW)]
    assert float(heard[0].detail) >= 0.4
    assert loaded.problems == []  # loaded and used: nothing was skipped
    line = plugin_problem_line(heard[0]).plain
    assert "slow" in line and "skipped" not in line
    for module in ("chatmem_slow_one", "chatmem_quick_one"):
        sys.modules.pop(module, None)
