"""Layers point one way (cli/repl → engine/replay → memory, providers, store, tokens).

Imports are read from the source (every `import`, also inside functions and
under TYPE_CHECKING), so a lazy import that goes upwards is caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "chatmem"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("chatmem")}


MODULES = {module_name(p): imports(p) for p in PACKAGE.rglob("*.py")}


def importers_of(prefix: str, among: str) -> list[str]:
    return sorted(
        name for name, imported in MODULES.items()
        if name.startswith(among)
        and any(i == prefix or i.startswith(prefix + ".") for i in imported)
    )


@pytest.mark.parametrize("lower", ["chatmem.engine", "chatmem.memory", "chatmem.store",
                                   "chatmem.providers", "chatmem.render", "chatmem.tokens",
                                   "chatmem.evaluation", "chatmem.transcripts", "chatmem.config",
                                   "chatmem.privacy"])
def test_lower_layers_never_import_the_cli_or_the_repl(lower: str) -> None:
    assert importers_of("chatmem.repl", lower) == []
    assert importers_of("chatmem.cli", lower) == []


def test_repl_commands_never_import_the_loop() -> None:
    # The loop imports the commands to fill the table; the way back would be a cycle.
    assert importers_of("chatmem.repl.loop", "chatmem.repl") == []
    assert MODULES["chatmem.repl"] == set(), "the package's __init__ imports nothing"


def test_table_and_chat_sit_below_the_commands() -> None:
    assert importers_of("chatmem.repl.commands", "chatmem.repl.table") == []
    assert importers_of("chatmem.repl.commands", "chatmem.repl.chat") == []
    assert importers_of("chatmem.repl.table", "chatmem.repl.chat") == []
