"""A team on one PostgreSQL history: one login role per person, sessions shared on purpose.

Row-level security (postgres_policies) keeps every role to its own rows; a share in
`session_shares` (read or write) is the one exception. The grants chatmem's tables
need are given to PUBLIC by the schema, so a new person needs only a login role
that can connect: `role_sql` is that SQL, printed by `admin add-user --sql` too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from chatmem.errors import NotFound, ReadOnlyShare, StoreError, StoreFailure, UsageError
from chatmem.speakers import writer_label
from chatmem.store.connection import Connection, fetch_rows, fetch_value
from chatmem.store.postgres_access import shared
from chatmem.store.records import AccessLevel, FactRecord, SessionAccess, session_address
from chatmem.store.session_names import is_session_name, normal_name
from chatmem.store.writer_state import APART_OF

ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
"""Lower-case, unquoted PostgreSQL names: what `psql -U NAME` and a URL's user part name
without quoting, so a role's name is the same wherever it is typed."""


class ShareMode(StrEnum):
    READ = "read"
    WRITE = "write"


@dataclass(frozen=True)
class Share:
    session: str
    grantee: str
    mode: ShareMode


def shared_address(identifier: str) -> str | None:
    """`identifier` as the `OWNER/NAME` that names a session another role shares (a role's
    name, `/`, a session name, stored as names are), or None when it has another form."""
    owner, slash, name = identifier.partition("/")
    if not slash or not ROLE_NAME.fullmatch(owner) or not is_session_name(name):
        return None
    return f"{owner}/{normal_name(name)}"


RESERVED_ROLE_NAMES = frozenset({"public", "none", "current_user", "current_role",
                                 "session_user", "system_user"})
"""Names PostgreSQL keeps from every role, as it keeps every name starting `pg_`."""


def check_role_name(name: str) -> str:
    if not ROLE_NAME.match(name):
        raise UsageError(f"role name {name!r}: use lower-case letters, digits and _ "
                         "(at most 63, not starting with a digit)")
    if name.startswith("pg_") or name in RESERVED_ROLE_NAMES:
        raise UsageError(f"role name {name!r} is reserved by PostgreSQL (as every name "
                         "starting pg_ is): choose another")
    return name


def quoted_role(name: str) -> str:
    """`name` as SQL names a role: quoted, so a name that is also an SQL word (user, order)
    is the role's name and not the word, and any other role's name (Ann, a space) is kept."""
    return '"' + name.replace('"', '""') + '"'


def role_sql(name: str, database: str) -> list[str]:
    """The statements that create `name`: a login role subject to row-level security
    (never superuser nor BYPASSRLS, which PostgreSQL exempts from it), able to connect."""
    check_role_name(name)
    return [f"CREATE ROLE {quoted_role(name)}"
            " LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE",
            *access_sql(name, database)]


def quoted_database(database: str) -> str:
    """`database` as SQL names it, whatever its characters (a database's name is not a
    role's: any text)."""
    return '"' + database.replace('"', '""') + '"'


def access_sql(name: str, database: str) -> list[str]:
    """The statements that let the role `name` connect to `database` and use its tables."""
    return _privileges("GRANT", "TO", quoted_role(check_role_name(name)), database)


def revoke_sql(name: str, database: str) -> list[str]:
    """`access_sql` taken back (remove-user)."""
    return _privileges("REVOKE", "FROM", quoted_role(check_role_name(name)), database)


def _privileges(verb: str, preposition: str, grantee: str, database: str) -> list[str]:
    """What add-user grants `grantee` (quoted, or PUBLIC, whose by default these are):
    CONNECT, USAGE of the schema."""
    return [f"{verb} CONNECT ON DATABASE {quoted_database(database)} {preposition} {grantee}",
            f"{verb} USAGE ON SCHEMA public {preposition} {grantee}"]


class Exemption(StrEnum):
    """Why row security does not bind the connecting role (PostgreSQL's rule)."""

    SUPERUSER = "a superuser"
    BYPASSRLS = "a role with BYPASSRLS"


def row_security_exemption(store: Connection) -> tuple[str, Exemption] | None:
    """The connecting role's name and why row security does not bind it, when it does
    not: it reads and changes every person's sessions. None on a history file."""
    if store.db.kind != "postgresql":
        return None
    row = store.db.execute(
        "SELECT rolname, rolsuper, rolbypassrls FROM pg_catalog.pg_roles"
        " WHERE rolname = current_user").fetchone()
    if not row or not (row[1] or row[2]):
        return None
    return str(row[0]), Exemption.SUPERUSER if row[1] else Exemption.BYPASSRLS


def _require_postgres(store: Connection, what: str) -> None:
    if store.db.kind != "postgresql":
        raise UsageError(f"{store.location}: {what} needs a PostgreSQL history (a file has "
                         "one user: whoever can read it)")


