"""Privacy commands: `chatmem encrypt|decrypt|rekey|forget-me`, `sessions prune|retention`."""

import sys
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from chatmem.cli.completion import session_names
from chatmem.cli.opening import ask_key, erasure_done, open_workspace, settings_from
from chatmem.cli.options import ConfigOption, DbOption, JsonOption, YesOption
from chatmem.cli.output import (
    confirm_erasure,
    consoles,
    done_for_good,
    handles_errors,
    print_json,
)

if TYPE_CHECKING:
    from chatmem.config.settings import Settings
    from chatmem.privacy.retention import Erasure


def _current_key(settings: "Settings", path: Path) -> str:
    """The key the encrypted file is under: configured, or typed at a terminal."""
    from chatmem.app.privacy import key_hint
    from chatmem.errors import HistoryLocked

    key = settings.history_key()
    if key is not None:
        return key
    if sys.stdin.isatty():
        return ask_key(f"key for {path}: ")
    raise HistoryLocked(f"{path} is encrypted: {key_hint()}", missing=True)


def _new_key(settings: "Settings | None", what: str) -> str:
    """A key to encrypt with: configured (or $CHATMEM_NEW_KEY for rekey), else typed twice."""
    from chatmem.config.keys import NEW_KEY_ENV, key_from
    from chatmem.errors import UsageError

    key = key_from(NEW_KEY_ENV) if settings is None else settings.history_key()
    if key:
        return key
    if sys.stdin.isatty():
        return ask_key(f"new key for {what}: ", twice=True)
    source = f"${NEW_KEY_ENV}" if settings is None else "CHATMEM_KEY or key_command"
    raise UsageError(f"no key to encrypt with: set {source}, or run this in a terminal to "
                     "type one")


def _encrypted(config: Path | None, db: str | None, hint: str = "") -> tuple[Path, str]:
    """The encrypted history file and its current key, checked by opening it; a plain
    file is a usage error (`hint` says what to do instead)."""
    from chatmem.app.privacy import check_opens, is_encrypted
    from chatmem.errors import UsageError

    settings = settings_from(config, db)
    path = _existing(settings)
    if not is_encrypted(path):
        raise UsageError(f"{path} is not encrypted{hint}")
    key = _current_key(settings, path)
    check_opens(path, key)
    return path, key


def _existing(settings: "Settings") -> Path:
    from chatmem.app.privacy import existing_file

    with open_workspace(settings, create=False) as ws:
        return existing_file(ws)


def _size(path: Path) -> str:
    size = path.stat().st_size
    return f"{size / 1024:,.0f} KiB" if size < 1024 ** 2 else f"{size / 1024 ** 2:,.1f} MiB"


@handles_errors
def encrypt(db: DbOption = None, config: ConfigOption = None) -> None:
    """Encrypt the history file with the key from CHATMEM_KEY or key_command (or typed).

    The file is copied into an encrypted file beside it, checked, and renamed over
    the original in one step: an interruption leaves the original as it was.
    Needs chatmem[encrypt]. A key typed at the prompt stays out of the shell's history,
    which keeps one written on the command line.

    \b
    Example: chatmem encrypt
    """
    from chatmem.app.privacy import check_encryptable, encrypt_file

    settings = settings_from(config, db)
    path = _existing(settings)
    check_encryptable(path)  # before a key is asked for: nobody types a key for nothing
    cache = encrypt_file(path, _new_key(settings, str(path)))
    done_for_good()
    consoles()[1].print(f"encrypted {path} ({_size(path)}); keep the key safe: without it "
                        "the history cannot be read", markup=False, soft_wrap=True)
    if cache is not None:
        # Said: a second eval of a large history embeds everything again, minutes of work.
        consoles()[1].print(f"deleted the vector cache {cache}: it held vectors and digests "
                            "of the plain history's text, and is never kept for an "
                            "encrypted one", markup=False, soft_wrap=True)


@handles_errors
def decrypt(db: DbOption = None, config: ConfigOption = None) -> None:
    """Turn an encrypted history file back into a plain SQLite file (needs its key).

    Afterwards unset CHATMEM_KEY and key_command: a key set for a plain file is
    an error, so that nobody believes a plain file is encrypted.

    \b
    Example: chatmem decrypt --db old.db
    """
    from chatmem.app.privacy import decrypt_file

    path, key = _encrypted(config, db)
    decrypt_file(path, key)
    done_for_good()
    consoles()[1].print(f"decrypted {path}: it is a plain SQLite file now; unset "
                        "CHATMEM_KEY and key_command", markup=False, soft_wrap=True)


