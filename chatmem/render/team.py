"""What `admin add-user` and the sessions' shares say: a team on one PostgreSQL history."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chatmem.store.sharing import AddedUser


def added_user_lines(added: AddedUser, shown: str) -> list[str]:
    """What add-user did to role `added.name` on the history shown as `shown`, then, while
    the database lets every login role connect, the statements that close it."""
    from chatmem.store.sharing import RoleAdded, closing_sql, quoted_role

    name = added.name
    lines = [
        f"added role {name} on {shown}; set its password with `ALTER ROLE {quoted_role(name)}"
        f" PASSWORD '…'` (psql: \\password {name})" if added.outcome is RoleAdded.CREATED else
        f"role {name} existed; it may now use {shown} (its password is unchanged)"
        if added.outcome is RoleAdded.GRANTED else
        f"role {name} could already connect to {shown}; granted it chatmem's tables as"
        " add-user does (its password is unchanged)"]
    if added.open_to_public:
        lines.append(
            f"note: every login role of the server may connect to {shown} (CONNECT is granted"
            " to PUBLIC), so anyone with a role there can chat in it, added or not; to leave"
            " it to the people added: " + "; ".join(closing_sql(added.database)))
    return lines
