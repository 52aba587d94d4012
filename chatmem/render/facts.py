"""Tables of facts: id, key, value, scope, where it came from and how old it is."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from chatmem.privacy.phones import NumberForm
from chatmem.render.counts import counted
from chatmem.render.layout import Fitted
from chatmem.store import Place
from chatmem.timestamps import parse_time, utc_now

if TYPE_CHECKING:
    from chatmem.app.facts import Owner
    from chatmem.privacy.purge import LeftMentions, Mentioned
    from chatmem.store import Redaction

FACT_COLUMNS = ("id", "key", "value", "scope", "owner", "source", "age")
RECENT_VALUES = 3
"""Earlier values a facts table shows beside the current one unless told to show all: a fact
the entity strategy kept updating over a long history had thousands (one table line each)."""


def age(stamp: str | None, now: datetime | None = None) -> str:
    """'3 min', '2 h', '5 d' since an ISO timestamp."""
    if not stamp:
        return ""
    return _span(((now or utc_now()) - parse_time(stamp)).total_seconds())


def _span(seconds: float, *, nearest: bool = False) -> str:
    """`seconds` in its largest whole unit, rounded down (an age), or to the nearest
    (`nearest`: time left, so a fact kept 7 days reads "7 d" the second after, not "6 d")."""
    whole = max(0, int(seconds))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if whole >= size:
            return f"{round(seconds / size) if nearest else whole // size} {unit}"
    return f"{whole} s"


def fact_row(fact: Any, owner: str | None = None, *, session: str | None = None,
             history: Sequence[Any] = (), sessions: Mapping[int, str] | None = None,
             speaker: str | None = None) -> dict[str, Any]:
    """A FactRecord as a plain row, for tables and --json.

    `session` names the session it was stated in; `history` holds the values it
    had before (FactHistoryRecord), whose sessions `sessions` names; `speaker` the group
    chat member who stated it.
    """
    where = f" of session {session}" if session else ""
    source = (f"turn {fact.source_turn}{where}" if fact.source_turn is not None
              else "/remember" + (f" in session {session}" if session else ""))
    if speaker:
        source += f" by {speaker}"
    names = sessions or {}
    return {
        "kind": "fact",
        "id": fact.id,
        "key": fact.key,
        "value": fact.value,
        "scope": fact.scope,
        "owner": owner if owner is not None else (fact.user or fact.session_id),
        "source": source,
        "source_session": session,
        "source_turn": fact.source_turn,
        "source_message_id": fact.source_message_id,
        "speaker": speaker,
        "created_at": fact.created_at,
        "updated_at": fact.updated_at,
        "deleted_at": fact.deleted_at,
        "history_count": len(history),
        "history": [
            {"value": h.value, "key": h.key,
             "source_session": names.get(h.source_session_id) if h.source_session_id else None,
             "source_turn": h.source_turn, "stated_at": h.stated_at,
             "replaced_at": h.replaced_at}
            for h in history
        ],
    }


def fact_rows(facts: Sequence[Any], owner: Callable[[Any], str], names: Mapping[int, str],
              history: Mapping[int, Sequence[Any]], expires: Callable[[Any], str | None],
              speakers: Mapping[int, str] | None = None) -> list[dict[str, Any]]:
    """Rows for facts with their provenance (chatmem.memory.facts.provenance), when each
    expires (chatmem.privacy.retention.expiry_of) and who stated it in a group chat."""
    said_by = speakers or {}
    return [{**fact_row(f, owner(f), session=names.get(f.source_session_id or 0),
                        history=history.get(f.id, ()), sessions=names,
                        speaker=said_by.get(f.id)),
             "expires_at": expires(f)} for f in facts]


def pinned_row(pin: Any, owner: str, pinned_at: str | None = None) -> dict[str, Any]:
    """A drift-guard pin (chatmem.memory.pins.PinnedFact) as a row like a fact's."""
    return {
        "kind": "pinned",
        "id": pin.ref,
        "key": "(pinned)",
        "value": pin.text,
        "scope": "session",
        "owner": owner,
        "source": pin.source,
        "strategy": pin.strategy,
        "summary_version": pin.version,
        "created_at": pinned_at,
        "updated_at": pinned_at,
    }