class RoleAdded(StrEnum):
    """What `add_user` did."""

    CREATED = "created"
    GRANTED = "granted"
    """The role existed (a person of another chatmem database, say) and was let connect."""
    ALREADY = "already"
    """The role could already connect and use the schema (PUBLIC's grants, a grant of
    before): add-user's grants are given to it all the same, so closing the database to
    PUBLIC later leaves it in."""


@dataclass(frozen=True)
class AddedUser:
    name: str
    outcome: RoleAdded
    database: str
    open_to_public: bool
    """PUBLIC may connect to the database: every login role of the server can chat there,
    added or not (a new database's default)."""


def closing_sql(database: str) -> list[str]:
    """The statements that leave the database to the roles granted it (add-user's)."""
    return _privileges("REVOKE", "FROM", "PUBLIC", database)


def add_user(store: Connection, name: str) -> AddedUser:
    """Create the login role `name` (the connecting role must be allowed to create roles),
    or give an existing one that row security binds what add-user grants (again: idempotent)."""
    _require_postgres(store, "adding a user")
    check_role_name(name)
    _check_tables_owner(store)
    database = str(fetch_value(store.db, "SELECT current_database()"))
    existing = store.db.execute(
        "SELECT rolsuper, rolbypassrls, rolcanlogin,"
        " has_database_privilege(rolname, current_database(), 'CONNECT'),"
        " has_schema_privilege(rolname, current_schema(), 'USAGE')"
        " FROM pg_catalog.pg_roles WHERE rolname = ?", [name]).fetchone()
    if existing is None:
        statements, outcome = role_sql(name, database), RoleAdded.CREATED
    else:
        superuser, bypasses, can_login, connects, uses = existing
        if superuser or bypasses:
            # Granting it would add a person whom row security does not bind.
            why = Exemption.SUPERUSER if superuser else Exemption.BYPASSRLS
            raise UsageError(f"role {name} exists on {store.location} and is {why.value}: "
                             "row security would not keep it to its own sessions; choose "
                             "another name")
        if not can_login:
            raise UsageError(f"role {name} exists on {store.location} but cannot log in "
                             f"(ALTER ROLE {quoted_role(name)} LOGIN lets it)")
        statements = access_sql(name, database)
        outcome = RoleAdded.ALREADY if connects and uses else RoleAdded.GRANTED
    with store.write():
        for statement in statements:
            store.db.execute(statement)
    public = bool(fetch_value(
        store.db, "SELECT has_database_privilege('public', current_database(), 'CONNECT')"))
    return AddedUser(name, outcome, database, public)


def _check_tables_owner(store: Connection) -> None:
    """Row security binds every role but the tables' owner, who may switch it off (ALTER
    TABLE): chatmem's tables must be owned by whoever administers them (the role adding
    people, or a superuser), never by a person who chats. A person who opened the empty
    database first made them theirs."""
    row = store.db.execute(
        "SELECT t.tableowner, current_user, r.rolsuper FROM pg_catalog.pg_tables t"
        " JOIN pg_catalog.pg_roles r ON r.rolname = t.tableowner"
        " WHERE t.schemaname = current_schema() AND t.tablename = 'messages'").fetchone()
    owner, me, owner_is_superuser = row if row else (None, None, True)
    if owner != me and not owner_is_superuser:
        raise UsageError(
            f"chatmem's tables on {store.location} are owned by {owner}, who could turn row "
            "security off and read everyone's sessions: as a superuser, first run "
            f"REASSIGN OWNED BY {quoted_role(str(owner))} TO {quoted_role(str(me))}, and let"
            f" {owner} chat as a person")


def share_session(store: Connection, session: str, grantee: str, mode: ShareMode) -> Share:
    """Let `grantee` read (or write) the connecting role's own session `session`. Shared for
    reading, the state the grantee's chatmem kept there as its own (writer_state.per_writer,
    `OWNER/ROLE`) goes, as `unshare_session` drops it: he can no longer bring it up to
    date, and his reads took it, stale, in place of the owner's (his pins and a plugin's
    state as at his last turn, while hers went on)."""
    _require_postgres(store, "sharing a session")
    check_role_name(grantee)
    if mode is ShareMode.WRITE and writer_label(grantee) is None:
        # Every grantee's words are read after his name (MessageRecord.writer); `system: …`
        # or `assistant: …` would read as that role's line, so his would go unlabelled.
        raise UsageError(f"role {grantee} is named as a chat role is: words it wrote in"
                         f" session {session} could not carry its name and would read as"
                         " yours; share it read-only, or with a role named otherwise")
    if not _role_exists(store, grantee):
        raise NotFound(f"no role {grantee} on {store.location} "
                       f"(chatmem admin add-user {grantee} creates it)")
    with store.write():
        session_id = _own_session(store, session)
        if grantee == fetch_value(store.db, "SELECT current_user"):
            raise UsageError(f"session {session} is yours already")
        store.db.execute(
            "INSERT INTO session_shares (session_id, grantee, mode) VALUES (?, ?, ?)"
            " ON CONFLICT (session_id, grantee) DO UPDATE SET mode = excluded.mode",
            [session_id, grantee, mode.value])
        if mode is ShareMode.READ:
            store.db.execute(f"DELETE FROM strategy_state WHERE session_id = ? AND {APART_OF}",
                             [session_id, grantee])
    return Share(session, grantee, mode)


