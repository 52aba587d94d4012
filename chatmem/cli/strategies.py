"""`chatmem strategies`."""

from __future__ import annotations

from typing import Any

from chatmem.cli.common import JsonOption, consoles, handles_errors, print_json


@handles_errors
def strategies(json_out: JsonOption = False) -> None:
    """List the memory strategies with their parameters and defaults.

    Example: chatmem strategies --json
    """
    from chatmem import render
    from chatmem.memory import REGISTRY
    from chatmem.memory.params import format_params

    rows: list[dict[str, Any]] = [
        {
            "name": name,
            "parameters": {p.name: p.default for p in cls.PARAMS},
            "description": cls.description,
        }
        for name, cls in REGISTRY.items()
    ]
    if json_out:
        print_json(rows)
        return
    shown = [
        {**r, "parameters": format_params(r["parameters"]) or "—"}
        for r in rows
    ]
    consoles()[0].print(render.table(shown, ["name", "parameters", "description"]))
    consoles()[0].print(render.notice_line("Combine two with A+B, e.g. window+entity."))
