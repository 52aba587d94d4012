"""`/summary`: the current summary and what changed, or a diff of any two versions."""

from __future__ import annotations

from chatmem.errors import NotFound, UsageError
from chatmem.memory.summarizer import covered_turn
from chatmem.render.summary import summary_panel
from chatmem.repl.chat import Chat
from chatmem.repl.completion import SUMMARY_STRATEGIES
from chatmem.repl.table import slash
from chatmem.store import SummaryRecord


def summary_strategy(repl: Chat) -> str:
    """The summary strategy in use (alone or in a combination), else the one last summarized."""
    parts = repl.engine.strategy.name.split("+")
    for name in SUMMARY_STRATEGIES:
        if name in parts:
            return name
    versions = repl.engine.store.summaries(repl.engine.session.id)
    if not versions:
        raise NotFound(
            f"no summary in session {repl.engine.session.name!r}: the strategy"
            f" {repl.engine.strategy.name!r} keeps none (try /strategy summary-buffer)"
        )
    return max(versions, key=lambda s: s.created_at).strategy


def _version(word: str) -> int:
    try:
        number = int(word.removeprefix("v"))
    except ValueError:
        raise UsageError(f"/summary: version must be a whole number, got {word!r}") from None
    if number < 1:
        raise UsageError(f"/summary: versions start at 1, got {word!r}")
    return number


def _latest(repl: Chat, strategy: str) -> SummaryRecord:
    session = repl.engine.session
    latest = repl.engine.store.latest_summary(session.id, strategy)
    if latest is None:
        raise NotFound(f"no summary yet in session {session.name!r} ({strategy});"
                       " one is written after the first turn it summarizes")
    return latest


def _get(repl: Chat, latest: SummaryRecord, version: int) -> SummaryRecord:
    session = repl.engine.session
    if version == latest.version:
        return latest
    if version > latest.version:
        raise NotFound(f"no summary version {version} in session {session.name!r}"
                       f" ({latest.strategy} has v1–v{latest.version})")
    return repl.engine.store.summary(session.id, latest.strategy, version)


@slash("/summary", "/summary [N [M]]",
       "show the summary and its word diff against the previous version; N M diffs two versions",
       example="/summary 2 4", args=(0, 2), completes="summary")
def _summary(repl: Chat, args: list[str]) -> None:
    versions = [_version(word) for word in args]
    latest = _latest(repl, summary_strategy(repl))
    old: SummaryRecord | None
    if len(versions) == 2:
        old, new = _get(repl, latest, versions[0]), _get(repl, latest, versions[1])
    else:
        new = _get(repl, latest, versions[0]) if versions else latest
        old = _get(repl, latest, new.version - 1) if new.version > 1 else None
    turn_of = {m.id: m.turn for m in repl.engine.store.messages(repl.engine.session.id)}
    repl.show(summary_panel(new, old, covered_turn=covered_turn(new, turn_of)))