def until(stamp: str | None, now: datetime | None = None) -> str:
    """'in 6 d', 'in 3 h', or 'now' for an ISO time; '' when there is none."""
    if not stamp:
        return ""
    left = (parse_time(stamp) - (now or utc_now())).total_seconds()
    return "in " + _span(left, nearest=True) if left > 0 else "now"


def facts_table(rows: Sequence[Mapping[str, Any]], title: str | None = "facts", *,
                recent: int | None = RECENT_VALUES) -> RenderableType:
    """Wide (CJK) characters are measured by Rich, so columns stay aligned.

    A fact's value is followed by its `recent` latest earlier values and how many older
    ones are left out (`recent` None: all of them). An `expires` column appears when a fact
    has an end (its own, or fact_idle_days).
    """
    if not rows:
        return Text("no facts yet: state them in the chat, or /remember KEY: VALUE", style="dim")
    out = Table(title=title, header_style="bold")
    columns = FACT_COLUMNS + (("expires",) if any(r.get("expires_at") for r in rows) else ())
    for column in columns:
        # Headers whole and a value's words readable, or the stacked layout below: on a
        # narrow terminal Rich would fold every cell to a character or two per line.
        out.add_column(column, overflow="fold", style="cyan" if column == "key" else None,
                       min_width=max(len(column), 6 if column in ("key", "value") else 0))
    stacked: list[RenderableType] = []
    for row in rows:
        cells = {**row, "age": age(row.get("updated_at")), "expires": until(row.get("expires_at"))}
        if row.get("history"):
            cells["value"] = value_with_history(row["value"], row["history"], recent)
        shown = {c: "" if cells.get(c) is None else str(cells[c]) for c in columns}
        out.add_row(*shown.values())
        stacked.append(Text.assemble((f"{shown['id']} ", "bold"), (shown["key"], "cyan"),
                                     " = ", shown["value"]))
        stacked.append(Padding(Text(" · ".join(f"{c} {shown[c]}" for c in columns[3:]
                                               if shown[c]), style="dim"), (0, 0, 0, 2)))
    return Fitted(out, Group(*([Text(title, style="bold")] if title else []), *stacked))


def value_with_history(value: str, history: Sequence[Mapping[str, Any]],
                       recent: int | None) -> str:
    """`ORD-9 ← ORD-8 ← ORD-7 ← … 6 older`: the newest value first, then what it replaced
    (`history` is oldest first), at most `recent` of those unless None."""
    shown = list(history if recent is None else history[max(0, len(history) - recent):])
    older = len(history) - len(shown)
    parts = [value, *(h["value"] for h in reversed(shown))]
    if older:
        parts.append(f"… {older:,} older")
    return " ← ".join(parts)


MENTION_OPEN, MENTION_CLOSE = "[[", "]]"


MENTION_CONTEXT = 40
"""Characters of a message kept on each side of a mention in a dry run's line."""


def mention_line(where: str, role: str, content: str,
                 spans: Sequence[tuple[int, int]]) -> Text:
    """`session s1, turn 2, user: my name is [[Ada]]`: a message a purge would change, each
    mention marked (bracketed, so the mark survives a pipe, and highlighted), with
    MENTION_CONTEXT characters around each: a pasted page whole buried its one mention,
    screens down, and a long history's dry run ran to thousands of lines."""
    from chatmem.render.terminal import printable

    room = MENTION_CONTEXT
    line = Text(f"{where}, {role}: ")
    last = 0
    for index, (start, end) in enumerate(spans):
        between = content[last:start]
        if index == 0 and len(between) > room:
            between = "…" + between[-room:]
        elif index > 0 and len(between) > 2 * room + 1:
            between = between[:room] + "…" + between[-room:]
        line.append(printable(between))
        line.append(f"{MENTION_OPEN}{printable(content[start:end])}{MENTION_CLOSE}",
                    style="bold red")
        last = end
    after = content[last:]
    line.append(printable(after if len(after) <= room or not spans else after[:room] + "…"))
    return line


