"""`chatmem strategies`."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from chatmem.cli import app

runner = CliRunner()


def test_strategies_json() -> None:
    from chatmem.memory import REGISTRY

    result = runner.invoke(app, ["strategies", "--json"])
    assert result.exit_code == 0
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert set(rows) == set(REGISTRY)
    assert rows["buffer"]["parameters"] == {}
    assert rows["window"]["parameters"] == {"k": 5}
    assert rows["tokens"]["parameters"] == {"max_tokens": 2000}
    assert all(r["description"].strip() for r in rows.values())


def test_strategies_table() -> None:
    result = runner.invoke(app, ["strategies"])
    assert result.exit_code == 0
    assert "max_tokens=2000" in result.stdout and "Combine two with A+B" in result.stdout
