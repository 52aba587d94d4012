"""What a built wheel holds beyond the modules: the py.typed marker (so mypy checks a
script that uses chatmem as a library, not "missing library stubs or py.typed marker") and
the example config `config init` writes."""

from __future__ import annotations

import importlib.util
import zipfile
from importlib.resources import files
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_package_is_marked_typed() -> None:
    assert files("chatmem").joinpath("py.typed").is_file()


def test_a_built_wheel_holds_the_typed_marker_and_the_example_config(tmp_path: Path) -> None:
    if importlib.util.find_spec("hatchling") is None:
        pytest.fail("hatchling, chatmem's build backend, is missing: pip install -e '.[test]'")
    from hatchling.builders.wheel import WheelBuilder

    built = list(WheelBuilder(str(ROOT)).build(directory=str(tmp_path), versions=["standard"]))
    assert len(built) == 1
    names = set(zipfile.ZipFile(built[0]).namelist())
    assert {"chatmem/py.typed", "chatmem/config.example.toml", "chatmem/__init__.py"} <= names