def unshare_session(store: Connection, session: str, grantee: str) -> None:
    """Stop sharing the user's own `session` with `grantee`, and drop the state the
    grantee's chatmem kept there as its own (writer_state.per_writer, `OWNER/ROLE`): no
    one else reads it, and it stayed for good, stale, to be taken up again by a later
    share (his pins, his boundary over summaries since rewritten). What his turns wrote
    stays: the session's, its owner's."""
    _require_postgres(store, "sharing a session")
    with store.write():
        session_id = _own_session(store, session)
        cursor = store.db.execute(
            "DELETE FROM session_shares WHERE session_id = ? AND grantee = ?",
            [session_id, grantee])
        if cursor.rowcount == 0:
            raise NotFound(f"session {session} is not shared with {grantee}")
        store.db.execute(f"DELETE FROM strategy_state WHERE session_id = ? AND {APART_OF}",
                         [session_id, grantee])


def shares(store: Connection, session_id: int) -> list[Share] | None:
    """Whom the session is shared with, when it is the connecting role's own ([] in a file);
    None when it is another role's: row security shows a grantee only its own share."""
    if store.db.kind != "postgresql":
        return []
    if session_access(store, session_id).level is not AccessLevel.OWN:
        return None
    # A share its owner did not make counts for nothing (postgres_access.shared).
    rows = fetch_rows(
        store.db, "SELECT s.name, h.grantee, h.mode FROM session_shares h JOIN sessions s"
        " ON s.id = h.session_id AND s.owner = h.owner WHERE h.session_id = ?"
        " ORDER BY h.grantee", [session_id])
    return [Share(row["name"], row["grantee"], ShareMode(row["mode"])) for row in rows]


def copy_shares(store: Connection, from_id: int, to_id: int) -> int:
    """Share session `to_id` as the user's own session `from_id` is shared (its owner's
    shares only, as `shares` counts them); how many. A file has none."""
    if store.db.kind != "postgresql":
        return 0
    with store.write():
        return int(store.db.execute(
            "INSERT INTO session_shares (session_id, grantee, mode) SELECT ?, h.grantee, h.mode"
            " FROM session_shares h JOIN sessions s ON s.id = h.session_id AND s.owner = h.owner"
            " WHERE h.session_id = ? AND s.owner = current_user"
            " ON CONFLICT (session_id, grantee) DO UPDATE SET mode = excluded.mode",
            [to_id, from_id]).rowcount)


def listed_access(kind: str) -> str:
    """SQL for the columns `access` and `shares` (SessionSummary's) of the session `s` a
    listing reads: the rule session_access follows, and the count of its shares when it
    is the connecting role's own (NULL for one shared with it)."""
    if kind != "postgresql":
        return "'own' AS access, 0 AS shares"
    return (f"CASE WHEN s.owner = current_user THEN 'own' WHEN"
            f" {shared('s.id', 's.owner', write=True)} THEN 'write' ELSE 'read' END AS access,"
            " CASE WHEN s.owner = current_user THEN (SELECT count(*) FROM session_shares c"
            " WHERE c.session_id = s.id AND c.owner = s.owner) END AS shares")


def session_access(store: Connection, session_id: int) -> SessionAccess:
    """Whether the connecting role owns the session, may write it, or only read it."""
    found = store.db.session_access(session_id)
    if found is None:
        raise NotFound(f"no session with id {session_id}")
    return found