def mentions_text(mentioned: Sequence[Mentioned]) -> str:
    erased = [m for m in mentioned if m.spans]
    mentions = sum(len(m.spans) for m in erased)
    sessions = len({m.message.session_id for m in erased})
    text = (f"{counted(mentions, 'mention')} in {counted(len(erased), 'message')}"
            f" of {counted(sessions, 'session')}")
    if unsure := sum(len(m.unsure) for m in erased):
        text += f" ({unsure} followed by more characters of a longer name, perhaps)"
    if kept := sum(len(m.kept) for m in mentioned):
        text += f", keeping {counted(kept, 'mention')} inside a longer stored name"
    if otherwise := sum(len(m.spelled_otherwise) for m in mentioned):
        # What search's wider fold finds and a purge leaves (乾隆 for 干隆): perhaps someone
        # else's name, which `logs -q` still finds afterwards.
        text += (f", keeping {counted(otherwise, 'mention')} spelled otherwise (乾 for 干,"
                 " 於 for 于), perhaps someone else")
    if numbers := sum(len(m.other_numbers) for m in mentioned):
        forms = [form for m in mentioned for form in m.number_forms]
        kind = kept_kind(forms)
        text += (f", keeping {counted(numbers, kind)} written {number_forms_text(forms)},"
                 f" perhaps another {kind}")
    return text


_FORM_WORDS = {
    NumberForm.PART: "in part (its last digits alone)",
    NumberForm.COUNTRY_CODE: "with a country code the fact does not give",
    NumberForm.MORE_DIGITS: "after more digits (another country's exit code or number)",
    NumberForm.DATE_ORDER: "in numbers that read either way round (7/5/2023: 7 May or July 5)",
    NumberForm.DATE_NO_YEAR: "without a year (5月7日, May 7: perhaps another year's)",
}
_DATE_FORMS = frozenset({NumberForm.DATE_ORDER, NumberForm.DATE_NO_YEAR})


def kept_kind(forms: Iterable[NumberForm]) -> str:
    """`date` when every form a purge kept is a date (read either way round, or without
    a year), else `number`."""
    return "date" if set(forms) <= _DATE_FORMS else "number"


def number_forms_text(forms: Iterable[NumberForm]) -> str:
    """`in part (its last digits alone) or with a country code the fact does not give`: how
    the numbers a purge keeps are written, in a fixed order."""
    return " or ".join(words for form, words in _FORM_WORDS.items() if form in forms)


def left_text(left: LeftMentions, *, done: bool) -> str:
    """`2 mentions in 2 messages of sessions owned by ann were not changed`."""
    return (f"{counted(left.mentions, 'mention')} in {counted(left.messages, 'message')} of"
            f" sessions owned by {left.owner} {'were' if done else 'would'} not"
            f" {'' if done else 'be '}changed (they are {left.owner}'s to erase)")


