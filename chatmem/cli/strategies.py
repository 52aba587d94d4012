"""`chatmem strategies`."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from chatmem.cli.opening import registries
from chatmem.cli.options import JsonOption
from chatmem.cli.output import consoles, handles_errors, print_json

if TYPE_CHECKING:
    from chatmem.memory.base import BaseStrategy


@handles_errors
def strategies(
    name: Annotated[str | None, typer.Argument(
        metavar="NAME", show_default=False,
        help="A strategy (or A+B) to explain parameter by parameter.")] = None,
    json_out: JsonOption = False,
) -> None:
    """List the memory strategies with their parameters and defaults, or explain one.

    \b
    Example: chatmem strategies retrieval
    """
    if name is not None:
        explain(name, json_out)
        return
    from chatmem import render
    from chatmem.memory.params import format_params

    loaded = registries()
    rows: list[dict[str, Any]] = [
        {
            "name": name,
            "parameters": {p.name: p.default for p in cls.PARAMS},
            "defaults": {p.name: p.default for p in cls.PARAMS},
            "description": cls.description,
            **capabilities(cls),
            "plugin": _plugin(name),
        }
        for name, cls in loaded.strategies.items()
    ]
    if json_out:
        print_json(rows)
        return
    shown = [
        {**r, "parameters": format_params(r["parameters"]) or "—"}
        for r in rows
    ]
    columns = ["name", "parameters", "description"]
    if any(r["plugin"] for r in rows):
        columns.append("plugin")
    consoles()[0].print(render.table(shown, columns))
    consoles()[0].print(render.notice_line("Combine two with A+B, e.g. window+entity."),
                        soft_wrap=True)


def capabilities(cls: "type[BaseStrategy]") -> dict[str, bool]:
    """What the rest of chatmem relies on a strategy for, as its class declares it."""
    return {"sends_facts": cls.sends_facts, "summarizes": cls.summarizes,
            "needs_embedder": cls().needs_embedder, "keeps_state": cls.keeps_state,
            "calls_helper": cls.calls_helper, "in_default_eval": cls.in_default_eval}


def _plugin(name: str) -> str | None:
    """The distribution a plugin's strategy comes from (`chatmem-echo 0.1.0`); None for
    chatmem's own."""
    source = registries().origin("strategy", name)
    if source is None or source.builtin:
        return None
    return " ".join(filter(None, (source.dist or source.name, source.version)))


def explain(text: str, json_out: bool) -> None:
    """Each strategy in `text` (one, or A+B) with every parameter's default, range and
    meaning."""
    from chatmem.render.strategies import strategy_help

    loaded = registries().strategies
    spec = loaded.parse(text)  # an unknown name fails here, naming the valid ones
    prefix = spec.combined
    if json_out:
        print_json([{
            "name": name,
            "description": loaded[name].description,
            "parameters": [{"name": f"{name}.{p.name}" if prefix else p.name,
                            "default": p.default, "takes": p.range_text(), "help": p.help,
                            "minimum": p.minimum, "maximum": p.maximum,
                            "choices": list(p.choices) or None}
                           for p in loaded[name].PARAMS],
            # the one shape both listings share (`parameters` is a dict in the other)
            "defaults": {f"{name}.{p.name}" if prefix else p.name: p.default
                         for p in loaded[name].PARAMS},
            **capabilities(loaded[name]),
            "plugin": _plugin(name),
        } for name in spec.names])
        return
    out = consoles()[0]
    for i, name in enumerate(spec.names):
        if i:
            out.print()
        out.print(strategy_help(name, loaded[name].description, loaded[name].PARAMS,
                                prefix=f"{name}." if prefix else "", plugin=_plugin(name)))