def check_writable_session(store: Connection, session_id: int, *,
                           owners_only: str | None = None) -> None:
    """Raise, before anything is sent or changed, unless this role may write the session;
    `owners_only`: what only its owner may do ("rename"), refused to a write share too.

    Row-level security refuses such a write anyway (postgres_access); this says so in
    words before a model is called or a file written for a change that cannot be kept.
    """
    access = session_access(store, session_id)
    if access.level is AccessLevel.OWN or (access.level is AccessLevel.WRITE
                                           and owners_only is None):
        return
    owner = access.owner
    # Named as OWNER/NAME: the user's own session may have its name, and `fork NAME` would
    # copy theirs.
    name = session_address(
        str(fetch_value(store.db, "SELECT name FROM sessions WHERE id = ?", [session_id])),
        owner)
    exempt = row_security_exemption(store) if access.level is AccessLevel.READ else None
    if exempt is not None and fetch_value(
            store.db, "SELECT 1 FROM session_shares WHERE session_id = ? AND grantee ="
            " current_user", [session_id]) is None:
        # Not a share: row security lets a superuser (BYPASSRLS) read everyone's sessions,
        # and chatmem's commands act as one person, so the person's own role changes it,
        # and the administrator's way is remove-user (a person who left).
        raise StoreError(f"session {name!r} is {owner}'s and not shared with {exempt[0]},"
                         f" {exempt[1].value}: row security lets it read every person's"
                         " sessions, but chatmem changes one only as its owner or a write"
                         f" share's grantee; when {owner} leaves, `chatmem admin remove-user"
                         f" {owner}` erases it",
                         kind=StoreFailure.NOT_PERMITTED, location=store.location)
    if access.level is AccessLevel.READ:
        raise ReadOnlyShare(name, str(owner), location=store.location)
    raise StoreError(f"only {owner}, its owner, can {owners_only} session {name!r} (it is"
                     " shared with you for writing)", kind=StoreFailure.NOT_PERMITTED,
                     location=store.location)


def check_own_session(store: Connection, session_id: int, what: str) -> None:
    """Raise unless the connecting role owns the session: `what` ("purge a fact of") only
    its owner does, whatever the share (a purge erases every mention of a value, and the
    session's messages are its owner's to change)."""
    access = session_access(store, session_id)
    if access.level is AccessLevel.OWN:
        return
    name = session_address(
        str(fetch_value(store.db, "SELECT name FROM sessions WHERE id = ?", [session_id])),
        access.owner)
    shared = ("for writing" if access.level is AccessLevel.WRITE
              else f"read-only by {access.owner}")
    raise StoreError(f"only {access.owner}, its owner, can {what} session {name!r} (it is"
                     f" shared with you {shared})", kind=StoreFailure.NOT_PERMITTED,
                     location=store.location)


def check_stated_by_writer(store: Connection, fact: FactRecord) -> None:
    """Raise unless the connecting role may forget a session fact: the session's owner, or a
    write share's grantee for a value he stated (or a member relayed through him, p032).
    README: a grantee's "Forget my city." forgets his city only; the owner's (no speaker)
    and a third role's are theirs (the server refuses it too, p033)."""
    if fact.session_id is None:
        return  # a profile fact: its own writer's (row security, p013)
    access = session_access(store, fact.session_id)
    me = access.role
    if access.level is AccessLevel.OWN or me is None or fact.speaker == me or (
            fact.speaker is not None and fact.speaker.endswith(f" (via {me})")):
        return
    name = session_address(
        str(fetch_value(store.db, "SELECT name FROM sessions WHERE id = ?", [fact.session_id])),
        access.owner)
    raise StoreError(f"fact {fact.id} of session {name!r} ({fact.key} = {fact.value}) was"
                     f" stated by {fact.speaker or access.owner}, not you: only they or"
                     f" {access.owner}, its owner, can forget it", kind=StoreFailure.NOT_PERMITTED,
                     location=store.location)


def others_sessions(store: Connection, session_ids: Iterable[int]) -> dict[int, str]:
    """Those of `session_ids` another role owns (shared with the connecting one), with
    their owner; none in a file."""
    ids = list(session_ids)
    if store.db.kind != "postgresql" or not ids:
        return {}
    return {int(r[0]): str(r[1]) for r in store.db.execute(
        "SELECT id, owner FROM sessions WHERE id = ANY(?) AND owner <> current_user"
        " ORDER BY id", [ids])}


def owned(store: Connection, session_ids: Iterable[int]) -> set[int]:
    """Those of `session_ids` the connecting role owns: what it may erase (retention, a
    user's erasure, a purge). A session shared with it is its owner's to erase."""
    ids = list(session_ids)
    if store.db.kind != "postgresql" or not ids:
        return set(ids)
    return {int(r[0]) for r in store.db.execute(
        "SELECT id FROM sessions WHERE id = ANY(?) AND owner = current_user", [ids])}


def _own_session(store: Connection, name: str) -> int:
    session_id = fetch_value(
        store.db,
        "SELECT id FROM sessions WHERE name = ? AND owner = current_user", [normal_name(name)])
    if session_id is None:
        raise NotFound(f"no session {name!r} of yours in {store.location} "
                       "(only its owner shares a session)")
    return int(session_id)


def _role_exists(store: Connection, name: str) -> bool:
    return fetch_value(store.db, "SELECT 1 FROM pg_roles WHERE rolname = ?", [name]) is not None
