"""A team on one PostgreSQL history: `admin add-user`, `sessions share` and `unshare`."""

from typing import TYPE_CHECKING, Annotated

import typer

from chatmem.cli.grammar import ChatmemTyper
from chatmem.cli.opening import open_workspace, settings_from
from chatmem.cli.options import ConfigOption, DbOption, JsonOption
from chatmem.cli.output import consoles, handles_errors, print_json

if TYPE_CHECKING:
    from chatmem.store.copying import SkippedSession

app = ChatmemTyper(help="Set up a PostgreSQL history for a team: one role per person.\n\n"
                        "\b\nExample: chatmem admin add-user ann --db postgresql://admin@db/team",
                   no_args_is_help=True)

RoleArgument = Annotated[str, typer.Argument(metavar="ROLE", help="A PostgreSQL login role.")]
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
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Create a login role for one person; row-level security keeps them to their own sessions.

    \b
    Example: chatmem admin add-user ann --db postgresql://admin@db.example/chatmem
    """
    from chatmem.app.team import add_user as create_role
    from chatmem.app.team import role_statements

    settings = settings_from(config, db)
    if sql:
        # A file's location names no database: --database must.
        name_of_db = database or settings.location.database
        if not name_of_db:
            from chatmem.errors import UsageError

            raise UsageError("--sql: name the database with --database DB or --db URL")
        for statement in role_statements(name, name_of_db):
            typer.echo(statement + ";")
        return
    from chatmem.store.sharing import RoleAdded

    with open_workspace(settings) as ws:
        added = create_role(ws, name)
        shown = ws.location
    said = (f"added role {name} on {shown}; set its password with "
            f"`ALTER ROLE {name} PASSWORD '…'` (psql: \\password {name})"
            if added is RoleAdded.CREATED else
            f"role {name} existed; it may now use {shown} (its password is unchanged)")
    consoles()[1].print(said, markup=False, soft_wrap=True)


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
    source: Annotated[str, typer.Option("--from", metavar="FILE|URL",
                                        help="The history to copy from.")] = "",
    target: Annotated[str, typer.Option("--to", metavar="FILE|URL",
                                        help="The history to copy into (created if a file).")]
    = "",
    config: ConfigOption = None,
    json_out: JsonOption = False,
) -> None:
    """Copy sessions with everything they hold between a history file and a PostgreSQL one.

    \b
    Example: chatmem sessions copy --from chatmem.db --to postgresql://ann@db.example/team trip
    """
    from chatmem.app.team import copy_sessions
    from chatmem.errors import UsageError

    if not source or not target:
        raise UsageError("name both histories: --from FILE|URL --to FILE|URL")
    with (open_workspace(settings_from(config, source, db_flag="--from"), create=False) as origin,
          open_workspace(settings_from(config, target, db_flag="--to")) as destination):
        report = copy_sessions(origin, destination, sessions or ())
    if json_out:
        print_json(report.to_json())
        return
    err = consoles()[1]
    for skipped in report.skipped:
        err.print(skipped_line(skipped), markup=False, soft_wrap=True)
    err.print(
        f"copied {len(report.sessions)} session(s) ({report.rows['messages']} messages, "
        f"{report.rows['turns']} turns) from {report.source} to {report.target}",
        markup=False, soft_wrap=True)


def skipped_line(skipped: "SkippedSession") -> str:
    """One line, whatever the name holds (a newline, an escape sequence, 5,000 characters)."""
    from chatmem.store.copying import SkipReason

    name = repr(skipped.name if len(skipped.name) <= 64 else skipped.name[:64] + "…")
    whose = f" (shared with you by {skipped.shared_by})" if skipped.shared_by else ""
    if skipped.reason is SkipReason.NAME_TAKEN:
        why = "another session copied has that name (rename one and copy it by name)"
    else:
        why = ("its name is not one chatmem accepts (letters, digits, '-', '_', '.' or '+', "
               "up to 64)")
    return f"not copied: session {name}{whose}: {why}"
