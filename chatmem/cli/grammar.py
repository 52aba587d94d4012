"""Help in the Typer/Click convention: `Usage: chatmem ask [OPTIONS] [SESSION] TEXT`.

This Typer prints required arguments in braces (`{text}`) and value types in
angle brackets (`--db <path>`). chatmem's usage lines and help use the
convention people know from Click: metavars upper case, required arguments
bare, optional ones in brackets, option values named by type (TEXT, PATH,
INTEGER) unless a metavar says more. Every command is built with
`ChatmemCommand` through `ChatmemTyper`, which also refuses, by name, a text
parameter holding bytes that are not UTF-8.
"""

from __future__ import annotations

import os
import re
from typing import Any, Protocol

import typer
from typer.core import TyperArgument, TyperCommand, TyperOption

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


NOT_UTF8 = "must be UTF-8 text; it holds bytes that are not"


def raw_text(value: Any) -> Any:
    """A parameter's callback that lets text that is not UTF-8 through: the command replaces
    such bytes itself and says so (`ask`'s words). Every other text parameter refuses them."""
    return value


def utf8_argument(arg: str) -> str:
    """An argument as the UTF-8 text it is, however the locale decoded it: under an ASCII
    locale 北京 came in as escaped bytes and was refused as "not UTF-8". Bytes that are not
    UTF-8 stay escaped, and are refused (or replaced) as before. Text arguments only
    (cli.grammar): a file name is opened by the bytes the locale decoded, and read as UTF-8
    under a Latin-1 one it named another file."""
    try:
        return os.fsencode(arg).decode("utf-8")
    except UnicodeError:
        return arg


def file_name(value: Any) -> Any:
    """A parameter's callback for a text option that names a file (`--db`): its bytes are the
    file's name, whatever they decode to, so they are neither read as UTF-8 nor refused."""
    return value


def _as_typed(value: Any) -> Any:
    """Text arguments as the UTF-8 they were typed in (utf8_argument)."""
    if isinstance(value, str):
        return utf8_argument(value)
    if isinstance(value, list | tuple):
        return type(value)(utf8_argument(v) if isinstance(v, str) else v for v in value)
    return value


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, str)]
    return []


ONCE = ("strategy",)
"""Options given twice with two values are refused: Click keeps the last, and `-s window
-s summary` ran summary with no word of the window."""


def _refuse_given_twice(ctx: Any, params: list[Any], args: list[str]) -> None:
    valued = {name: param for param in params
              if isinstance(param, TyperOption) and not param.is_flag and not param.multiple
              and param.nargs == 1 for name in [*param.opts, *param.secondary_opts]}
    for once in ONCE:
        seen: list[tuple[str, str]] = []
        at = 0
        while at < len(args) and args[at] != "--":
            word = args[at]
            name, _, attached = word.partition("=") if word.startswith("--") else (
                (word[:2], "", word[2:]) if len(word) > 2 and word[1:2] != "-" else (word, "", ""))
            param = valued.get(name)
            if param is None or (not attached and at + 1 >= len(args)):
                at += 1
                continue
            value = attached or args[at + 1]
            if param.name == once:
                seen.append((name, value))
            at += 1 if attached else 2
        if len({value for _, value in seen}) > 1:
            (first, one), (second, other) = seen[0], next(s for s in seen if s[1] != seen[0][1])
            raise typer.BadParameter(f"must be given once, not as {first} {one} and "
                                     f"{second} {other}", ctx=ctx, param=valued[first])


class ChatmemCommand(TyperCommand):
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Text parameters are read as the UTF-8 they were typed in, whatever the locale (under
        an ASCII or Latin-1 one, 北京 came in as escaped bytes or as mojibake), and those that
        hold bytes that are not UTF-8 are refused by name here, once for every command,
        before the command stores, sends or prints them. File paths are file names, bytes on
        POSIX: they pass as the locale decoded them, which is how they are opened again."""
        given = list(args)
        rest = super().parse_args(ctx, args)  # --help ends here, importing nothing more
        if ctx.resilient_parsing:  # shell completion: words half typed, nothing run
            return rest
        _refuse_given_twice(ctx, self.get_params(ctx), given)
        from chatmem.text import is_valid

        for param in self.get_params(ctx):
            # Typer wraps a parameter's callback (functools.wraps keeps the original).
            callback = getattr(param.callback, "__wrapped__", param.callback)
            if (not isinstance(param, TyperArgument | TyperOption) or callback is file_name
                    or param.name not in ctx.params):
                continue
            ctx.params[param.name] = _as_typed(ctx.params[param.name])
            if callback is raw_text:
                continue
            if not all(is_valid(text) for text in _texts(ctx.params[param.name])):
                raise typer.BadParameter(NOT_UTF8, ctx=ctx, param=param)
        return rest

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
