"""`chatmem models`: what the model endpoint serves, with the config's aliases."""

from typing import Annotated

import typer

from chatmem.cli.opening import registries, settings_from
from chatmem.cli.options import ConfigOption, JsonOption, ModelOption, ProviderOption
from chatmem.cli.output import handles_errors, print_json


@handles_errors
def models(
    provider: ProviderOption = None,
    model: ModelOption = None,
    json_output: JsonOption = False,
    config: ConfigOption = None,
    aliases_only: Annotated[
        bool, typer.Option("--aliases", help="List only the config's aliases.")] = False,
) -> None:
    """List the models the endpoint serves (/v1/models), each with its aliases from the config.

    \b
    Example: OPENAI_BASE_URL=http://127.0.0.1:11434/v1 chatmem models
    """
    settings = settings_from(config, None, provider, model)
    served: list[str] = []
    if aliases_only:
        name = settings.provider
    else:
        name, served = registries().available_models(settings)
    aliases: dict[str, list[str]] = {}
    for alias, target in sorted(settings.aliases.items()):
        aliases.setdefault(target, []).append(alias)
    if json_output:
        print_json({"command": "models", "provider": name, "models": served,
                    "aliases": dict(sorted(settings.aliases.items()))})
        return
    from chatmem.render import printable

    # The ids are the endpoint's and the names the config's: an escape sequence in one
    # would drive the terminal (or one `cat` later shows the file on). JSON keeps them exact.
    for served_name in served:
        names = aliases.get(served_name)
        print(printable(served_name + (f"  (alias: {', '.join(names)})" if names else "")))
    for target, names in aliases.items():
        if target not in served:
            print(printable(f"{', '.join(names)} → {target}" + (
                "" if aliases_only else "  (alias of a model not served here)")))
