"""`chatmem config show|path|init`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chatmem.cli.common import ConfigOption, JsonOption, consoles, fail, handles_errors, print_json
from chatmem.cli.grammar import ChatmemTyper

app = ChatmemTyper(help="See and create the config file.", no_args_is_help=True)


@app.command("show")
@handles_errors
def show(config: ConfigOption = None, json_out: JsonOption = False) -> None:
    """Show the settings in effect and where they come from (never the API key).

    Example: chatmem config show --json
    """
    from chatmem import render
    from chatmem.config import load_settings

    settings = load_settings(config)
    if json_out:
        print_json(settings.public())
    else:
        consoles()[0].print(render.table(
            [{"key": k, "value": v, "source": src} for k, v, src in settings.rows()],
            ["key", "value", "source"]))


@app.command("path")
@handles_errors
def path(config: ConfigOption = None) -> None:
    """Print the path of the config file chatmem reads.

    Example: chatmem config path
    """
    from chatmem.config import config_path

    print(config_path(config))


@app.command("init")
@handles_errors
def init(
    config: ConfigOption = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented config file to start from.

    Example: chatmem config init && $EDITOR "$(chatmem config path)"
    """
    from chatmem.config import config_path, example_config

    target: Path = config_path(config)
    if target.exists() and not force:
        raise fail(f"{target} already exists (use --force to overwrite)")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(example_config(), encoding="utf-8")
    print(target)
