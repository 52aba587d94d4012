"""The README's plugin modules type-check under `mypy --strict`, as an author's package is
checked: every name they import from chatmem is one chatmem exports (mypy's strict mode
refuses a name a module only imported from another, `chatmem.plugins.Plugins` was one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from plugin_site import readme_files

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_plugin_modules_pass_mypy_strict(tmp_path: Path) -> None:
    modules = [name for name in readme_files() if name.endswith(".py")]
    assert {"chatmem_anchor.py", "chatmem_notes.py", "chatmem_shout.py"} <= set(modules)
    for name in modules:
        (tmp_path / name).write_text(readme_files()[name], encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--config-file",
         os.devnull, *modules], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert checked.returncode == 0, checked.stdout
