"""A session's stored summaries: every version with what it covers and costs, two versions
to compare (/summary diff), the latest or one version by number. Reading only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.memory.base import Strategy
    from chatmem.store import SessionRecord, SummaryRecord


@dataclass(frozen=True)
class SummaryVersion:
    """One stored summary version, with what it covers and costs."""

    summary: SummaryRecord
    covered_turn: int | None
    """The last turn the version covers (it covers turns 1 to it)."""
    tokens: int


def summary_versions(workspace: Workspace, session: str) -> tuple[str, list[SummaryVersion]]:
    """What names `session` to the user (OWNER/NAME for another's) and every summary
    version of it, oldest first."""
    from chatmem.memory.summarizer import covered_turn
    from chatmem.tokens import counter_for_model

    store = workspace.store
    record = store.sessions.session(session)
    counter = counter_for_model(record.model)
    turn_of = {m.id: m.turn for m in store.history.messages(record.id)}
    return store.sessions.address(record.id), [
        SummaryVersion(s, covered_turn(s, turn_of), counter.count_text(s.text))
        for s in store.memory.summaries(record.id)]


@dataclass(frozen=True)
class SummaryDiff:
    """Two summary versions of a session to compare (`old` None: `new` is the first)."""

    new: SummaryRecord
    old: SummaryRecord | None
    covered_turn: int | None
    """The last turn `new` covers."""


def summarizing(strategy: Strategy) -> str | None:
    """The strategy in use that keeps a summary (the first, in a combination), by its name:
    summaries are stored under it."""
    return next((m.name for m in strategy.members if m.summarizes), None)


def summary_diff(workspace: Workspace, session: SessionRecord, strategy: Strategy,
                 versions: tuple[int, ...] = ()) -> SummaryDiff:
    """The latest summary against the one before it, version N against the one before, or
    versions N and M; of the summarizing strategy in `strategy` (alone or combined), else
    of the strategy that summarized the session last."""
    from chatmem.errors import NotFound
    from chatmem.memory.summarizer import covered_turn

    store = workspace.store
    summarizing_name = summarizing(strategy)
    if summarizing_name is None:
        stored = store.memory.summaries(session.id)
        if not stored:
            raise NotFound(f"no summary in session {session.name!r}: the strategy"
                           f" {strategy.name!r} keeps none (try /strategy summary-buffer)")
        summarizing_name = max(stored, key=lambda s: s.created_at).strategy
    latest = store.memory.latest_summary(session.id, summarizing_name)
    if latest is None:
        raise NotFound(f"no summary yet in session {session.name!r} ({summarizing_name});"
                       " one is written after the first turn it summarizes")

    def version(number: int) -> SummaryRecord:
        if number == latest.version:
            return latest
        if number > latest.version:
            raise NotFound(f"no summary version {number} in session {session.name!r}"
                           f" ({latest.strategy} has v1–v{latest.version})")
        return store.memory.summary(session.id, latest.strategy, number)

    old: SummaryRecord | None
    if len(versions) == 2:
        old, new = version(versions[0]), version(versions[1])
    else:
        new = version(versions[0]) if versions else latest
        old = version(new.version - 1) if new.version > 1 else None
    turn_of = {m.id: m.turn for m in store.history.messages(session.id)}
    return SummaryDiff(new, old, covered_turn(new, turn_of))


def latest_summary(workspace: Workspace, session: SessionRecord,
                   strategy: str) -> SummaryRecord | None:
    return workspace.store.memory.latest_summary(session.id, strategy)


def summary_version(workspace: Workspace, session: SessionRecord, strategy: str,
                    version: int) -> SummaryRecord:
    return workspace.store.memory.summary(session.id, strategy, version)
