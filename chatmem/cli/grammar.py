"""Help in the Typer/Click convention: `Usage: chatmem ask [OPTIONS] [SESSION] TEXT`.

This Typer prints required arguments in braces (`{text}`) and value types in
angle brackets (`--db <path>`). chatmem's usage lines and help use the
convention people know from Click: metavars upper case, required arguments
bare, optional ones in brackets, option values named by type (TEXT, PATH,
INTEGER) unless a metavar says more. Every command is built with
`ChatmemCommand` through `ChatmemTyper`.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import typer
from typer.core import TyperArgument, TyperCommand

TYPE_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "path": "PATH",
              "bool": "BOOLEAN"}
_TYPE = re.compile(r"<([\w ]+)>")


class HelpFormatter(Protocol):
    """What `format_options` writes to: the part of Typer's help formatter it uses (Typer does
    not export the class)."""

    def section(self, name: str) -> Any: ...

    def write_dl(self, rows: list[tuple[str, str]]) -> None: ...


def argument_name(param: TyperArgument) -> str:
    """`SESSION`, `TEXT`: the metavar, or the parameter's name upper case."""
    return str(param.metavar or param.name or "").upper()


def _type_name(match: re.Match[str]) -> str:
    return TYPE_NAMES.get(match.group(1), match.group(1).upper().replace(" ", "_"))


class ChatmemCommand(TyperCommand):
    # `ctx` is Typer's Context; typed Any because the base class names the vendored Click
    # Context, which Typer does not export (typer.Context narrows it, against Liskov).
    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                # An explicit metavar says it all (`[SESSION] TEXT`); else `NAME...` for many.
                many = param.nargs != 1 and not param.metavar
                name = argument_name(param) + ("..." if many else "")
                pieces.append(name if param.required else f"[{name}]")
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def format_options(self, ctx: Any, formatter: HelpFormatter) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            name, help_text = record
            if isinstance(param, TyperArgument):
                arguments.append((argument_name(param), help_text))
            else:
                options.append((_TYPE.sub(_type_name, name), help_text))
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        if options:
            with formatter.section("Options"):
                formatter.write_dl(options)


class ChatmemTyper(typer.Typer):
    """A Typer whose commands are ChatmemCommands unless a command asks for another class."""

    def command(self, name: str | None = None, *, cls: Any = None, **kwargs: Any) -> Any:
        return super().command(name, cls=cls or ChatmemCommand, **kwargs)
