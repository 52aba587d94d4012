"""`chatmem config show|path|init`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chatmem.cli.common import ConfigOption, JsonOption, consoles, fail, handles_errors, print_json

app = typer.Typer(help="See and create the config file.", no_args_is_help=True)


@app.command("show")
@handles_errors
def show(config: ConfigOption = None, json_out: JsonOption = False) -> None:
    """Show the settings in effect and where they come from (never the API key).

    Example: chatmem config show --json
    """
    from chatmem import render
    from chatmem.config import load_settings

    data = load_settings(config).public()
    if json_out:
        print_json(data)
    else:
        consoles()[0].print(render.key_values(data))


@app.command("path")
@handles_errors
def path(config: ConfigOption = None) -> None:
    """Print the path of the config file chatmem reads.

    Example: chatmem config path
    """
    from chatmem.config import default_config_path

    print(config or default_config_path())


@app.command("init")
@handles_errors
def init(
    config: ConfigOption = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented config file to start from.

    Example: chatmem config init && $EDITOR "$(chatmem config path)"
    """
    from chatmem.config import default_config_path, example_config

    target: Path = config or default_config_path()
    if target.exists() and not force:
        raise fail(f"{target} already exists (use --force to overwrite)")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(example_config(), encoding="utf-8")
    print(target)
