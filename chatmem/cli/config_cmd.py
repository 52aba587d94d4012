"""`chatmem config show|path|init`."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from chatmem.cli.grammar import ChatmemTyper
from chatmem.cli.options import ConfigOption, JsonOption
from chatmem.cli.output import consoles, fail, handles_errors, print_json, write_private
from chatmem.errors import ConfigError

if TYPE_CHECKING:
    from chatmem.config.settings import Settings
    from chatmem.plugins import Registries

app = ChatmemTyper(help="See and create the config file.\n\n\b\nExample: chatmem config show",
                   no_args_is_help=True)


@app.command("show")
@handles_errors
def show(config: ConfigOption = None, json_out: JsonOption = False) -> None:
    """Show the settings in effect and where they come from (never the API key).

    \b
    Example: chatmem config show --json
    """
    from chatmem import render
    from chatmem.cli.opening import registries
    from chatmem.config.loader import load_settings
    from chatmem.config.paths import config_path
    from chatmem.render.terminal import on_screen

    registered = registries()
    settings = load_settings(config, registered=registered)
    if json_out:
        public = settings.public()
        public["history_key"] = _history_key(settings, public["history_key"])
        print_json(public)
        return
    rows = []
    for key, value, source in settings.rows():
        if key in ("db", "config_file"):
            continue  # shown once above the table
        if key == "history_key":
            value = _history_key(settings, value)
        if key == "max_reply_tokens" and not value:
            value = _effective_reply_cap(settings)
        if value and (missing := _unprovided(key, value, registered)):
            # Kept by the loader as an absent plugin's name (it fails where it is used): the
            # command someone runs to see why chatmem fails said nothing about it.
            named = "" if missing == [value] else f"{', '.join(missing)} "
            value = f"{value} ({named}not installed: nothing here provides it)"
        if settings.source is not None and source == str(settings.source):
            source = "file"
        rows.append({"key": key, "value": value or "—",
                     "source": "" if source == "default" else source})
    file = settings.source or config_path(config)
    out = consoles()[0]
    for line in render.named_lines({
            "config file": f"{file}" + ("" if file.exists() else " (none: defaults apply)"),
            "history file" if settings.location.kind == "sqlite" else "history database":
                settings.location.shown}):
        # One line in a pipe, for scripts; on a screen wrapped by Rich between words, where
        # the terminal would fold the line at its edge, mid-word.
        out.print(line, soft_wrap=not on_screen(out))
    out.print()
    out.print(render.config_table(rows))


def _unprovided(key: str, value: str, registered: "Registries") -> list[str]:
    """The names in `value` of setting `key` (a provider, an embedder, a strategy or the
    parts of A+B) that no installed plugin, nor chatmem, provides."""
    from chatmem.config.pairs import split_names

    if key in ("provider", "helper_provider"):
        return [] if value in registered.provider_names() else [value]
    if key == "embeddings.provider":
        return [] if value in registered.embedder_names() else [value]
    if key == "strategy":
        known = registered.strategies.names()
        return [part for part in split_names(value.partition(":")[0]) if part not in known]
    return []


def _history_key(settings: "Settings", shown: str) -> str:
    """Where the key comes from; with none, what the history file is, looked at (not
    guessed from the settings: a file encrypted with a key kept elsewhere is encrypted)."""
    from chatmem.app.privacy import history_file_kind
    from chatmem.config.location import LocationKind

    if settings.key_source() or settings.location.kind is not LocationKind.SQLITE \
            or settings.location.target == ":memory:":
        return shown
    kind = history_file_kind(settings.location.path)
    if kind == "encrypted":
        return f"{shown} (the history file is encrypted: it cannot be opened without its key)"
    if kind == "plain":
        return f"{shown} (the history file is not encrypted)"
    if kind == "missing":
        return f"{shown} (no history file yet: it will be created unencrypted)"
    return f"{shown} (could not tell whether the history file is encrypted)"


def _effective_reply_cap(settings: "Settings") -> str:
    """What caps a reply when max_reply_tokens is unset: it depends on the provider."""
    from chatmem.config.settings import LOCAL_MAX_REPLY_TOKENS, OPENAI_MAX_REPLY_TOKENS
    from chatmem.errors import NoModelAvailable
    from chatmem.providers import resolve_provider_name

    try:
        provider = resolve_provider_name(settings)
    except NoModelAvailable:
        return "—"
    if provider == "local":
        return f"{LOCAL_MAX_REPLY_TOKENS} (the local model's default)"
    if provider == "openai":
        return f"{OPENAI_MAX_REPLY_TOKENS} (an endpoint's default)"
    return "none (no cap)"


@app.command("path")
@handles_errors
def path(config: ConfigOption = None) -> None:
    """Print the path of the config file chatmem reads.

    \b
    Example: chatmem config path
    """
    from chatmem.config.paths import config_path

    print(config_path(config))


@app.command("init")
@handles_errors
def init(
    config: ConfigOption = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented config file to start from.

    \b
    Example: chatmem config init && $EDITOR "$(chatmem config path)"
    """
    from chatmem.config.paths import config_path, example_config

    target: Path = config_path(config)
    try:
        if target.exists() and not force:
            raise fail(f"{target} already exists (use --force to overwrite)")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ConfigError(f"{target}: cannot create its folder {target.parent}: "
                              f"{e.strerror}") from None
        write_private(target, example_config())
    except OSError as e:
        # Not the error's own words: they name the temporary file written first.
        raise ConfigError(f"{target}: cannot write the config file: {e.strerror}") from None
    print(target)
