"""A person leaves a team's PostgreSQL history: what their role's name holds, and its removal.

A row's `owner` is a role's name, plain text: nothing ties it to the role that wrote it. A
role dropped and made again under that name (the next dan) would own the last one's
sessions, profile facts and shares, so `admin remove-user` erases them with the person,
and `admin add-user` refuses a name that still holds them (sharing.add_user).

Only a role that row security does not bind (a superuser, BYPASSRLS) sees every person's
rows: anyone else would count, and erase, only its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from chatmem.errors import StoreError, StoreFailure, UsageError
from chatmem.store.connection import Connection, fetch_value
from chatmem.store.sharing import (
    Exemption,
    check_role_name,
    quoted_role,
    revoke_sql,
    row_security_exemption,
)
from chatmem.store.writer_state import APART_OF


class RoleState(StrEnum):
    """Where the role of that name stands on the server."""

    MEMBER = "member"
    """It exists and holds add-user's grant: CONNECT on this database, given to it by name."""
    LOCKED_OUT = "locked-out"
    """It exists without that grant: not added yet, or taken back (while PUBLIC may connect,
    it may too: Removal.still_connects)."""
    MISSING = "missing"


@dataclass(frozen=True)
class PersonRows:
    """What one role's name holds on a history, as a role that sees every row counts it."""

    name: str
    sessions: int
    messages: int
    profile_facts: int
    shares_given: int
    """Shares of the person's sessions with others."""
    shares_received: int
    """Shares of others' sessions with the person."""
    role: RoleState

    @property
    def empty(self) -> bool:
        return not (self.sessions or self.profile_facts or self.shares_given
                    or self.shares_received)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "sessions": self.sessions, "messages": self.messages,
                "profile_facts": self.profile_facts, "shares_given": self.shares_given,
                "shares_received": self.shares_received, "role": self.role.value}


@dataclass(frozen=True)
class Removal:
    """What `remove_user` did (or, dry, would do)."""

    removed: PersonRows
    revoked: bool
    """CONNECT on the database and USAGE on the schema taken back (what add-user gave)."""
    dropped: bool
    dry_run: bool
    still_connects: bool = False
    """The role, kept, may still connect: a database lets PUBLIC connect unless told not to
    (what it writes from now on is its own again)."""

    def to_json(self) -> dict[str, Any]:
        return {**self.removed.to_json(), "revoked": self.revoked, "dropped": self.dropped,
                "still_connects": self.still_connects, "dry_run": self.dry_run}


def seeing_everyone(store: Connection) -> tuple[str, Exemption] | None:
    """The connecting role and why row security does not bind it, when it sees every
    person's rows; None when it sees only its own (and the sessions shared with it)."""
    if store.db.kind != "postgresql":
        raise UsageError(f"{store.location}: team members are roles of a PostgreSQL history "
                         "(a file has one user: whoever can read it)")
    return row_security_exemption(store)


def person_rows(store: Connection, name: str) -> PersonRows:
    """What `name` holds on this history; only a role `seeing_everyone` counts it all."""
    check_role_name(name)
    db = store.db
    sessions = [int(r[0]) for r in db.execute("SELECT id FROM sessions WHERE owner = ?",
                                              [name])]
    messages = fetch_value(db, "SELECT count(*) FROM messages WHERE session_id = ANY(?)",
                           [sessions]) if sessions else 0
    facts = fetch_value(db, "SELECT count(*) FROM facts WHERE owner = ? AND session_id IS NULL"
                        " AND deleted_at IS NULL", [name])
    given = fetch_value(db, "SELECT count(*) FROM session_shares h JOIN sessions s"
                        " ON s.id = h.session_id WHERE s.owner = ?", [name])
    received = fetch_value(db, "SELECT count(*) FROM session_shares WHERE grantee = ?", [name])
    # The grant by name, not has_database_privilege: any login role may connect while
    # PUBLIC may (a new database's default), one made yesterday under a departed person's
    # name too. A grant is the role's (its oid), not the name's: DROP ROLE refuses a role
    # still granted anything, so a new role of that name holds none.
    role = db.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_database d, aclexplode(d.datacl) a"
        " WHERE d.datname = current_database() AND a.grantee = r.oid"
        " AND a.privilege_type = 'CONNECT')"
        " FROM pg_catalog.pg_roles r WHERE r.rolname = ?", [name]).fetchone()
    state = (RoleState.MISSING if role is None else
             RoleState.MEMBER if role[0] else RoleState.LOCKED_OUT)
    return PersonRows(name, len(sessions), int(messages), int(facts), int(given),
                      int(received), state)


