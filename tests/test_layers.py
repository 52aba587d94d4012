"""Layers point one way, and no chatmem module imports its way back into a cycle.

The map below gives every module a layer; a module may import only its own layer or
lower ones. Imports are read from the source (every `import`, also inside functions
and under TYPE_CHECKING, relative ones resolved), so a lazy import that goes upwards
or closes a cycle is caught too.

    6  cli                  Typer commands; `chat` starts the REPL, so the CLI sits above it
    5  repl, mcp, serve     the front ends the CLI starts: the prompt-toolkit loop and its
                            slash commands, the MCP server, the OpenAI-compatible proxy
    4  render               every Rich renderable and JSON document; words app, engine and
                            evaluation values
    3  app                  the composition root (Workspace) and the use cases every front
                            end calls, with typed outcomes; testing, the strategy contract a
                            plugin author's tests run (the engine over a real store)
    2  engine, evaluation,  one turn; replay, what-ifs, scoring; product policy over the
       privacy.retention,   store (retention, the export archive, forgetting by mention);
       privacy.archive,     the registries filled by plugins and chatmem's own plugin, above
       privacy.restore,
       privacy.purge,       what they register (memory never imports them: it is handed
       plugins,             the strategy registry)
       plugin_entries,
       plugin_contents,
       builtin_plugin
    1  memory, providers,   strategies, models, embedders, the store, transcript formats;
       embeddings, store,   history is memory's view of the stored messages
       transcripts, history
    0  config, tokens,      settings, the tokenizer, text and FTS helpers, errors, the
       text, fts,           activity log, files attached to an input, what recall
       expected_text,       scoring counts as said (expected_text), and the privacy
       errors,
       activity,            checks that are pure functions
       attachments, privacy.secrets, privacy.sensitive (privacy.findings,
       privacy.named_details, privacy.unnamed_details), privacy.secret_names,
       privacy.credentials, privacy.word_lists, privacy.mentions,
       privacy.near_mentions, privacy.files,
       privacy.widths,
       clipboard (what /copy copies and how it reaches the clipboard), names (the
       nearest known name to one typed wrong), images (type, size and token cost),
       combining_marks (the marks fts folds out, a generated table), chinese_variants
       (traditional characters and their simplified forms fts folds to, a generated
       table), plugin_output (where
       a plugin's print() goes while chatmem runs its code), plugin_calls (what a
       plugin's code raises, as chatmem's errors), child_processes (the environment
       chatmem's own Python children start in), speakers (a group chat's speaker
       names, as serve and an import read them), reasoning (the thinking a model writes
       into its reply), lazy_patterns (regular expressions compiled at first use)

Adjusted from the brief's target where the code shows a better truth: the CLI above the
REPL (it starts it; the REPL's /export once imported the CLI for stored_transcript, which
now lives in transcripts), `history` beside memory and the store (it joins them), and
privacy split by what each module does (policy over the store vs pure text checks).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "chatmem"

LAYERS: dict[str, int] = {
    "chatmem.cli": 6, "chatmem.__main__": 6,
    "chatmem.repl": 5, "chatmem.mcp": 5, "chatmem.serve": 5,
    "chatmem.render": 4,
    "chatmem.app": 3, "chatmem.testing": 3,
    "chatmem.engine": 2, "chatmem.evaluation": 2, "chatmem.privacy.retention": 2,
    "chatmem.privacy.archive": 2, "chatmem.privacy.restore": 2, "chatmem.privacy.purge": 2,
    "chatmem.plugins": 2, "chatmem.plugin_entries": 2, "chatmem.plugin_contents": 2,
    "chatmem.builtin_plugin": 2,
    "chatmem.memory": 1, "chatmem.providers": 1, "chatmem.embeddings": 1, "chatmem.store": 1,
    "chatmem.transcripts": 1, "chatmem.history": 1,
    "chatmem": 0, "chatmem.config": 0, "chatmem.tokens": 0, "chatmem.text": 0, "chatmem.fts": 0,
    "chatmem.expected_text": 0,
    "chatmem.graphemes": 0, "chatmem.combining_marks": 0, "chatmem.chinese_variants": 0,
    "chatmem.errors": 0, "chatmem.activity": 0, "chatmem.attachments": 0, "chatmem.privacy": 0,
    "chatmem.notices": 0, "chatmem.history_notices": 0, "chatmem.indexing_notices": 0,
    "chatmem.context_warnings": 0,
    "chatmem.session_notices": 0,
    "chatmem.text_files": 0, "chatmem.text_digests": 0, "chatmem.text_caches": 0,
    "chatmem.clipboard": 0, "chatmem.child_processes": 0,
    "chatmem.timestamps": 0,
    "chatmem.timezones": 0,
    "chatmem.plugin_output": 0, "chatmem.plugin_calls": 0,
    "chatmem.privacy.secrets": 0, "chatmem.privacy.sensitive": 0, "chatmem.privacy.mentions": 0,
    "chatmem.privacy.near_mentions": 0,
    "chatmem.privacy.findings": 0, "chatmem.privacy.named_details": 0,
    "chatmem.privacy.unnamed_details": 0,
    "chatmem.privacy.secret_names": 0, "chatmem.privacy.credentials": 0,
    "chatmem.privacy.word_lists": 0, "chatmem.privacy.pasted": 0,
    "chatmem.privacy.secrets_zh": 0, "chatmem.privacy.secrets_en": 0,
    "chatmem.privacy.files": 0, "chatmem.privacy.widths": 0, "chatmem.names": 0,
    "chatmem.speakers": 0,
    "chatmem.images": 0, "chatmem.field_types": 0, "chatmem.reasoning": 0,
    "chatmem.lazy_patterns": 0,
}

@functools.cache
def parsed(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once for all the checks below (each walked every
    module's anew: ~2 s of CPU a check), and let go after this file's tests."""
    return ast.parse(path.read_text(encoding="utf-8"))


