"""Summary versions as Rich panels: the text, a word-level diff, and what the summarizer dropped.

Removed words are red (struck through), added words green. CJK text is
diffed character by character, so changing 五千元 in a Chinese line marks a
few characters instead of the whole line; Rich measures wide characters in
cells, so the panel stays aligned.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from chatmem.memory.summarize import diff_size, word_diff
from chatmem.store import SummaryRecord

REMOVED = "red strike"
ADDED = "green"


def diff_text(old: str, new: str) -> Text:
    """`new` with the words removed from `old` shown inline in red, added ones in green."""
    text = Text()
    for op, run in word_diff(old, new):
        text.append(run, style={"-": REMOVED, "+": ADDED}.get(op, ""))
    return text


def dropped_list(anchors: Sequence[str], version: int) -> Text:
    text = Text("dropped by the summarizer", style="bold yellow")
    text.append(f" (kept verbatim as pinned facts since v{version}):", style="yellow")
    for anchor in anchors:
        text.append(f"\n  • {anchor}")
    return text


def summary_panel(new: SummaryRecord, old: SummaryRecord | None = None) -> Panel:
    """One version, diffed against `old` (an earlier version) when given."""
    blocks: list[RenderableType] = []
    covered = f"covers up to message {new.last_message_id}" if new.last_message_id else ""
    meta = " · ".join(x for x in (new.model or "", covered, new.created_at) if x)
    if old is None:
        blocks.append(Text(new.text))
        title = f"summary v{new.version} ({new.strategy})"
        subtitle = "first version" if new.version == 1 else f"v{new.version}"
    else:
        added, removed = diff_size(old.text, new.text)
        blocks.append(Text.assemble(
            ("removed ", "dim"), ("red", REMOVED), (" · added ", "dim"), ("green", ADDED),
            (f" · +{added} −{removed} words", "dim"),
        ))
        blocks.append(diff_text(old.text, new.text))
        title = f"summary v{old.version} → v{new.version} ({new.strategy})"
        subtitle = f"+{added} −{removed} words"
    if new.dropped_anchors:
        blocks.append(Text(""))
        blocks.append(dropped_list(new.dropped_anchors, new.version))
    if meta:
        blocks.append(Text(meta, style="dim"))
    return Panel(Group(*blocks), title=title, subtitle=subtitle, border_style="yellow")
