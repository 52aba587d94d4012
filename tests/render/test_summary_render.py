"""The summary panel: word diff in red and green, CJK by character, dropped anchors listed."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from chatmem.render.summary import ADDED, REMOVED, diff_text, summary_panel
from chatmem.store import SummaryRecord


def record(version: int, text: str, dropped: list[str] | None = None) -> SummaryRecord:
    return SummaryRecord(
        id=version, session_id=1, strategy="summary-buffer", version=version, text=text,
        covered_ids=[version * 2 - 1, version * 2], last_message_id=version * 2, anchors=[],
        dropped_anchors=dropped or [], model="scripted:scripted",
        created_at=f"2026-05-0{version}T10:00:00+00:00",
    )


def styled(text: Text, style: str) -> list[str]:
    return [text.plain[s.start:s.end] for s in text.spans if s.style == style]


def show(renderable: object, width: int = 80) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_removed_words_are_red_and_added_words_green() -> None:
    text = diff_text("Order ORD-7731 ships Monday.", "Order ships Friday.")
    assert text.plain == "Order ORD-7731 ships MondayFriday."
    assert styled(text, REMOVED) == [" ORD-7731", "Monday"]
    assert styled(text, ADDED) == ["Friday"]


def test_a_changed_chinese_amount_marks_characters_not_the_whole_line() -> None:
    text = diff_text("- 我们的预算是五千元，五月去杭州。", "- 我们的预算是一笔钱，五月去杭州。")
    assert styled(text, REMOVED) == ["五千元"]
    assert styled(text, ADDED) == ["一笔钱"]


def test_panel_shows_versions_diff_size_and_what_the_summarizer_dropped() -> None:
    old = record(6, "- My order ORD-7731 ships Friday.")
    new = record(7, "- My order ships Friday.", dropped=["ORD-7731"])
    out = show(summary_panel(new, old))
    assert "summary v6 → v7 (summary-buffer)" in out
    assert "removed red · added green · +0 −1 words" in out
    assert "- My order ORD-7731 ships Friday." in out  # removed words stay visible inline
    assert "dropped by the summarizer (kept verbatim as pinned facts since v7):" in out
    assert "  • ORD-7731" in out
    assert "scripted:scripted · covers up to message 14 · 2026-05-07T10:00:00+00:00" in out


def test_first_version_is_shown_as_plain_text() -> None:
    out = show(summary_panel(record(1, "- 我叫王小明")))
    assert "summary v1 (summary-buffer)" in out and "first version" in out
    assert "- 我叫王小明" in out


def test_wide_characters_keep_the_panel_aligned() -> None:
    out = show(summary_panel(record(2, "- 我们2026年5月1日出发去杭州，预算五千元。"),
                             record(1, "- 我们五月去杭州。")), width=40)
    from rich.cells import cell_len

    widths = {cell_len(line) for line in out.splitlines() if line}
    assert widths == {40}
