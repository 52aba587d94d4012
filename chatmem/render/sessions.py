"""What a session operation did, as lines for the user (plain text: CLI and REPL print them)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any

from chatmem.render.counts import counted, listed
from chatmem.store import DerivedGroup, ExpiredFact, ExpiryCause, ForkReport
from chatmem.store.records import AccessLevel

if TYPE_CHECKING:
    from chatmem.app.indexing import BacklogStart
    from chatmem.app.session_files import FileLeftOut
    from chatmem.privacy.retention import Erasure
    from chatmem.store import SessionSummary
    from chatmem.store.records import SessionAccess
    from chatmem.store.sharing import Share


def fork_lines(report: ForkReport, source: str | None = None) -> list[str]:
    """What a fork copied and what its strategies will rebuild, as lines for the user;
    `source` names the original as the user named it (`ann/trip`, another's share)."""
    source, new = source or report.source.name, report.session.name
    upto = (f"with all {counted(report.source_turns, 'turn')}"
            if report.at_turn == report.source_turns
            else f"at turn {report.at_turn} of {report.source_turns}")
    lines = [f"forked session {source} → {new} {upto}: "
             f"{counted(report.messages, 'message')} copied"]
    if report.copied:
        lines.append("derived state copied: "
                     + "; ".join(_group_text(g) for g in report.copied))
    if report.rebuilt:
        lines.append(
            f"derived state rebuilt from the copied turns before {new}'s next turn "
            f"(it covers turns after {report.at_turn}): "
            + "; ".join(_group_text(g) for g in report.rebuilt))
    if report.stated_facts:
        lines.append(f"copied {counted(report.stated_facts, 'fact')} stated with /remember")
    lines.append(f"turn records (what was sent) stay with {source}")
    return lines


def _group_text(group: DerivedGroup) -> str:
    held = [counted(group.summaries, "summary version") if group.summaries else "",
            counted(group.facts, "fact") if group.facts else "",
            f"up to turn {group.covers_turn}"]
    return f"{group.owner} ({', '.join(h for h in held if h)})"


def backlog_lines(started: Sequence[BacklogStart]) -> list[str]:
    """What an import or a saved replay left without vectors, and who embeds it: one line
    for the sessions one process embeds (an archive of thirty sessions said thirty lines
    alike, each naming the same process)."""
    groups: dict[tuple[str, int | None], list[BacklogStart]] = {}
    for one in started:
        groups.setdefault((one.model, one.pid), []).append(one)
    return [_backlog_line(model, pid, group) for (model, pid), group in groups.items()]


def _backlog_line(model: str, pid: int | None, group: Sequence[BacklogStart]) -> str:
    names = [one.session for one in group]
    whose = (names[0] if len(names) == 1
             else f"{counted(len(names), 'session')} ({', '.join(names)})")
    wait = f"{counted(sum(one.missing for one in group), 'message')} of {whose}"
    if pid is not None:
        return (f"{wait} wait for vectors ({model}): embedding them in the background"
                f" (process {pid}); recall ranks the rest by words meanwhile")
    return (f"{wait} wait for vectors ({model}): recall ranks them by words until a"
            f" chat embeds them between turns, or `chatmem index {' '.join(names)}` now")


def days_text(days: float, *, measured: bool = False) -> str:
    """A length of time given in days. A length set (a retention, --older-than) is said
    exactly where a short number does: '1.3 days', '30 hours' (not '1.2 days'), '1.5 hours'
    (90min is not '2 hours'), '100 minutes'; a `measured` one (how long a session sat idle),
    and a set one no short number says exactly, is rounded: '1.3 days', '12 hours',
    '2 minutes' (never '0 hours')."""
    if not measured:
        if days >= 1 and _whole(days * 10):
            return _amount(days, "day")
        if 1 <= days * 24 < 100 and _whole(days * 48):
            return _amount(days * 24, "hour")
        if 1 <= days * 24 * 60 < 600 and _whole(days * 24 * 60):
            return _amount(days * 24 * 60, "minute")
    if days >= 1:
        return _amount(days, "day")
    for unit, per_day in (("hour", 24), ("minute", 24 * 60)):
        if round(days * per_day) >= 1:
            return _amount(round(days * per_day), unit)
    return "under a minute"


def _whole(number: float) -> bool:
    return abs(number - round(number)) < 1e-6


def _amount(count: float, unit: str) -> str:
    text = f"{count:,.1f}".removesuffix(".0")
    return f"{text} {unit}{'' if text == '1' else 's'}"


def erased_what(erasure: Erasure) -> str:
    """`2 sessions (6 messages) and 1 fact`, or `nothing`: what a prune or forget-me took."""
    parts = []
    if erasure.sessions:
        messages = sum(s.messages for s in erasure.sessions)
        parts.append(f"{counted(len(erasure.sessions), 'session')} "
                     f"({counted(messages, 'message')})")
    if erasure.facts:
        parts.append(counted(len(erasure.facts), "fact"))
    return " and ".join(parts) or "nothing"


def expiry_why(expired: ExpiredFact, zone: tzinfo | None) -> str:
    """Why a prune or forget-me erases a fact: `its end was 2026-03-02`, the end's day in the
    user's `zone` (a fact kept until 07:00 in Tokyo ended on the 2nd, not the UTC 1st)."""
    if expired.cause is ExpiryCause.ENDED and expired.ended_at is not None:
        try:
            ended = expired.ended_at.astimezone(zone)
        except OverflowError:  # year 1 west of UTC (a hand-edited row): its own date
            ended = expired.ended_at
        return f"its end was {ended:%Y-%m-%d}"
    if expired.cause is ExpiryCause.UNUSED:
        return f"unused for {expired.unused_days} days"
    if expired.cause is ExpiryCause.NO_OWNER:
        return "no session or profile owns it"
    return "user profile"


def erasure_json(erasure: Erasure, now: datetime, zone: tzinfo | None) -> dict[str, Any]:
    """`sessions prune --json` and `forget-me --json`: what went (or, dry, would go)."""
    return {
        "dry_run": erasure.dry_run,
        "sessions": [{"name": s.name, "user": s.user, "updated_at": s.updated_at,
                      "idle_days": round(s.idle_days(now), 1), "keep_days": s.keep_days,
                      "own_retention": s.own, "messages": s.messages, "turns": s.turns,
                      "failed": s.failed, "cancelled": s.cancelled,
                      "profile_facts": erasure.taught.get(s.id, [])}
                     for s in erasure.sessions],
        "facts": [{"id": e.fact.id, "key": e.fact.key, "scope": e.fact.scope,
                   "why": expiry_why(e, zone)} for e in erasure.facts],
    }


def erasure_text(erasure: Erasure) -> str:
    """`erased 1 session (4 messages)`; `would erase …` for a dry run."""
    return f"{'would erase' if erasure.dry_run else 'erased'} {erased_what(erasure)}"


def unanswered_words(failed: int, cancelled: int) -> str:
    """`1 failed, 2 cancelled`: a session's stored requests with no reply in its history
    (`logs` lists them); empty when none. A session of cancelled turns only was listed
    with 0 turns and 0 messages, as if it held nothing."""
    return ", ".join(f"{n:,} {word}" for n, word in ((failed, "failed"),
                                                     (cancelled, "cancelled")) if n)


def shared_cell(row: SessionSummary) -> str:
    """`sessions list`'s shared column: `read` or `write` for a session shared with the
    user, `with 2` for their own shared with two roles, empty for one not shared."""
    if row.access is not AccessLevel.OWN:
        return row.access.value
    return f"with {row.shares}" if row.shares else ""


def shared_words(row: SessionSummary) -> str:
    """The same in words, for the narrow layout's details line ("" when not shared)."""
    if row.access is AccessLevel.READ:
        return "shared with you read-only"
    if row.access is AccessLevel.WRITE:
        return "shared with you for writing"
    return f"shared with {counted(row.shares, 'role')}" if row.shares else ""


def sharing_rows(access: SessionAccess, shares: list[Share] | None) -> dict[str, str]:
    """`sessions show`'s lines on sharing: whom the user's own session is shared with and
    how, or who shared it with them and how; none in a file (it has one user)."""
    if access.owner is None:
        return {}
    if access.level is not AccessLevel.OWN:
        return {"shared by": f"{access.owner} ({access.level.value})"}
    return {"shared with": ", ".join(f"{s.grantee} ({s.mode.value})" for s in shares or [])
            or "nobody"}


_NO_FILES = "a transcript holds no files (chatmem sessions copy --to FILE.db copies them)"


def files_left_out_line(left_out: list[FileLeftOut]) -> str | None:
    """What an export of a transcript did not carry: the files its turns attached."""
    if not left_out:
        return None
    turns = [str(t) for t in sorted({f.turn for f in left_out})]
    names = list(dict.fromkeys(f.name for f in left_out))
    return (f"not in the transcript: {counted(len(left_out), 'file')} attached to"
            f" turn{'' if len(turns) == 1 else 's'} {listed(turns, 5)} ({listed(names)}):"
            f" {_NO_FILES}")


def archive_files_left_out_line(left_out: Sequence[tuple[str, int]]) -> str | None:
    """What `sessions export --all` did not carry: the files the sessions' turns attached."""
    if not left_out:
        return None
    names = [name for name, _ in left_out]
    return (f"not in the archive: {counted(sum(n for _, n in left_out), 'file')} attached to"
            f" turns of {counted(len(names), 'session')} ({listed(names)}): {_NO_FILES}")