@handles_errors
def rekey(db: DbOption = None, config: ConfigOption = None) -> None:
    """Encrypt the history file under a new key: from CHATMEM_NEW_KEY, or typed twice.

    The current key comes from CHATMEM_KEY or key_command (or is typed). A key typed at
    the prompt stays out of the shell's history, which keeps one written on the command
    line.

    \b
    Example: chatmem rekey
    """
    from chatmem.app.privacy import rekey_file

    path, key = _encrypted(config, db, "; `chatmem encrypt` encrypts it")
    rekey_file(path, key, _new_key(None, str(path)))
    done_for_good()
    consoles()[1].print(f"re-encrypted {path} under the new key; use it from now on "
                        "(CHATMEM_KEY or key_command)", markup=False, soft_wrap=True)


# -- retention and erasure -------------------------------------------------------------------


def _erasure_lines(erased: "Erasure", now: datetime, zone: tzinfo | None) -> list[str]:
    from chatmem.render.counts import counted
    from chatmem.render.sessions import days_text, expiry_why, unanswered_words

    lines = []
    for s in erased.sessions:
        if s.own:
            keep = (f"its own retention {days_text(s.keep_days)}" if s.keep_days
                    else "kept for good by its own retention")
        else:
            # forget-me lists sessions whatever their retention; most have none.
            keep = f"retention {days_text(s.keep_days)}" if s.keep_days else "no retention"
        held = (counted(s.turns, "turn"), unanswered_words(s.failed, s.cancelled),
                counted(s.messages, "message"))
        lines.append(f"session {s.name}: idle {days_text(s.idle_days(now), measured=True)}, {keep}"
                     f" ({', '.join(w for w in held if w)})")
    for e in erased.facts:
        lines.append(f"fact {e.fact.id} {e.fact.key} ({e.fact.scope}): {expiry_why(e, zone)}")
    return lines


@handles_errors
def prune(
    older_than: Annotated[
        str | None, typer.Option("--older-than", metavar="DURATION", show_default=False,
                                 help="Erase sessions idle longer than this (30d, 12h, 2w, 6mo); "
                                      "default: retention_days from the config.")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be erased; "
                                                            "change nothing.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation "
                                                          "(asked in a terminal only).")] = False,
    db: DbOption = None,
    config: ConfigOption = None,
    json_out: JsonOption = False,
) -> None:
    """Erase sessions idle past their retention and facts past their end, then vacuum.

    A session's own retention (`sessions retention`) wins over both --older-than
    and retention_days; expired facts are those past their own end (/remember
    --for) and, with fact_idle_days, extracted facts no context used for that long.

    \b
    Example: chatmem sessions prune --older-than 30d --dry-run
    """
    from chatmem.app.privacy import prune_history, vacuums
    from chatmem.privacy.retention import parse_duration
    from chatmem.render.history_notices import taught_text
    from chatmem.render.sessions import erased_what, erasure_json, erasure_text
    from chatmem.timestamps import utc_now

    settings = settings_from(config, db)
    days: float | None = settings.retention_days
    if older_than is not None:
        days = parse_duration(older_than, "--older-than") / timedelta(days=1)
    now = utc_now()
    listed = False
    with open_workspace(settings, create=False) as ws:
        # At a terminal it asks first, as delete and forget-me do: --older-than 1h typed for
        # 1d erases today's chats for good. A cron job (no terminal) goes ahead as it did.
        if not (yes or dry_run or json_out) and sys.stdin.isatty():
            planned = prune_history(ws, now, retention_days=days, dry_run=True)
            if not planned.empty:
                for line in _erasure_lines(planned, now, settings.zone):
                    consoles()[1].print(line, markup=False, soft_wrap=True)
                if not typer.confirm(f"Erase {erased_what(planned)} for good?"):
                    consoles()[1].print("nothing was changed", markup=False, soft_wrap=True)
                    raise typer.Exit(1)
                listed = True
        erased = prune_history(ws, now, retention_days=days, dry_run=dry_run)
        done_for_good()
        done = erasure_done(vacuums(ws))
    if json_out:
        print_json(erasure_json(erased, now, settings.zone))
        return
    err = consoles()[1]
    for line in [] if listed else _erasure_lines(erased, now, settings.zone):
        err.print(line, markup=False, soft_wrap=True)
    if erased.empty and days is None:
        # Sessions may keep a retention of their own: none of them is past it.
        err.print("nothing to prune: no session is past a retention; give --older-than, or "
                  "set retention_days in the config (or `sessions retention` on one)",
                  markup=False, soft_wrap=True)
        return
    done = "" if dry_run or erased.empty else f"; {done}"
    err.print(f"{erasure_text(erased)}{done}", markup=False, soft_wrap=True)
    for taught in erased.taught_facts():
        err.print(taught_text(taught, dry_run=dry_run), markup=False, soft_wrap=True)


