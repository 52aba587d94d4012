"""What a command works on, opened from its flags: settings, the history (file or
PostgreSQL, with its key), providers, embedders and the engine."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from chatmem.cli.output import consoles
from chatmem.cli.threads import mask_credentials_of

if TYPE_CHECKING:
    from chatmem.app import Workspace
    from chatmem.config.settings import Settings
    from chatmem.notices import Notice
    from chatmem.plugins import Registries


def registries() -> Registries:
    """The strategies, providers and embedders of this process (chatmem.plugins), loaded
    when first used: the config's check, and every workspace, are handed them."""
    from chatmem.plugins import load_registries

    return load_registries()


def settings_from(
    config: Path | None = None,
    db: str | Path | None = None,
    provider: str | None = None,
    model: str | None = None,
    helper_model: str | None = None,
    options: Sequence[str] | None = None,
    *,
    db_flag: str = "--db",
) -> Settings:
    """The settings under the flags; `db_flag` is the flag that gave `db` (`--from`, `--to`),
    so a message about the location names it."""
    from chatmem.config.loader import load_settings
    from chatmem.config.options import parse_options
    from chatmem.config.settings import OPTION_FLAG, with_options

    chosen = parse_options(options)  # a bad option fails before the config is read
    settings = load_settings(config, registered=registries(), overrides={
        "db": None if db is None else str(db), "provider": provider, "model": model,
        "helper_model": helper_model,
    }, flags={"db": db_flag})
    settings = with_options(settings, chosen, OPTION_FLAG)
    mask_credentials_of(settings)
    return settings


def apply_template(settings: Settings, name: str | None, *, strategy: str | None,
                   system: str | None) -> tuple[Settings, str | None, str | None]:
    """Template `name` under the flags: its model, options, strategy and system prompt fill
    in what the command line left out. Returns the settings, the strategy and the system
    prompt to open the session with."""
    if name is None:
        return settings, strategy, system
    from chatmem.config.settings import (
        OPTION_FLAG,
        Source,
        SourceKind,
        for_model,
        with_options,
    )
    from chatmem.config.templates import find_template

    template = find_template(settings, name, registries())
    by_template = Source(SourceKind.TEMPLATE, name)
    if template.model and settings.source_of("model").kind is not SourceKind.FLAG:
        settings = for_model(settings, template.model, by_template)
    given = {key: value for key, value in settings.options.items()
             if settings.source_of(f"options.{key}") == OPTION_FLAG}
    settings = with_options(settings, template.options, by_template)
    settings = with_options(settings, given, OPTION_FLAG)
    return (settings, strategy or template.strategy,
            system if system is not None else template.system)


@contextmanager
def open_workspace(settings: Settings, *, create: bool = True, one_off: bool = False,
                   key_elsewhere: bool = False) -> Iterator[Workspace]:
    """What a command works on (chatmem.app.Workspace), closed when the command ends.

    `create=False` (reading commands) never creates a history file; `one_off`: a history of
    one question in memory. An encrypted file without a key set asks for it in a terminal;
    what opening did (a file moved, retention) is said on stderr as it happens.
    """
    from chatmem.app import Workspace
    from chatmem.cli.starting import started

    # The loading line goes now: a key is asked (getpass, a key command's pinentry) on the
    # terminal itself, not through stderr, and came after it on its line.
    started()
    mask_credentials_of(settings)  # a template's too
    interactive = sys.stdin.isatty() and sys.stderr.isatty()
    with Workspace(settings, create=create, one_off=one_off, registries=registries(),
                   ask_key=ask_key if interactive else None, on_notice=say_notice,
                   key_elsewhere=key_elsewhere) as ws:
        yield ws


def say_notice(notice: Notice) -> None:
    from chatmem.render import notice_line
    from chatmem.render.notices import notice_text

    consoles()[1].print(notice_line(notice_text(notice)), soft_wrap=True)


def ask_key(prompt: str, *, twice: bool = False) -> str:
    """A key typed at the terminal, not echoed; `twice` for a new key (typed again to confirm)."""
    import getpass

    from chatmem.errors import HistoryLocked, UsageError

    try:
        key = getpass.getpass(prompt)
        again = getpass.getpass("again, to confirm: ") if twice and key else key
    except EOFError:  # Ctrl-D: no key, as an empty line (Click would say "aborted", exit 1)
        key = again = ""
    if not key:
        raise HistoryLocked("no key typed; nothing was opened or changed", missing=True)
    if again != key:
        raise UsageError("the two keys differ; nothing was changed")
    return key


def erasure_done(vacuumed: bool) -> str:
    """What erasing did beyond deleting rows: SQLite rewrites the file; a PostgreSQL server
    frees erased rows' space on its own vacuum (it has no secure delete)."""
    if vacuumed:
        return "the file was vacuumed"
    return "the server frees their space at its next vacuum"
