"""The `chatmem` command line: thin commands over the engine, store and render layers.

Heavy modules (openai, tiktoken, xllamacpp, the store) are imported inside the
commands, so `chatmem --help` stays fast.
"""

from __future__ import annotations

import typer

from chatmem.cli import chat, config_cmd, facts, sessions, strategies
from chatmem.cli import inspect as inspect_cmd
from chatmem.cli import replay as replay_cmd

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
app.command("inspect")(inspect_cmd.inspect)
app.command("replay")(replay_cmd.replay_command)
app.command("eval")(replay_cmd.eval_command)
app.add_typer(sessions.app, name="sessions")
app.add_typer(config_cmd.app, name="config")
app.add_typer(facts.app, name="facts")


def main() -> None:
    app()
