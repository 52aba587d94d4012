"""The front ends (cli, repl, serve, mcp) reach the history through chatmem/app only.

test_layers lets a front end import the store (a lower layer): its records and types cross
layers as values. What it does not catch is a front end doing the store's work itself: a
call into one of the store's repositories (`ws.store.history.message_count(...)`), or a
store module imported to call its functions (`from chatmem.store import cipher`). Each
such read is a use case chatmem/app has, or should have, for every front end."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "chatmem"
FRONT_ENDS = ("cli", "repl", "serve", "mcp")
MODULES = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts) for p in
           PACKAGE.rglob("*.py")}


def store_reach(path: Path) -> list[str]:
    """`line: what` for each repository call on a store and each store module imported."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                and isinstance(node.value.value, ast.Attribute)
                and node.value.value.attr == "store"):
            found.append(f"{node.lineno}: .store.{node.value.attr}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "chatmem.store"):
            found += [f"{node.lineno}: {node.module}.{a.name}" for a in node.names
                      if f"{node.module}.{a.name}" in MODULES or a.name[0].islower()]
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: {a.name}" for a in node.names
                      if a.name.startswith("chatmem.store")]
    return found


def test_front_ends_never_call_the_stores_repositories_or_functions() -> None:
    reached = {str(path.relative_to(PACKAGE)): store_reach(path)
               for folder in FRONT_ENDS for path in sorted((PACKAGE / folder).rglob("*.py"))}
    assert {module: found for module, found in reached.items() if found} == {}


def test_the_check_sees_repository_calls_and_store_modules(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from chatmem.store import Store, cipher\n"
        "from chatmem.store.records import TurnStatus\n"
        "from chatmem.store.recall import in_batches\n"
        "import chatmem.store.cipher\n"
        "def f(ws, engine):\n"
        "    cipher.file_kind(ws.settings.location.path)\n"
        "    ws.store.encrypted  # a property of the store itself: a value\n"
        "    return engine.store.history.turn_count(engine.session.id)\n", encoding="utf-8")
    assert store_reach(module) == ["1: chatmem.store.cipher", "3: chatmem.store.recall.in_batches",
                                   "4: chatmem.store.cipher", "8: .store.history.turn_count"]