def check_unclaimed(store: Connection, name: str) -> bool:
    """Refuse `name` while it holds sessions, profile facts or shares of an earlier person
    (the next role of a name would inherit them). False when the connecting role cannot
    tell, row security showing it only its own rows (or on a history file, which add-user
    refuses)."""
    if store.db.kind != "postgresql" or seeing_everyone(store) is None:
        return False
    left = person_rows(store, name)
    if left.empty or left.role is RoleState.MEMBER:
        # The role add-user granted wrote them (or was given them): they are its own.
        return True
    held = [_counted(left.sessions, "session"), _counted(left.profile_facts, "profile fact"),
            _counted(left.shares_given + left.shares_received, "share")]
    what = f"{name} on {store.location} still holds {', '.join(h for h in held if h)}"
    if left.role is RoleState.MISSING:
        raise UsageError(
            f"{what} left by an earlier role of that name: `chatmem admin remove-user {name}`"
            f" erases them; --keep-history gives them to the new {name} (the same person"
            " coming back)")
    # A role made outside chatmem (provisioning, LDAP sync) after the last one was dropped,
    # or this role, chatting before it was added while PUBLIC could connect: nothing tells.
    raise UsageError(
        f"{what}, and role {name} holds no grant of add-user's here: an earlier role of that"
        f" name may have left them (`chatmem admin remove-user {name}` erases them);"
        f" --keep-history gives them to this {name} (the same person coming back, or"
        " chatting here before being added)")


def unclaimed_sql(name: str) -> str:
    """A query counting what `check_unclaimed` refuses `name` for (sessions, profile facts,
    shares): for `add-user --sql`, to run as a role row security does not bind."""
    quoted = "'" + check_role_name(name) + "'"  # lower-case letters, digits and _ only
    return (f"SELECT (SELECT count(*) FROM sessions WHERE owner = {quoted}) AS sessions,"
            f" (SELECT count(*) FROM facts WHERE owner = {quoted} AND session_id IS NULL"
            f" AND deleted_at IS NULL) AS profile_facts, (SELECT count(*) FROM session_shares"
            f" WHERE owner = {quoted} OR grantee = {quoted}) AS shares")


def _counted(n: int, noun: str) -> str:
    return "" if n == 0 else f"{n:,} {noun}{'' if n == 1 else 's'}"


def remove_user(store: Connection, name: str, *, drop_role: bool = False,
                dry_run: bool = False) -> Removal:
    """Erase everything `name` holds here (their sessions with all they hold, their profile
    facts, every share to or from them), take back what `add-user` granted, and drop the
    role with `drop_role`: in one transaction, so a refusal (a role that owns objects
    elsewhere cannot be dropped) leaves everything as it was."""
    check_role_name(name)
    me = _admin(store, "remove a user")
    if name == me:
        raise UsageError(f"role {name} is the one connected: remove-user removes another "
                         "person (connect as an administrator)")
    exempt = store.db.execute("SELECT rolsuper OR rolbypassrls FROM pg_catalog.pg_roles"
                              " WHERE rolname = ?", [name]).fetchone()
    if exempt and exempt[0]:
        raise UsageError(f"role {name} on {store.location} is a superuser or has BYPASSRLS: "
                         "not a person's role (add-user makes those); drop it with SQL")
    found = person_rows(store, name)
    revoke = found.role is not RoleState.MISSING
    drop = drop_role and found.role is not RoleState.MISSING
    if dry_run:
        return Removal(found, revoke, drop, dry_run=True)
    db = store.db
    with store.write():
        ids = [int(r[0]) for r in db.execute("SELECT id FROM sessions WHERE owner = ?", [name])]
        db.execute("DELETE FROM session_shares WHERE grantee = ? OR owner = ?", [name, name])
        # The state his chatmem kept as his own in sessions shared with him (as unshare).
        db.execute(f"DELETE FROM strategy_state WHERE {APART_OF}", [name])
        if ids:
            # As `sessions delete` erases one (steps.erase_session_rows): index entries and
            # the earlier values stated there first, then the session and what cascades.
            db.unindex_session_words(ids)
            db.execute("DELETE FROM fact_history WHERE source_session_id = ANY(?)", [ids])
            db.execute("DELETE FROM sessions WHERE id = ANY(?)", [ids])
        # What is the writer's own rather than a session's (postgres_access): a profile's
        # facts (their history cascades) and the vector cache.
        db.execute("DELETE FROM facts WHERE owner = ?", [name])
        db.execute("DELETE FROM vector_cache WHERE owner = ?", [name])
        if revoke:
            for statement in revoke_sql(name, str(fetch_value(db, "SELECT current_database()"))):
                db.execute(statement)
        if drop:
            db.execute(f"DROP ROLE {quoted_role(name)}")
        connects = revoke and not drop and bool(fetch_value(
            db, "SELECT has_database_privilege(?, current_database(), 'CONNECT')", [name]))
    db.forget_erased_words()
    return Removal(found, revoke, drop, dry_run=False, still_connects=connects)


def _admin(store: Connection, what: str) -> str:
    """The connecting role, which must see every person's rows to `what`."""
    exempt = seeing_everyone(store)
    if exempt is None:
        me = fetch_value(store.db, "SELECT current_user")
        raise StoreError(f"only a role that row security does not bind (a superuser, or one "
                         f"with BYPASSRLS) may {what}: {me} sees only its own sessions",
                         kind=StoreFailure.NOT_PERMITTED, location=store.location)
    return exempt[0]
