"""The `chatmem` command line: thin commands over the engine, store and render layers.

Heavy modules (openai, tiktoken, xllamacpp, the store) are imported inside the
commands, so `chatmem --help` stays fast.
"""

from __future__ import annotations

import typer

from chatmem.cli import chat, config_cmd, sessions, strategies

app = typer.Typer(
    name="chatmem",
    help="A chat REPL whose memory you can choose, see and measure.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
    rich_markup_mode=None,
)
app.command("chat")(chat.chat)
app.command("ask")(chat.ask)
app.command("strategies")(strategies.strategies)
app.add_typer(sessions.app, name="sessions")
app.add_typer(config_cmd.app, name="config")


def main() -> None:
    app()