@handles_errors
def retention(
    name: Annotated[str, typer.Argument(metavar="SESSION", help="Session name.",
                                        autocompletion=session_names)],
    keep: Annotated[
        str | None, typer.Argument(metavar="DURATION", show_default=False,
                                   help="How long the session is kept idle: 90d, 6mo, 1y, "
                                        "forever, or default (retention_days).")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
    json_out: JsonOption = False,
) -> None:
    """Show or set how long a session is kept once idle, whatever retention_days says.

    \b
    Example: chatmem sessions retention travel forever
    """
    from chatmem.app.privacy import FOREVER, set_retention
    from chatmem.app.sessions import session_named
    from chatmem.errors import UsageError
    from chatmem.privacy.retention import parse_duration
    from chatmem.render.sessions import days_text

    settings = settings_from(config, db)
    days: int | None = None
    if keep == "forever":
        days = FOREVER
    elif keep not in (None, "default"):
        length = parse_duration(keep, "DURATION")
        if length % timedelta(days=1):
            # Stored in days: 1min kept a day, 36h two; said, not rounded unseen.
            raise UsageError(f"DURATION must be whole days (a session's retention is kept in"
                             f" days, like 1d, 2w or 1y), got {keep!r}")
        days = length // timedelta(days=1)
    with open_workspace(settings, create=False) as ws:
        session = (session_named(ws, name) if keep is None
                   else set_retention(ws, name, days))
    own = session.retention_days
    if json_out:
        print_json({"session": name, "retention_days": own,
                    "default_retention_days": settings.retention_days})
        return
    if own is None:
        default = (f"retention_days: {days_text(settings.retention_days)} idle"
                   if settings.retention_days else "kept: no retention_days in the config")
        text = f"session {name} follows the default ({default})"
    elif own == 0:
        text = f"session {name} is kept for good, whatever retention_days says"
    else:
        text = f"session {name} is erased after {days_text(own)} idle"
    consoles()[1].print(text, markup=False, soft_wrap=True)


@handles_errors
def forget_me(
    user: Annotated[
        str | None, typer.Option("--user", "-u", show_default=False, metavar="PROFILE",
                                 help="The user profile to erase (default: the configured "
                                      "user).")
    ] = None,
    yes: YesOption = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be erased; "
                                                            "change nothing.")] = False,
    db: DbOption = None,
    config: ConfigOption = None,
    json_out: JsonOption = False,
) -> None:
    """Erase a user profile: every session of it and its facts, then vacuum the file.

    Nothing of it is left in the file, its WAL or shm. `sessions export --all`
    first keeps a copy.

    \b
    Example: chatmem forget-me --yes
    """
    from chatmem.app.privacy import forget_profile, vacuums
    from chatmem.errors import UsageError
    from chatmem.render.sessions import erased_what, erasure_json, erasure_text
    from chatmem.timestamps import utc_now

    if json_out and not (yes or dry_run):
        raise UsageError("--json needs --yes or --dry-run: the question would go where the "
                         "JSON goes")
    settings = settings_from(config, db)
    profile = user or settings.user
    now = utc_now()
    with open_workspace(settings, create=False) as ws:
        planned = forget_profile(ws, profile, dry_run=True)
        err = consoles()[1]
        if json_out and (dry_run or planned.empty):
            # the shape of `sessions prune --json`: what would go, or nothing
            print_json(erasure_json(planned, now, settings.zone))
            return
        if planned.empty:
            err.print(f"user {profile} has no sessions or facts here", markup=False,
                      soft_wrap=True)
            return
        if dry_run:
            for line in _erasure_lines(planned, now, settings.zone):
                err.print(line, markup=False, soft_wrap=True)
            err.print(f"{erasure_text(planned)} of user {profile}", markup=False, soft_wrap=True)
            return
        if not yes:
            confirm_erasure(f"Erase {erased_what(planned)} of user {profile} for good?")
        erased = forget_profile(ws, profile)
        done_for_good()
        done = erasure_done(vacuums(ws))
    if json_out:
        print_json(erasure_json(erased, now, settings.zone))
        return
    err.print(f"{erasure_text(erased)} of user {profile}; {done}", markup=False, soft_wrap=True)
