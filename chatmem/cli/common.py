"""What every command shares: options, opening the store, errors → exit codes."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from chatmem.errors import ChatmemError, ExitCode, NoModelAvailable, StrategyError

if TYPE_CHECKING:
    from rich.console import Console

    from chatmem.config import Settings
    from chatmem.store import Store

F = TypeVar("F", bound=Callable[..., Any])

DbOption = Annotated[
    Path | None,
    typer.Option("--db", help="History file (default: CHATMEM_DB or the user data directory).",
                 show_default=False),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="Config file (default: CHATMEM_CONFIG or the app directory).",
                 show_default=False),
]
ProviderOption = Annotated[
    str | None,
    typer.Option("--provider", help="auto, local, openai or scripted.", show_default=False),
]
ModelOption = Annotated[str | None, typer.Option("--model", help="Model name.", show_default=False)]
StrategyOption = Annotated[
    str | None,
    typer.Option("--strategy", "-s", help="Memory strategy (see `chatmem strategies`).",
                 show_default=False),
]
ParamOption = Annotated[
    list[str] | None,
    typer.Option("--param", "-p", help="Strategy parameter as key=value; repeatable.",
                 show_default=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def consoles() -> tuple[Console, Console]:
    from chatmem.render import make_console

    return make_console(), make_console(stderr=True)


def fail(message: str, code: ExitCode = ExitCode.USAGE) -> typer.Exit:
    from chatmem.render import error_line

    # soft_wrap: one line, however narrow the terminal, so scripts can match it.
    consoles()[1].print(error_line(message), soft_wrap=True)
    return typer.Exit(int(code))


def handles_errors(func: F) -> F:
    """Turn chatmem errors into one line on stderr and their exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except NoModelAvailable as e:
            from chatmem.providers import NO_MODEL_HELP
            from chatmem.render import no_model_panel

            if str(e) != NO_MODEL_HELP:
                # A specific problem (a missing file, a missing package): one line.
                raise fail(str(e), e.exit_code) from None
            consoles()[1].print(no_model_panel(str(e)))
            raise typer.Exit(int(e.exit_code)) from None
        except ChatmemError as e:
            raise fail(str(e), e.exit_code) from None
        except KeyboardInterrupt:
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None

    return wrapper  # type: ignore[return-value]


def parse_params(pairs: Sequence[str] | None) -> dict[str, str]:
    params: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise StrategyError(f"--param {pair!r} must be key=value, e.g. --param k=3")
        params[key.strip()] = value
    return params


def settings_from(
    config: Path | None = None,
    db: Path | None = None,
    provider: str | None = None,
    model: str | None = None,
) -> Settings:
    from chatmem.config import load_settings

    return load_settings(config, overrides={
        "db": str(db) if db else None, "provider": provider, "model": model,
    })


@contextmanager
def open_store(settings: Settings) -> Iterator[Store]:
    from chatmem.store import Store

    store = Store(settings.db_path)
    try:
        yield store
    finally:
        store.close()


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