@pytest.fixture(autouse=True, scope="module")
def _parsed_once() -> Iterator[None]:
    yield
    parsed.cache_clear()


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


PATHS = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(name: str) -> str:
    """The chatmem module an import names (`chatmem.memory.Context` → `chatmem.memory`)."""
    while name not in PATHS:
        name = name.rpartition(".")[0]
    return name


def imports(name: str, path: Path) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found.update(_resolve(a.name) for a in node.names if a.name.startswith("chatmem"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            if base == "chatmem" or base.startswith("chatmem."):
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    found.add(full if full in PATHS else _resolve(base))
    found.discard(name)
    return found


@functools.cache
def graph() -> dict[str, set[str]]:
    """Every chatmem module's chatmem imports. Read when a test asks, not at import: every
    pytest-xdist worker imports this module to collect it, and reading ~370 modules' source
    was a sixth of the suite's collection time on each of them."""
    return {name: imports(name, path) for name, path in PATHS.items()}


def unit(module: str) -> str:
    """The longest prefix of `module` the layer map names."""
    name = module
    while name not in LAYERS:
        name = name.rpartition(".")[0]
    return name


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_has_a_layer() -> None:
    unmapped = sorted(m for m in PATHS if m != "chatmem" and unit(m) == "chatmem")
    assert unmapped == [], "add these to LAYERS"


def test_every_package_is_a_regular_package() -> None:
    """serve/ had no __init__.py, the one folder of fifteen: a namespace package, which
    pkgutil and packaging tools that look for __init__.py pass over."""
    folders = {p.parent for p in PATHS.values()}
    assert sorted(str(f.relative_to(PACKAGE)) for f in folders
                  if not (f / "__init__.py").exists()) == []


def test_every_test_module_has_a_name_of_its_own() -> None:
    """tests/ has no __init__.py files, so pytest imports each test module by its file name:
    tests/repl/commands/test_settings.py beside tests/config/test_settings.py stopped the
    whole run's collection ("import file mismatch") though each file passed alone."""
    tests = Path(__file__).parent
    seen: dict[str, list[str]] = {}
    for path in tests.rglob("test_*.py"):
        seen.setdefault(path.name, []).append(str(path.relative_to(tests)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


def test_no_module_imports_a_higher_layer() -> None:
    upward = sorted(
        f"{module} (layer {LAYERS[unit(module)]}) imports {target} "
        f"(layer {LAYERS[unit(target)]})"
        for module, targets in graph().items() for target in targets
        if LAYERS[unit(target)] > LAYERS[unit(module)]
    )
    assert upward == []


def test_no_import_cycle_between_modules() -> None:
    assert cycles(graph()) == []


def test_no_import_cycle_between_packages_of_one_layer() -> None:
    units: dict[str, set[str]] = {}
    for module, targets in graph().items():
        units.setdefault(unit(module), set()).update(
            unit(t) for t in targets if unit(t) != unit(module))
    assert cycles(units) == []


def test_the_checks_catch_what_they_forbid() -> None:
    # The checker itself can fail: cycles, lazy and TYPE_CHECKING imports are all seen.
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert "chatmem.plugins" in graph()["chatmem.cli.opening"]  # inside a function
    assert "chatmem.store" in graph()["chatmem.transcripts.format"]  # under TYPE_CHECKING
    assert "chatmem.memory.context" in graph()["chatmem.history"]  # `from chatmem.memory.x`
    assert LAYERS[unit("chatmem.repl.commands.sessions")] == 5
    assert LAYERS[unit("chatmem.privacy.purge")] > LAYERS[unit("chatmem.store.records")]


def test_strategies_are_handed_their_registry() -> None:
    # Memory builds combinations from a registry it is given; the plugins fill it from above.
    assert LAYERS[unit("chatmem.plugins")] > LAYERS[unit("chatmem.memory.registry")]
    plugin_side = ("chatmem.plugins", "chatmem.plugin_entries", "chatmem.plugin_contents",
                   "chatmem.builtin_plugin")
    assert [m for m, t in graph().items() if m.startswith("chatmem.memory")
            and any(i.startswith(plugin_side) for i in t)] == []


def test_repl_commands_never_import_the_loop() -> None:
    # The loop imports the commands to fill the table; the way back would be a cycle.
    assert [m for m, t in graph().items()
            if m.startswith("chatmem.repl") and "chatmem.repl.loop" in t] == []
    assert graph()["chatmem.repl"] == set(), "the package's __init__ imports nothing"


def test_table_and_chat_sit_below_the_commands() -> None:
    def importers(target: str, among: str) -> list[str]:
        return [m for m, t in graph().items() if m.startswith(among)
                and any(i == target or i.startswith(target + ".") for i in t)]

    assert importers("chatmem.repl.commands", "chatmem.repl.table") == []
    assert importers("chatmem.repl.commands", "chatmem.repl.chat") == []
    assert importers("chatmem.repl.table", "chatmem.repl.chat") == []


DRIVERS = ("sqlite3", "sqlcipher3", "psycopg")


def drivers_named(path: Path) -> list[str]:
    """The database drivers a module imports (anywhere in it) or names as a module string
    (`type(e).__module__.startswith("psycopg")`)."""
    def is_driver(name: str) -> bool:
        return name.split(".")[0] in DRIVERS

    found = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if is_driver(a.name)]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found += [node.module] if is_driver(node.module) else []
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += [node.value] if is_driver(node.value) and " " not in node.value else []
    return found


def test_only_the_store_knows_the_database_drivers() -> None:
    # The backends turn every driver error into a StoreError of its kind, so nothing above
    # the store catches a driver's exception by its class or its module's name.
    named = {m: drivers_named(p) for m, p in PATHS.items()
             if not (m == "chatmem.store" or m.startswith("chatmem.store."))}
    assert {m: d for m, d in named.items() if d} == {}
    assert drivers_named(PATHS["chatmem.store.sqlite_backend"]) != []


def test_the_driver_check_sees_imports_and_module_names(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import sqlite3\nfrom psycopg import errors\n"
                      "def f(e):\n    import sqlcipher3.dbapi2\n"
                      "    return type(e).__module__.startswith('psycopg')\n"
                      "HELP = 'sqlite3 FILE shows where'\n", encoding="utf-8")
    assert sorted(drivers_named(module)) == ["psycopg", "psycopg", "sqlcipher3.dbapi2",
                                             "sqlite3"]


def third_party_imports(path: Path, package: str) -> list[tuple[str, str]]:
    """(module, name) of every import from `package` in a module, anywhere in it."""
    found = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.split(".")[0] == package]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module \
                and node.module.split(".")[0] == package:
            found += [(node.module, a.name) for a in node.names]
    return found


CONSOLES = {("rich.console", "Console"), ("rich.console", "RenderableType")}
"""What a front end may name of Rich: the console it prints on, and the type of what
render gives it to print."""


def test_only_render_builds_rich_renderables() -> None:
    outside = {m: [i for i in third_party_imports(p, "rich") if i not in CONSOLES]
               for m, p in PATHS.items() if unit(m) != "chatmem.render"}
    assert {m: i for m, i in outside.items() if i} == {}


def test_only_tokens_imports_tiktoken() -> None:
    assert sorted(m for m, p in PATHS.items() if third_party_imports(p, "tiktoken")) == [
        "chatmem.tokens"]


def printers(path: Path) -> list[str]:
    """print() calls and writes to sys.stdout or sys.stderr in a module (asking whether
    one is a terminal is not writing)."""
    found = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "print":
            found.append(f"print() at line {node.lineno}")
        elif isinstance(node, ast.Attribute) and node.attr in ("write", "writelines") \
                and isinstance(node.value, ast.Attribute) \
                and node.value.attr in ("stdout", "stderr") \
                and isinstance(node.value.value, ast.Name) and node.value.value.id == "sys":
            found.append(f"sys.{node.value.attr}.{node.attr} at line {node.lineno}")
    return found


def test_core_code_never_prints() -> None:
    """Below the front ends (layer 3 and lower), nothing writes to the terminal: what a
    command shows is render's, printed by the CLI or the REPL."""
    core = {m: printers(p) for m, p in PATHS.items() if LAYERS[unit(m)] <= 3}
    assert {m: found for m, found in core.items() if found} == {}


def test_the_print_and_rich_checks_see_what_they_forbid(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import sys\nfrom rich.table import Table\nfrom rich.console import "
                      "Console\ndef f():\n    import tiktoken\n    print('x')\n"
                      "    sys.stderr.write('y')\n    return sys.stdout.isatty()\n",
                      encoding="utf-8")
    assert [i for i in third_party_imports(module, "rich") if i not in CONSOLES] == [
        ("rich.table", "Table")]
    assert third_party_imports(module, "tiktoken") == [("tiktoken", "")]
    assert printers(module) == ["print() at line 6", "sys.stderr.write at line 7"]


@functools.cache
def classes_in(path: Path) -> frozenset[str]:
    """The classes a module defines (read once: every module is checked against errors')."""
    return frozenset(node.name for node in ast.walk(parsed(path))
                     if isinstance(node, ast.ClassDef))


def error_classes_outside(errors: Path, path: Path) -> list[str]:
    """Classes a module derives from one of chatmem.errors' exceptions."""
    ours = classes_in(errors)
    found = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.ClassDef):
            bases = {b.id if isinstance(b, ast.Name) else b.attr
                     for b in node.bases if isinstance(b, ast.Name | ast.Attribute)}
            if bases & ours:
                found.append(node.name)
    return found


def test_every_chatmem_error_is_in_errors() -> None:
    """One exception hierarchy, in one module: a front end words and maps (to an exit code,
    an HTTP status) what it can see there."""
    errors = PATHS["chatmem.errors"]
    outside = {m: error_classes_outside(errors, p) for m, p in PATHS.items()
               if m != "chatmem.errors"}
    assert {m: found for m, found in outside.items() if found} == {}