def redacted_text(done: Redaction, *, dry_run: bool = False) -> str:
    """`; its value was replaced by [forgotten] in 3 messages of 2 sessions, ...` (with
    `dry_run`, `would be`), and the other facts deleted as nothing of theirs was left."""
    words = {
        Place.MESSAGES: ("message", "messages"),
        Place.TURNS: ("recorded turn", "recorded turns"),
        Place.SUMMARIES: ("summary", "summaries"),
        Place.ANCHORS: ("summary's drift-guard anchors", "summaries' drift-guard anchors"),
        Place.STRATEGY_STATE: ("session's pinned details or strategy memory",
                               "sessions' pinned details or strategy memory"),
        Place.SYSTEM_PROMPTS: ("system prompt", "system prompts"),
        Place.PROBES: ("recall probe", "recall probes"),
        Place.FACTS: ("other fact", "other facts"),
        Place.FACT_HISTORY: ("earlier fact value", "earlier fact values"),
    }
    was, were = ("would be", "would be") if dry_run else ("was", "were")
    counts = done.counts
    parts = [counted(n, *words[place]) for place, n in counts.items() if place in words]
    text = ""
    if parts:
        text = (f"; its value {was} replaced by [forgotten] in {', '.join(parts)}"
                f" ({counted(len(done.sessions), 'session')})")
    if counts.get(Place.MESSAGES):
        text += f"; the search index {was} updated"
    if vectors := counts.get(Place.VECTORS):
        text += (f"; {counted(vectors, 'message vector')} {was if vectors == 1 else were}"
                 " dropped (`chatmem index` recomputes them)")
    if done.deleted_facts:
        keys = ", ".join(done.deleted_facts.values())
        text += (f"; {counted(len(done.deleted_facts), 'other fact')} ({keys})"
                 f" {was if len(done.deleted_facts) == 1 else were} deleted: nothing but"
                 " the erased value was left in it")
    if pins := done.dropped_pins:
        named = [ref for ref in pins if ref]
        text += (f"; {counted(len(pins), 'pinned detail')}"
                 f"{' (' + ', '.join(named) + ')' if named else ''}"
                 f" {was if len(pins) == 1 else were} dropped: nothing but the erased value"
                 " was left in it")
    if apart := done.distinct_keys:
        text += (f"; {counted(len(apart), 'other fact')} {was if len(apart) == 1 else were}"
                 f" keyed {', '.join(apart.values())}: the rewritten key was another fact's,"
                 " and one key holds one fact")
    return text


def owner_text(owner: Owner | None) -> str:
    """`user ann`, `session trip`: whose a fact or a pin is."""
    return f"{owner.scope} {owner.name}" if owner else ""


def kept_numbers_text(part: str, forms: Iterable[NumberForm]) -> str:
    """`kept any form of the number that may be another one, written in part ...: chatmem
    logs -q 0134 finds those with 0134 written apart, ...`: what a purge of a phone number
    leaves, uncounted."""
    # logs -q matches whole digit groups: a form written in one run (+8613800138000) holds
    # no group 8000, and no query finds every layout of a number yet.
    if set(forms) <= _DATE_FORMS:
        found = (f"chatmem logs -q {part} finds those of its year"
                 if NumberForm.DATE_ORDER in forms else "")
        if NumberForm.DATE_NO_YEAR in forms:
            found += f"{', and ' if found else ''}--dry-run lists those without one"
        return f"kept any date that may be another one, written {number_forms_text(forms)}: {found}"
    return (f"kept any form of the number that may be another one, written"
            f" {number_forms_text(forms)}: chatmem logs -q {part} finds those with {part}"
            " written apart, not those written in one run of digits")


def kept_spellings_text(value: str, pairs: Sequence[tuple[str, str]]) -> str:
    """`kept any mention written 於 for 于 (a search reads them alike, but they may name
    someone else): chatmem logs -q 於梅 finds them`."""
    other = value
    for shown, own in pairs:
        other = other.replace(own, shown)
    spelled = ", ".join(f"{shown} for {own}" for shown, own in pairs)
    return (f"kept any mention written {spelled} (a search reads them alike, but they may"
            f" name someone else): chatmem logs -q {other} finds them")


def unread_pins_text(session: str, owner: str, strategy: str | None) -> str:
    """What a listing, an erasure or an export passed over in a session another role shares:
    `strategy`'s pins, or (None) the whole session, a row of it not readable."""
    if strategy is None:
        return (f"left out session {session} (shared with you by {owner}): a row of it cannot"
                " be read (written outside chatmem)")
    name = session.partition("/")[2] or session
    return (f"passed over the {strategy} pins of session {session} (shared with you by"
            f" {owner}): they cannot be read (written outside chatmem); {owner} can drop them"
            f" with `chatmem sessions reset-state {name} {strategy}`")
