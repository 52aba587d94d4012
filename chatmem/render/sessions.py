"""What a session operation did, as lines for the user (plain text: CLI and REPL print them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatmem.store import DerivedGroup, ForkReport

if TYPE_CHECKING:
    from chatmem.app.indexing import BacklogStart


def fork_lines(report: ForkReport) -> list[str]:
    """What a fork copied and what its strategies will rebuild, as lines for the user."""
    source, new = report.source.name, report.session.name
    upto = (f"with all {_count(report.source_turns, 'turn')}"
            if report.at_turn == report.source_turns
            else f"at turn {report.at_turn} of {report.source_turns}")
    lines = [f"forked session {source} → {new} {upto}: "
             f"{_count(report.messages, 'message')} copied"]
    if report.copied:
        lines.append("derived state copied: "
                     + "; ".join(_group_text(g) for g in report.copied))
    if report.rebuilt:
        lines.append(
            f"derived state rebuilt from the copied turns before {new}'s next turn "
            f"(it covers turns after {report.at_turn}): "
            + "; ".join(_group_text(g) for g in report.rebuilt))
    if report.stated_facts:
        lines.append(f"copied {_count(report.stated_facts, 'fact')} stated with /remember")
    lines.append(f"turn records (what was sent) stay with {source}")
    return lines


def _group_text(group: DerivedGroup) -> str:
    held = [_count(group.summaries, "summary version") if group.summaries else "",
            _count(group.facts, "fact") if group.facts else "",
            f"up to turn {group.covers_turn}"]
    return f"{group.owner} ({', '.join(h for h in held if h)})"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def backlog_line(started: BacklogStart) -> str:
    """What an import or a saved replay left without vectors, and who embeds it."""
    wait = f"{started.missing:,} message{'' if started.missing == 1 else 's'} of {started.session}"
    if started.pid is not None:
        return (f"{wait} wait for vectors ({started.model}): embedding them in the background"
                f" (process {started.pid}); recall ranks the rest by words meanwhile")
    return (f"{wait} wait for vectors ({started.model}): recall ranks them by words until a"
            f" chat embeds them between turns, or `chatmem index {started.session}` now")
