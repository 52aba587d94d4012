"""`chatmem strategies`."""

from typing import Annotated, Any

import typer

from chatmem.cli.options import JsonOption
from chatmem.cli.output import consoles, handles_errors, print_json


@handles_errors
def strategies(
    name: Annotated[str | None, typer.Argument(
        metavar="[NAME]", show_default=False,
        help="A strategy (or A+B) to explain parameter by parameter.")] = None,
    json_out: JsonOption = False,
) -> None:
    """List the memory strategies with their parameters and defaults, or explain one.

    Example: chatmem strategies retrieval
    """
    if name is not None:
        explain(name, json_out)
        return
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


def explain(spec: str, json_out: bool) -> None:
    """Each strategy in `spec` (one, or A+B) with every parameter's default, range and meaning."""
    from chatmem.memory import REGISTRY, create_strategy
    from chatmem.render.strategies import strategy_help

    create_strategy(spec)  # an unknown name fails here, naming the valid ones
    names = spec.split("+")
    prefix = len(names) > 1
    if json_out:
        print_json([{
            "name": name,
            "description": REGISTRY[name].description,
            "parameters": [{"name": f"{name}.{p.name}" if prefix else p.name,
                            "default": p.default, "takes": p.range_text(), "help": p.help,
                            "minimum": p.minimum, "maximum": p.maximum,
                            "choices": list(p.choices) or None}
                           for p in REGISTRY[name].PARAMS],
        } for name in names])
        return
    out = consoles()[0]
    for i, name in enumerate(names):
        if i:
            out.print()
        out.print(strategy_help(name, REGISTRY[name].description, REGISTRY[name].PARAMS,
                                prefix=f"{name}." if prefix else ""))
