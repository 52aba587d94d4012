"""The one wording of why a part is sent and of what a context left out.

Values come from chatmem.memory.reasons; `inspect`, the prompt panel and `inspect --json`
all word them here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from functools import singledispatch
from typing import Any

from chatmem.memory.assembly import span
from chatmem.memory.reasons import (
    AllTurns,
    AttachedFiles,
    DroppedNote,
    DroppedTurns,
    FactsSelected,
    Merged,
    NewestTurns,
    NewInput,
    NotYetSummarized,
    PartReason,
    PinnedDetails,
    PinsLeftOut,
    PinsReleased,
    Recalled,
    RecallMethod,
    RecallRoute,
    RecallVerdict,
    SharedBudgetCut,
    StoredNote,
    StoredReason,
    Summarized,
    SummaryClipped,
    SummaryLeftOut,
    SummaryVersion,
    SystemPrompt,
    TurnRun,
    Unsummarized,
)
from chatmem.render.counts import counted
from chatmem.render.errors import by_plugin


def reason_text(reason: PartReason) -> str:
    """One line on why a part is sent, as `inspect` shows it."""
    return _worded(reason)


def dropped_text(notes: Sequence[DroppedNote]) -> str:
    """What a context left out, e.g. `dropped turns 1–3; summary v2 clipped to fit the budget`
    (empty when nothing was)."""
    return "; ".join(_worded(n) for n in notes)


def dropped_line(notes: Sequence[DroppedNote]) -> str:
    """`dropped turns 1–3`, or `dropped: summary v2 clipped …` for notes that do not start
    with the word."""
    text = dropped_text(notes)
    return text if text.startswith("dropped") else f"dropped: {text}"


def run_text(run: TurnRun | None) -> str:
    """'turns 3–7', 'turn 3' or 'no turns'."""
    return span(range(run[0], run[1] + 1)) if run else "no turns"


@singledispatch
def _worded(value: object) -> str:
    raise TypeError(f"no wording for {type(value).__name__}")


@_worded.register
def _(r: SystemPrompt) -> str:
    return "system prompt"


@_worded.register
def _(r: AttachedFiles) -> str:
    return f"{counted(r.count, 'attached file')}, quoted as data (always sent)"


@_worded.register
def _(r: NewInput) -> str:
    if r.continued:
        return "the new user input (always sent), and the reply so far, to be continued"
    return "the new user input (always sent)"


def _cut(text: str, cut: SharedBudgetCut | None) -> str:
    return f"{text}; {_worded(cut)}" if cut is not None else text


@_worded.register
def _(r: AllTurns) -> str:
    if r.cut is not None:  # no longer all of them
        return _cut(f"{r.strategy}: {run_text(r.turns)}", r.cut)
    if r.turns is not None and r.turns[0] == r.turns[1]:
        return f"{r.strategy}: {run_text(r.turns)}, the only one"  # not "all turn 1"
    return f"{r.strategy}: all {run_text(r.turns)}"


@_worded.register
def _(r: NewestTurns) -> str:
    text = f"{r.strategy} {r.setting}={r.value}: {run_text(r.turns)}"
    if r.behind:
        text += f" (summary behind: {r.behind})"
    if r.dropped:
        text += f"; {_worded(DroppedTurns(r.dropped, r.recalled))}"
        text += " to fit" if r.to_fit else ""
    return _cut(text, r.cut)


@_worded.register
def _(r: Unsummarized) -> str:
    why = f"summary behind: {r.behind}" if r.behind else "not yet summarized"
    return _cut(f"{run_text(r.turns)} ({why})", r.cut)


@_worded.register
def _(r: SummaryVersion) -> str:
    text = f"summary v{r.version} of {run_text((1, r.upto))} ({r.model or 'unknown model'})"
    if r.clipped_to is not None:
        text += f"; clipped to {r.clipped_to} tokens to fit the budget"
    return text


@_worded.register
def _(r: PinnedDetails) -> str:
    return f"kept verbatim: dropped by summary {', '.join(f'v{v}' for v in r.versions)}"


@_worded.register
def _(r: FactsSelected) -> str:
    how = (f"{r.sent} of {r.total} facts, ranked by overlap with the input" if r.ranked
           else "the only fact" if r.total == 1 else f"all {counted(r.total, 'fact')}")
    # Beside other sessions, the turns are said to be this one's and each source stands
    # apart: "from turn 2, session b" read as turn 2 of session b.
    whose = "this session's " if r.sessions else ""
    sources = [f"{whose}turn{'s' if len(r.turns) > 1 else ''} {', '.join(map(str, r.turns))}"
               ] if r.turns else []
    sources += [f"session {name}" for name in r.sessions]
    if r.remembered:
        sources.append("/remember")
    apart = "; " if r.sessions else ", "
    return f"{r.strategy} {r.setting}={r.value}: {how} (from {apart.join(sources)})"


def method_text(m: RecallMethod) -> str:
    """`hybrid (dense 0.5, smooth 0.5, sitting 0.3, mmr 0.7)`, and the fallback if any."""
    weights = []
    if m.mode == "hybrid":
        weights.append(f"dense {m.dense_weight:g}")
    if m.mode != "dense":
        weights.append(f"smooth {m.smooth:g}, sitting {m.sitting:g}")
    if m.mode != "bm25":
        weights.append(f"mmr {m.mmr:g}")
    text = f"{m.mode} ({', '.join(weights)})"
    if m.embedding_error is not None:
        by = by_plugin("embedder", m.failed_embedder)
        return f"{text}; embedding failed ({m.embedding_error}{by}), ranked by words only"
    return f"{text}; no embedder" if m.no_embedder else text


@_worded.register
def _(r: Recalled) -> str:
    budget = f"shared budget {r.max_tokens:,}" if r.shared else f"max_tokens={r.max_tokens}"
    text = (f"retrieval {method_text(r.method)} {budget}: "
            f"{r.sent} of {r.candidates} earlier messages, from"
            f" {counted(r.turns, 'turn')}, fused {r.low:.2f}–{r.high:.2f}")
    if r.left:
        text += f"; {r.left} more ranked, left out (see inspect)"
    if r.embedded is not None:
        text += f"; dense over {r.embedded:,} of {r.candidates:,} messages; indexing"
    routes = [f"{count} {_ROUTES[route]}" for route, count in (
        (RecallRoute.WORDS, r.by_words), (RecallRoute.MEANING, r.by_meaning),
        (RecallRoute.NEIGHBOUR, r.by_neighbour), (RecallRoute.SITTING, r.by_sitting),
        (RecallRoute.TIME, r.by_time), (RecallRoute.LATER, r.by_later)) if count]
    if routes:
        text += "; " + ", ".join(routes)
    if r.times_named:
        text += "; the input names " + ", ".join(span_text(*days) for days in r.times_named)
    if r.unnamed:
        text += "; meaning also read without " + ", ".join(r.unnamed)
    if r.dated:
        text += f"; the day said named above {counted(r.dated, 'run')} of messages"
    return text


def span_text(first: str, last: str) -> str:
    """`8 May 2023`, `1–10 Jun 2023`, `29 May–4 Jun 2023`, `1 Dec 2025–31 Jan 2026`."""
    a, b = date.fromisoformat(first), date.fromisoformat(last)
    if a == b:
        return f"{a.day} {a:%b %Y}"
    if a.year != b.year:
        return f"{a.day} {a:%b %Y}–{b.day} {b:%b %Y}"
    if a.month != b.month:
        return f"{a.day} {a:%b}–{b.day} {b:%b %Y}"
    return f"{a.day}–{b.day} {b:%b %Y}"


@_worded.register
def _(r: Merged) -> str:
    return " | ".join(dict.fromkeys(_worded(each) for each in r.reasons))


@_worded.register
def _(r: StoredReason) -> str:
    return r.text


@_worded.register
def _(n: DroppedTurns) -> str:
    text = f"dropped {run_text(n.turns)}"
    if n.recalled_messages:
        text += f" except {n.recalled_messages} recalled messages"
    if n.recalled_turns:
        text += f" ({n.recalled_turns} recalled)"
    return text


@_worded.register
def _(n: SharedBudgetCut) -> str:
    went = []
    if n.history:
        went.append(f"history {run_text(n.history)}")
    if n.recalled:
        listed = ", ".join(f"{turn} ({score:.2f})" for turn, score in n.recalled)
        went.append(f"recalled turn{'s' if len(n.recalled) > 1 else ''} {listed}")
    return f"{' and '.join(went)} left out to fit the shared budget of {n.budget:,}"


@_worded.register
def _(n: SummaryClipped) -> str:
    return f"summary v{n.version} clipped to fit the budget"


@_worded.register
def _(n: SummaryLeftOut) -> str:
    return f"summary v{n.version} left out: no room in the budget"


def _older_pins(count: int) -> str:
    return counted(count, "older pinned detail")


@_worded.register
def _(n: PinsLeftOut) -> str:
    return f"{_older_pins(n.count)} left out to fit"


@_worded.register
def _(n: PinsReleased) -> str:
    return (f"{_older_pins(n.count)} released to keep pins within {n.limit} tokens"
            " (/summary lists them)")


@_worded.register
def _(n: Summarized) -> str:
    return f"{run_text(n.turns)} summarized"


@_worded.register
def _(n: NotYetSummarized) -> str:
    return f"{run_text(n.turns)} not yet summarized, left out to fit"


@_worded.register
def _(n: StoredNote) -> str:
    return n.text


_ROUTES = {
    RecallRoute.WORDS: "by words",
    RecallRoute.MEANING: "by meaning",
    RecallRoute.NEIGHBOUR: "beside a match",
    RecallRoute.SITTING: "in a match's sitting",
    RecallRoute.TIME: "dated when asked",
    RecallRoute.LATER: "said later of a match",
}


_ROUTE_WORDS = {
    RecallRoute.WORDS: "words",
    RecallRoute.MEANING: "meaning",
    RecallRoute.NEIGHBOUR: "beside",
    RecallRoute.SITTING: "sitting",
    RecallRoute.TIME: "date",
    RecallRoute.LATER: "later",
}


def kept_text(row: Mapping[str, Any]) -> str:
    """`verdict_text`, and for a message kept by its ranking what brought it up
    (`kept, meaning`); a row an older version stored has no route."""
    text = verdict_text(row)
    if row.get("why") != RecallVerdict.KEPT.value:
        return text
    try:
        return f"{text}, {_ROUTE_WORDS[RecallRoute(row.get('route'))]}"
    except ValueError:
        return text


_VERDICTS = {
    RecallVerdict.KEPT: "kept",
    RecallVerdict.KEPT_AS_QUESTION: "kept: asks what a recalled reply answers",
    RecallVerdict.DOES_NOT_FIT: "budget: does not fit",
    RecallVerdict.NO_ROOM: "budget: no room left",
    RecallVerdict.TOO_SIMILAR: "diversity: too like what was kept",
    RecallVerdict.REPLY_FIRST: "left out: a reply cannot open the context",
    RecallVerdict.MADE_ROOM: "budget: made room for a better reply's question",
    RecallVerdict.SHARED_BUDGET: "shared budget: left out to fit",
    RecallVerdict.LATER_ROOM: "budget: made room for a later mention",
    RecallVerdict.DAY_LINES: "budget: made room for the days said",
    RecallVerdict.IN_HISTORY: "kept, in history",
}


def verdict_text(row: Mapping[str, Any]) -> str:
    """A recall row's `why`, worded; a row an older version stored holds its sentence."""
    why = row.get("why")
    try:
        verdict = RecallVerdict(why)
    except ValueError:
        return str(why or "")
    if verdict is RecallVerdict.TOP_K:
        # A TOP_K row holds the limit (as_json); a plugin's row may not.
        return f"top_k={row.get('top_k', '?')} reached"
    return _VERDICTS[verdict]
