"""`/summary`: the current summary and what changed, or a diff of any two versions."""

from __future__ import annotations

from chatmem.app.summaries import summary_diff
from chatmem.errors import UsageError
from chatmem.render.summary import summary_panel
from chatmem.repl.chat import Chat
from chatmem.repl.table import slash


def _version(word: str) -> int:
    try:
        number = int(word.removeprefix("v"))
    except ValueError:
        raise UsageError(f"/summary: version must be a whole number, got {word!r}") from None
    if number < 1:
        raise UsageError(f"/summary: versions start at 1, got {word!r}")
    return number


@slash("/summary", "/summary [N [M]]",
       "show the summary and its word diff against the previous version; N M diffs two versions",
       example="/summary 2 4", args=(0, 2), completes="summary")
def _summary(repl: Chat, args: list[str]) -> None:
    diff = summary_diff(repl.workspace, repl.engine.session, repl.engine.strategy,
                        tuple(_version(word) for word in args))
    repl.show(summary_panel(diff.new, diff.old, covered_turn=diff.covered_turn,
                            zone=repl.workspace.settings.zone))
