"""A team on one PostgreSQL history: a role per person, sessions shared on purpose, and
sessions copied between a history file and a database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.store.copying import CopyReport
    from chatmem.store.sharing import AddedUser, Exemption, Share
    from chatmem.store.team_members import Removal


def role_statements(name: str, database: str) -> list[str]:
    """The SQL that creates person `name`'s login role on `database` (to run yourself)."""
    from chatmem.store.sharing import role_sql

    return role_sql(name, database)


def unclaimed_query(name: str) -> str:
    """The query counting what an earlier person of `name` left (sessions, profile facts,
    shares), which add-user refuses the name for: to run as a superuser with --sql."""
    from chatmem.store.team_members import unclaimed_sql

    return unclaimed_sql(name)


def row_security_exemption(workspace: Workspace) -> tuple[str, Exemption] | None:
    """The connecting role and why row security does not bind it (a superuser, BYPASSRLS),
    when it does not; None on a history file or for a person's own role."""
    from chatmem.store.sharing import row_security_exemption as exemption

    return exemption(workspace.store.connection)


def add_user(workspace: Workspace, name: str, *, keep_history: bool = False
             ) -> tuple[AddedUser, bool]:
    """Create the login role `name` (the connecting role must be allowed to create roles),
    or give an existing one that row security binds what add-user grants; refused while
    the name holds an earlier person's sessions or shares, unless `keep_history`. Also
    whether that was checked: a role row security binds cannot see others' rows."""
    from chatmem.store.sharing import add_user as create_role
    from chatmem.store.sharing import check_role_name
    from chatmem.store.team_members import check_unclaimed

    store = workspace.store.connection
    checked = False
    if not keep_history:
        checked = check_unclaimed(store, check_role_name(name))
    return create_role(store, name), checked


def remove_user(workspace: Workspace, name: str, *, drop_role: bool = False,
                dry_run: bool = False) -> Removal:
    """Erase what person `name` holds here and take back their access (their role too
    with `drop_role`); `dry_run` only counts it."""
    from chatmem.store.team_members import remove_user as remove

    return remove(workspace.store.connection, name, drop_role=drop_role, dry_run=dry_run)


def share_session(workspace: Workspace, session: str, role: str, *, write: bool) -> Share:
    """Let `role` read one of your sessions, and write to it with `write`."""
    from chatmem.store.sharing import ShareMode
    from chatmem.store.sharing import share_session as grant

    return grant(workspace.store.connection, session, role,
                 ShareMode.WRITE if write else ShareMode.READ)


def unshare_session(workspace: Workspace, session: str, role: str) -> None:
    """Stop sharing one of your sessions with `role`."""
    from chatmem.store.sharing import unshare_session as revoke

    revoke(workspace.store.connection, session, role)


def copy_sessions(origin: Workspace, destination: Workspace,
                  sessions: Sequence[str] = ()) -> CopyReport:
    """Copy `sessions` (default: every one) with everything they hold from one history into
    another, either way between a file and PostgreSQL."""
    from chatmem.store.copying import copy_sessions as copy

    return copy(origin.store, destination.store, sessions)
