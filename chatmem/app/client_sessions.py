"""Sessions a served client's history makes: one like the session its conversation had
(`adopted_history.branch_session` keeps that one), and a long history written as an import
is, in batches under an unfinished name that then takes the opened session's place, or the
name of the session it branches from (that one kept under another)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import count
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chatmem.app.session_files import ImportProgress
    from chatmem.app.workspace import Workspace
    from chatmem.store import SessionRecord


def adopt_in_place_of(workspace: Workspace, session: SessionRecord,
                       messages: Sequence[dict[str, str]], progress: ImportProgress | None,
                       batch: int) -> None:
    """`messages` written in batches as a session like `session` (which holds nothing) under
    an unfinished name, that then takes its name and its place in one short transaction."""
    from chatmem.errors import StoreError
    from chatmem.store import unfinished

    store = workspace.store
    made: list[tuple[str, int]] = []
    try:
        _write_aside(workspace, session, messages, progress, batch, made)
        unfinished.publish(
            store, made, [session.name],
            lambda name: StoreError(f"session {name!r} was written to while the client's"
                                    " history was stored; nothing of it was kept: send the"
                                    " request again"),
            in_place_of={session.name: session.id})
    except BaseException:
        unfinished.discard(store, made)  # after kill -9: the next import's remove_leftovers
        raise


def branch_in_batches(workspace: Workspace, old: SessionRecord,
                      messages: Sequence[dict[str, str]], progress: ImportProgress | None,
                      batch: int) -> str:
    """`adopted_history.branch_session` of a long history: `messages` written in batches as
    a session like `old` under an unfinished name; then, in one short transaction, `old`
    renamed `NAME.before-edit-N` (returned) and that session given its name. 60,000
    exchanges in one transaction made a concurrent ask wait 21.6 s; a failure, or `old`
    renamed or removed meanwhile, leaves it as it was (a turn stored in it meanwhile is
    kept with it)."""
    from chatmem.errors import StoreError
    from chatmem.store import unfinished

    store = workspace.store
    made: list[tuple[str, int]] = []
    try:
        _write_aside(workspace, old, messages, progress, batch, made)
        with store.write():
            held = store.sessions.find_session(old.name)
            if held is None or held.id != old.id:
                raise StoreError(f"session {old.name!r} was renamed or removed while the"
                                 " client's edited history was stored; nothing of it was kept")
            kept = kept_name(workspace, old.name)
            store.sessions.rename_session(old.name, kept)
            unfinished.publish(store, made, [old.name], lambda name: StoreError(
                f"session {name!r} was taken while the client's edited history was stored;"
                " nothing of it was kept"))
        return kept
    except BaseException:
        unfinished.discard(store, made)  # after kill -9: the next import's remove_leftovers
        raise


def _write_aside(workspace: Workspace, like: SessionRecord, messages: Sequence[dict[str, str]],
                 progress: ImportProgress | None, batch: int,
                 made: list[tuple[str, int]]) -> None:
    """`messages` written `batch` at a time into a new session like `like` under an unfinished
    name, appended to `made` first, so the caller discards it whatever happens after."""
    from chatmem.store import unfinished

    store = workspace.store
    unfinished.remove_leftovers(store)
    made.append(session_like(workspace, like, unfinished.unfinished_name("import")))
    carry_over(workspace, like, made[0][1])
    for start in range(0, len(messages), batch):
        store.history.import_messages(made[0][1], messages[start : start + batch])
        if progress is not None:
            progress(min(start + batch, len(messages)), len(messages))


def kept_name(workspace: Workspace, name: str) -> str:
    """`NAME.before-edit-N`, the first N free: the name a branched session is kept under."""
    from chatmem.store.session_names import suffixed_name

    return next(kept for kept in (suffixed_name(name, f".before-edit-{i}") for i in count(1))
                if workspace.store.sessions.find_session(kept) is None)


def session_like(workspace: Workspace, old: SessionRecord, name: str) -> tuple[str, int]:
    """A new session `name` (unfinished too) with `old`'s settings; (its name, its id)."""
    from chatmem.store.session_names import is_unfinished

    new = workspace.store.sessions.create_session(
        name, old.strategy, old.params, provider=old.provider, model=old.model,
        system=old.system, user=old.user, tokenizer=old.tokenizer,
        unfinished=is_unfinished(name))
    return new.name, new.id


def carry_over(workspace: Workspace, old: SessionRecord, new_id: int) -> None:
    """`old`'s own retention and shares given to session `new_id` too."""
    store = workspace.store
    if old.retention_days is not None:
        store.retention.set_retention(new_id, old.retention_days)
    store.sessions.copy_shares(old.id, new_id)
