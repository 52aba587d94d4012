"""Summary versions as Rich panels: the text, a diff, and what the summarizer dropped.

Removed text reads `[-removed-]`, added text `[+added+]`, in every mode: colour
(red struck through, green) goes on top where there is colour, but never carries
the meaning alone (a monochrome terminal Rich still colours, a screen reader, a
red-green colour-blind reader). Latin text is diffed
word by word. CJK text is diffed sentence by sentence: a sentence that
changed a little (五千元 → 六千元) marks the changed characters inline, but a
rewritten sentence is shown whole, old then new, because characters
interleaved from two different sentences read as gibberish once the colour
is gone. Rich measures wide characters in cells, so the panel stays aligned.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import tzinfo
from difflib import SequenceMatcher

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.panel import Panel
from rich.text import Text

from chatmem.fts import CJK
from chatmem.memory.summarizer import diff_size, diff_tokens, diff_unit, word_diff
from chatmem.render import when
from chatmem.store import SummaryRecord

REMOVED = "red strike"
ADDED = "green"
SIMILAR = 0.75
"""Sentences at least this alike (difflib ratio over characters) are diffed inline."""
ARROW = ("→", "dim")
"""Between removed text and the text that replaced it, so the diff reads without colour."""

_CJK_CHAR = re.compile(f"[{CJK}]")
_SENTENCE = re.compile(r"[^。！？；!?;\n]*(?:[。！？；!?;]+\n?|\n|$)")


def coverage(last_turn: int | None) -> str:
    """`turns 1–29`: what a summary version covers, in turns as the user counts them."""
    if not last_turn:
        return "–"
    return "turn 1" if last_turn == 1 else f"turns 1–{last_turn}"


def sentences(text: str) -> list[str]:
    """Sentences and clauses ending in CJK or Latin stops or newlines; they join back to `text`."""
    return [s for s in _SENTENCE.findall(text) if s]


def _marked(op: str, run: str) -> str:
    """`[-run-]` / `[+run+]`, with the run's outer whitespace left outside the markers."""
    core = run.strip()
    if not core:
        return run
    start = run[: len(run) - len(run.lstrip())]
    end = run[len(run.rstrip()):]
    return f"{start}[{op}{core}{op}]{end}"


def _append_runs(text: Text, runs: Sequence[tuple[str, str]], markers: bool,
                 line_ends: frozenset[int] = frozenset()) -> None:
    """`line_ends`: the runs that end a line without a newline of their own (the last
    line of a version): one follows on a line of its own, a dim newline in neither
    version between them."""
    previous, broken = "=", False
    for i, (op, run) in enumerate(runs):
        if previous == "-" and op == "+" and not broken:
            text.append(*ARROW)
        shown = _marked(op, run) if markers and op in "-+" else run
        text.append(shown, style={"-": REMOVED, "+": ADDED}.get(op, ""))
        broken = run.endswith("\n")
        if i in line_ends and not broken and i + 1 < len(runs):
            text.append("\n", style=ARROW[1])
            broken = True
        previous = op


def _similar(old: str, new: str) -> bool:
    a, b = diff_tokens(old), diff_tokens(new)
    return SequenceMatcher(None, a, b, autojunk=False).ratio() >= SIMILAR


def _add_whole(runs: list[tuple[str, str]], ends: set[int], last: set[tuple[str, int]],
               sign: str, index: int, sentence: str) -> None:
    """Add a sentence shown whole; note in `ends` whether it ends its version's last line."""
    if (sign, index) in last:
        ends.add(len(runs))
    runs.append((sign, sentence))


def diff_text(old: str, new: str, *, markers: bool = False) -> Text:
    """`new` with the text removed from `old` shown inline in red, added text in green.

    With `markers`, removed and added text are also wrapped in [-…-] and [+…+].
    """
    text = Text()
    if not (_CJK_CHAR.search(old) or _CJK_CHAR.search(new)):
        _append_runs(text, word_diff(old, new), markers)
        return text
    a, b = sentences(old), sentences(new)
    # In text of lines (a summary's "- …" list), a version's last sentence ends a line
    # too, newline or not: shown whole, it must not share a line with the next one.
    lines = "\n" in old or "\n" in new
    last = {("-", len(a) - 1), ("+", len(b) - 1)} if lines else set()
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            text.append("".join(a[i1:i2]))
            continue
        olds, news = a[i1:i2], b[j1:j2]
        paired = min(len(olds), len(news))
        runs: list[tuple[str, str]] = []
        ends: set[int] = set()
        for k in range(paired):
            if _similar(olds[k], news[k]):
                runs += word_diff(olds[k], news[k])
            else:
                _add_whole(runs, ends, last, "-", i1 + k, olds[k])
                _add_whole(runs, ends, last, "+", j1 + k, news[k])
        for k in range(paired, len(olds)):
            _add_whole(runs, ends, last, "-", i1 + k, olds[k])
        for k in range(paired, len(news)):
            _add_whole(runs, ends, last, "+", j1 + k, news[k])
        _append_runs(text, runs, markers, frozenset(ends))
    return text


class WordDiff:
    """A diff marked [-…-]/[+…+] on every console, coloured where it has colour."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield diff_text(self.old, self.new, markers=True)


class DiffLegend:
    """`removed [-…-] · added [+…+] · +6 −0 words`, the markers in their colours."""

    def __init__(self, added: int, removed: int, unit: str) -> None:
        self.added, self.removed, self.unit = added, removed, unit

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        removed, added = Text("[-…-]", style=REMOVED), Text("[+…+]", style=ADDED)
        yield Text.assemble(("removed ", "dim"), removed, (" · added ", "dim"), added,
                            (f" · +{self.added} −{self.removed} {self.unit}", "dim"))


def dropped_list(anchors: Sequence[str], version: int) -> Text:
    text = Text("dropped by the summarizer", style="bold yellow")
    text.append(f" (kept verbatim as pinned facts since v{version}):", style="yellow")
    for anchor in anchors:
        text.append(f"\n  • {anchor}")
    return text


def summary_panel(
    new: SummaryRecord, old: SummaryRecord | None = None, *, covered_turn: int | None = None,
    zone: tzinfo | None = None,
) -> Panel:
    """One version, diffed against `old` (an earlier version) when given.

    `covered_turn` is the last turn the version covers (it covers turns 1 to it); `zone`
    the time's, as `when` takes it.
    """
    blocks: list[RenderableType] = []
    covered = f"covers {coverage(covered_turn)}" if covered_turn else ""
    meta = " · ".join(x for x in (new.model or "", covered, when(new.created_at, zone)) if x)
    if old is None:
        blocks.append(Text(new.text))
        title = f"summary v{new.version} ({new.strategy})"
        subtitle = "first version" if new.version == 1 else f"v{new.version}"
    else:
        added, removed = diff_size(old.text, new.text)
        unit = diff_unit(old.text, new.text)
        blocks.append(DiffLegend(added, removed, unit))
        blocks.append(WordDiff(old.text, new.text))
        title = f"summary v{old.version} → v{new.version} ({new.strategy})"
        subtitle = f"+{added} −{removed} {unit}"
    if new.dropped_anchors:
        blocks.append(Text(""))
        blocks.append(dropped_list(new.dropped_anchors, new.version))
    if meta:
        blocks.append(Text(meta, style="dim"))
    return Panel(Group(*blocks), title=title, subtitle=subtitle, border_style="yellow")
