"""A team on one PostgreSQL history: `admin add-user`, `sessions share` and `unshare`."""

from typing import TYPE_CHECKING, Annotated

import typer

from chatmem.cli.grammar import ChatmemTyper, file_name
from chatmem.cli.opening import open_workspace, settings_from
from chatmem.cli.options import ConfigOption, DbOption, JsonOption, YesOption
from chatmem.cli.output import confirm_erasure, consoles, handles_errors, print_json

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.store.copying import SkippedSession
    from chatmem.store.sharing import Exemption
    from chatmem.store.team_members import Removal

app = ChatmemTyper(help="Set up a PostgreSQL history for a team: one role per person.\n\n"
                        "\b\nExample: chatmem admin add-user ann --db postgresql://admin@db/team",
                   no_args_is_help=True)

SessionArgument = Annotated[str, typer.Argument(metavar="SESSION", help="One of your sessions.")]


@app.command("add-user")
@handles_errors
def add_user(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The new role (lower-case).")],
    sql: Annotated[bool, typer.Option("--sql", help="Print the SQL instead of running it.")]
    = False,
    database: Annotated[str, typer.Option("--database", metavar="DB", show_default=False,
                                          help="With --sql: the database to connect to "
                                               "(default: the --db URL's).")] = "",
    keep_history: Annotated[bool, typer.Option(
        "--keep-history", help="Give NAME the sessions and shares an earlier role of that "
                               "name left (the same person coming back).")] = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Create a login role for one person; row-level security keeps them to their own sessions.

    A name that still holds sessions or shares of an earlier person (one removed by
    dropping their role) is refused: `admin remove-user NAME` erases them first.

    \b
    Example: chatmem admin add-user ann --db postgresql://admin@db.example/chatmem
    """
    from chatmem.app.team import add_user as create_role
    from chatmem.app.team import role_statements, unclaimed_query

    settings = settings_from(config, db)
    if sql:
        # A file's location names no database: --database must.
        name_of_db = database or settings.location.database
        if not name_of_db:
            from chatmem.errors import UsageError

            raise UsageError("--sql: name the database with --database DB or --db URL")
        statements = role_statements(name, name_of_db)  # checks the name first
        if not keep_history:
            # add-user's check, which needs the database: as comments, so piping the
            # output into psql still runs only the statements.
            typer.echo(f"-- add-user refuses {name} while an earlier role of that name left"
                       " rows here (a new role of the name would own them): as a superuser,"
                       f" check that this counts none (`chatmem admin remove-user {name}`"
                       " erases them; --keep-history when they are this person's):")
            typer.echo(f"-- {unclaimed_query(name)};")
        for statement in statements:
            typer.echo(statement + ";")
        return
    from chatmem.render.team import added_user_lines

    with open_workspace(settings) as ws:
        added, checked = create_role(ws, name, keep_history=keep_history)
        shown = ws.location
    err = consoles()[1]
    for line in added_user_lines(added, str(shown)):
        err.print(line, markup=False, soft_wrap=True)
    if not checked and not keep_history:
        err.print(f"note: row security binds the role connected, so whether an earlier {name}"
                  " left sessions here went unchecked (a superuser or BYPASSRLS role sees"
                  " them)", markup=False, soft_wrap=True)


@app.command("remove-user")
@handles_errors
def remove_user(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The person's role.")],
    drop_role: Annotated[bool, typer.Option(
        "--drop-role", help="Drop the role too (it must hold nothing on other "
                            "databases).")] = False,
    yes: YesOption = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would be erased; "
                                                            "change nothing.")] = False,
    db: DbOption = None,
    config: ConfigOption = None,
    json_out: JsonOption = False,
) -> None:
    """Remove a person who leaves: their sessions, profile facts and shares, and their access.

    Erases, in one transaction, every session NAME owns (with its messages, turns,
    summaries, facts and vectors), NAME's profile facts and every share to or from
    NAME, then revokes what `add-user` granted on this database; --drop-role drops
    the role as well. What NAME wrote into others' sessions stays there, theirs.
    Needs a role row security does not bind (a superuser or BYPASSRLS): the
    administrator's. A role dropped by hand leaves all that under its name, and
    `add-user` refuses the name until this removes it.

    \b
    Example: chatmem admin remove-user dan --drop-role --db postgresql://admin@db/team
    """
    from chatmem.app.team import remove_user as remove
    from chatmem.errors import UsageError

    if json_out and not (yes or dry_run):
        raise UsageError("--json needs --yes or --dry-run: the question would go where the "
                         "JSON goes")
    with open_workspace(settings_from(config, db), create=False) as ws:
        planned = remove(ws, name, drop_role=drop_role, dry_run=True)
        if not (yes or dry_run):
            confirm_erasure(f"Erase {_removal_text(planned, asking=True)}?")
        done = planned if dry_run else remove(ws, name, drop_role=drop_role)
    if json_out:
        print_json(done.to_json())
        return
    said = _removal_text(done)
    consoles()[1].print(f"would erase {said}" if dry_run else f"erased {said}",
                        markup=False, soft_wrap=True)


def _removal_text(removal: "Removal", *, asking: bool = False) -> str:
    """What remove-user erases and does to the role: done, to do (--dry-run), or asked."""
    from chatmem.render.counts import counted

    rows = removal.removed
    held = [counted(rows.sessions, "session") + f" ({counted(rows.messages, 'message')})",
            counted(rows.profile_facts, "profile fact"),
            counted(rows.shares_given, "share") + " of theirs",
            counted(rows.shares_received, "share") + " with them"]
    to_do = removal.dry_run or asking
    access = ("" if not removal.revoked else
              f"; {'drop' if to_do else 'dropped'} role {rows.name}" if removal.dropped else
              f"; {'take' if to_do else 'took'} back what add-user granted"
              + (" (PUBLIC may still connect, so it may too: --drop-role drops the role)"
                 if removal.still_connects else " (--drop-role drops the role)"))
    if asking:
        access = " for good" + access.replace(";", ", and")
    return f"{rows.name}'s {', '.join(held)}{access}"


@handles_errors
def share(
    session: SessionArgument,
    role: Annotated[str, typer.Option("--with", metavar="ROLE", help="Who may read it.")],
    write: Annotated[bool, typer.Option("--write", help="Let them write to it too.")] = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Let another role read one of your sessions (and write to it with --write).

    \b
    Example: chatmem sessions share trip --with bob --write
    """
    from chatmem.app.team import share_session

    with open_workspace(settings_from(config, db)) as ws:
        done = share_session(ws, session, role, write=write)
    consoles()[1].print(f"shared session {done.session} with {done.grantee} ({done.mode})",
                        markup=False, soft_wrap=True)


@handles_errors
def unshare(
    session: SessionArgument,
    role: Annotated[str, typer.Option("--with", metavar="ROLE", help="Whom to stop sharing with.")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Stop sharing one of your sessions with a role.

    \b
    Example: chatmem sessions unshare trip --with bob
    """
    from chatmem.app.team import unshare_session

    with open_workspace(settings_from(config, db)) as ws:
        unshare_session(ws, session, role)
    consoles()[1].print(f"session {session} is no longer shared with {role}",
                        markup=False, soft_wrap=True)


@handles_errors
def copy(
    sessions: Annotated[list[str] | None, typer.Argument(
        metavar="SESSION...", help="Sessions to copy (default: every one).",
        show_default=False)] = None,
    source: Annotated[str, typer.Option("--from", metavar="FILE|URL", callback=file_name,
                                        help="The history to copy from.")] = "",
    target: Annotated[str, typer.Option("--to", metavar="FILE|URL", callback=file_name,
                                        help="The history to copy into (created if a file).")]
    = "",
    config: ConfigOption = None,
    json_out: JsonOption = False,
) -> None:
    """Copy sessions with everything they hold between two histories (files or PostgreSQL).

    \b
    Example: chatmem sessions copy --from chatmem.db --to postgresql://ann@db.example/team trip
    """
    from chatmem.app.team import copy_sessions
    from chatmem.config.location import LocationKind
    from chatmem.errors import UsageError
    from chatmem.render.counts import counted

    if source is None or target is None:
        raise UsageError("name both histories: --from FILE|URL --to FILE|URL")
    sides = settings_from(config, source, db_flag="--from"), settings_from(
        config, target, db_flag="--to")
    # A key set with a file on one side is that file's: the database side takes none.
    files = [s.location.kind is not LocationKind.POSTGRESQL for s in sides]
    with (open_workspace(sides[0], create=False, key_elsewhere=files[1]) as origin,
          open_workspace(sides[1], key_elsewhere=files[0]) as destination):
        _refuse_unused_key(origin, destination, all(files))
        report = copy_sessions(origin, destination, sessions or ())
    if json_out:
        print_json(report.to_json())
        return
    err = consoles()[1]
    for skipped in report.skipped:
        err.print(skipped_line(skipped, report.reader), markup=False, soft_wrap=True)
    # The turns table holds what each request sent, not the conversation's turns that
    # `sessions list` counts (an imported session has many of those and no record).
    err.print(
        f"copied {counted(len(report.sessions), 'session')} "
        f"({counted(report.rows['messages'], 'message')}, "
        f"{counted(report.rows['turns'], 'turn record')}) from {report.source} to "
        f"{report.target}", markup=False, soft_wrap=True)


def _refuse_unused_key(origin: "Workspace", destination: "Workspace", files: bool) -> None:
    """A key set is the encrypted file's (or a new target's, created encrypted with it):
    between two plain files it would encrypt neither, and its user would believe the copy
    encrypted, as `chat` with a key on a plain file is refused for."""
    from chatmem.errors import StoreError

    source = origin.settings.key_source()
    if files and source is not None and not (origin.store.encrypted
                                             or destination.store.encrypted):
        raise StoreError(f"{origin.location} and {destination.location} are not encrypted, "
                         f"but {source} is set: the copy would not be encrypted (`chatmem "
                         f"encrypt` one first, or unset {source})")


def skipped_line(skipped: "SkippedSession",
                 reader: "tuple[str, Exemption] | None" = None) -> str:
    """One line, whatever the name holds (a newline, an escape sequence, 5,000 characters).
    `reader`: the role copying, when row security does not bind it (it reads sessions
    nobody shared with it)."""
    from chatmem.store.copying import SkipReason

    name = repr(skipped.name if len(skipped.name) <= 64 else skipped.name[:64] + "…")
    whose = ""
    if skipped.shared_by:
        whose = f" (shared with you by {skipped.shared_by})"
    elif skipped.owner:
        # Not shared: a superuser (BYPASSRLS) role reads every person's sessions.
        why_read = f": row security does not bind {reader[0]}, {reader[1].value}" if reader else ""
        whose = f" ({skipped.owner}'s, not shared with you{why_read})"
    if skipped.reason is SkipReason.NAME_TAKEN and skipped.owner and not skipped.shared:
        # Only its owner renames it: copied alone, it takes no other's name.
        why = (f"another session copied has that name (copy {skipped.owner}/{skipped.name}"
               " by name into another history)")
    elif skipped.reason is SkipReason.NAME_TAKEN:
        why = "another session copied has that name (rename one and copy it by name)"
    else:
        why = ("its name is not one chatmem accepts (letters, digits, '-', '_', '.' or '+', "
               "up to 64)")
    return f"not copied: session {name}{whose}: {why}"
