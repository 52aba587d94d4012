"""The README's "Writing a plugin" example is a package that installs and works.

Its two files are taken from the README's text, built with pip into a fresh virtual
environment, and used through `python -m chatmem` there. The environment sees this
one's packages (chatmem itself and hatchling, through a .pth file), so pip needs no
network (`--no-index --no-build-isolation`); the plugin is installed in the fresh
environment only, and found there through its entry point like any user's.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from plugin_site import readme_files

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str | Path, stdin: str = "", cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CHATMEM_CONFIG", "CHATMEM_DB",
                        "PYTHONPATH")}
    # chatmem from this checkout, as the tests' own imports: the outer environment's may be
    # installed from another (a worktree's tests would run the other's chatmem).
    return subprocess.run([str(a) for a in args], input=stdin, capture_output=True, text=True,
                          env={**env, "COLUMNS": "120", "PYTHONPATH": str(ROOT)}, cwd=cwd,
                          timeout=300)


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fresh environment's interpreter, with the README's package installed by pip."""
    assert importlib.util.find_spec("hatchling"), (
        "hatchling, the example's build backend, is missing: pip install -e '.[test]'")
    folder = tmp_path_factory.mktemp("readme-plugin")
    package = folder / "chatmem-anchor"
    package.mkdir()
    files = readme_files()
    for name in ("pyproject.toml", "chatmem_anchor.py", "test_chatmem_anchor.py"):
        (package / name).write_text(files[name], encoding="utf-8")
    venv.create(folder / "venv", with_pip=False)
    python = folder / "venv" / "bin" / "python"
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    ours = sysconfig.get_paths()["purelib"]
    (Path(site.stdout.strip()) / "outer-environment.pth").write_text(
        f"import site; site.addsitedir({ours!r})\n", encoding="utf-8")
    installed = run(python, "-m", "pip", "install", "--no-deps", "--no-index",
                    "--no-build-isolation", "--disable-pip-version-check",
                    "--cache-dir", folder / "pip-cache", package)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return python


def test_the_readme_plugin_installs_into_its_environment_only(python: Path) -> None:
    found = run(python, "-c", "import chatmem_anchor, sys; print(chatmem_anchor.__file__, "
                              "sys.prefix)")
    module, prefix = found.stdout.split()
    assert Path(module).is_relative_to(prefix) and Path(prefix) == python.parent.parent
    here = run(sys.executable, "-c", "import chatmem_anchor")
    assert here.returncode != 0  # not in the environment the tests run in


def test_chatmem_lists_explains_evaluates_and_chats_with_the_readme_plugin(
    python: Path, tmp_path: Path
) -> None:
    listed = run(python, "-m", "chatmem", "strategies")
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr == ""  # no plugin warning
    anchor = [line for line in listed.stdout.splitlines() if line.startswith("│ anchor ")]
    assert anchor and "head=1 k=3" in anchor[0] and "chatmem-anchor" in anchor[0]
    shown = json.loads(run(python, "-m", "chatmem", "strategies", "anchor", "--json").stdout)
    assert [p["name"] for p in shown[0]["parameters"]] == ["head", "k"]

    scored = run(python, "-m", "chatmem", "eval", "sessions/support.jsonl", "-s", "anchor",
                 "--provider", "scripted", "--json")
    assert scored.returncode == 0, scored.stderr
    [run_] = json.loads(scored.stdout)["strategies"]
    assert run_["strategy"]["name"] == "anchor" and run_["eval"]["per_probe"]

    db = tmp_path / "chat.db"
    chatted = run(python, "-m", "chatmem", "chat", "trip", "-s", "anchor+window",
                  "--provider", "scripted", "--db", db,
                  stdin="my order is ORD-7731\n我们五月去杭州\nwhat was my order?\n")
    assert chatted.returncode == 0, chatted.stderr
    assert chatted.stdout.splitlines() == ["echo #1: my order is ORD-7731",
                                           "echo #2: 我们五月去杭州",
                                           "echo #3: what was my order?"]
    inspected = json.loads(run(python, "-m", "chatmem", "inspect", "trip", "--json",
                               "--db", db).stdout)
    assert inspected["strategy"]["name"] == "anchor+window"
    assert "ORD-7731" in " ".join(m["content"] for m in inspected["messages"])


def test_the_contract_test_covers_the_installed_plugin(python: Path) -> None:
    collected = run(python, "-m", "pytest", "tests/test_contract.py", "--collect-only", "-q",
                    "-p", "no:cacheprovider")
    assert collected.returncode == 0, collected.stdout[-2000:]
    assert "tests/test_contract.py::test_strategy_contract[anchor]" in collected.stdout
    assert "tests/test_contract.py::test_strategy_contract_on_postgres[anchor]" in \
        collected.stdout


def test_the_readme_contract_test_runs_outside_a_checkout(python: Path) -> None:
    """The README's test of the package calls chatmem.testing: from the package's folder,
    with none of a checkout's tests/ helpers on the path. Its quick test here;
    check_strategy's whole run is in the slow one below."""
    package = python.parent.parent.parent / "chatmem-anchor"
    checked = run(python, "-m", "pytest", "test_chatmem_anchor.py", "-q", "-p",
                  "no:cacheprovider", "-k", "greeting", cwd=package)
    assert checked.returncode == 0, checked.stdout[-3000:]
    assert "1 passed" in checked.stdout


@pytest.mark.slow
def test_the_readme_contract_test_passes_the_readme_plugin(python: Path) -> None:
    """Slow (about 35 s here): check_strategy("anchor"), 34 conversations."""
    package = python.parent.parent.parent / "chatmem-anchor"
    checked = run(python, "-m", "pytest", "test_chatmem_anchor.py", "-q", "-p",
                  "no:cacheprovider", cwd=package)
    assert checked.returncode == 0, checked.stdout[-3000:]
    assert "2 passed" in checked.stdout
