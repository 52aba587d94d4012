"""The summary panel: word diff in red and green, CJK by character, dropped anchors listed."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from chatmem.render.summary import (
    ADDED,
    REMOVED,
    DiffLegend,
    WordDiff,
    coverage,
    diff_text,
    sentences,
    summary_panel,
)
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
    assert text.plain == "Order ORD-7731 ships Monday→Friday."  # readable without colour
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
    assert "removed [-…-] · added [+…+] · +0 −1 words" in out  # no colour: markers
    assert "- My order [-ORD-7731-] ships Friday." in out  # removed words stay visible inline
    assert "dropped by the summarizer (kept verbatim as pinned facts since v7):" in out
    assert "  • ORD-7731" in out
    assert "scripted:scripted · 2026-05-07 10:00" in out  # no coverage given: none shown
    covered = show(summary_panel(new, old, covered_turn=29), width=100)
    assert "scripted:scripted · covers turns 1–29 · 2026-05-07 10:00" in covered


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


def test_a_rewritten_chinese_sentence_is_shown_whole_old_then_new() -> None:
    old = "- 两晚 1400 元，可以。演出在上海。"
    new = "- 两晚 1800 元，可以吗？演出在户外，住上海吗？"
    text = diff_text(old, new)
    # A changed amount stays inline; a rewritten sentence is not interleaved by character.
    assert styled(text, REMOVED) == ["1400", "。", "演出在上海。"]
    assert styled(text, ADDED) == ["1800", "吗？", "演出在户外，住上海吗？"]
    assert text.plain == "- 两晚 1400→1800 元，可以。→吗？演出在上海。→演出在户外，住上海吗？"


def test_a_small_change_in_a_chinese_sentence_stays_inline() -> None:
    text = diff_text("我们的预算是五千元。五月三日出发。", "我们的预算是六千元。五月三日出发。")
    assert styled(text, REMOVED) == ["五"] and styled(text, ADDED) == ["六"]


def test_chinese_diffs_count_characters_not_words() -> None:
    out = show(summary_panel(record(2, "- 预算六千元。"), record(1, "- 预算五千元。")))
    assert "+1 −1 characters" in out and "words" not in out
    english = show(summary_panel(record(2, "- Budget 6000 EUR."), record(1, "- Budget 5000 EUR.")))
    assert "+1 −1 words" in english


@pytest.mark.parametrize(("old", "new", "said"), [
    ("- 第5件事：我住在杭州。",
     "- 第5件事：我住在杭州。\n- 第6件事：我的订单号是 ORD-776，金额五千元",
     "+16 −0 characters and words"),
    ("- We fly to Hangzhou.", "- We fly to Hangzhou to meet 王小明.", "+5 −0 characters and words"),
])
def test_a_change_of_chinese_and_latin_says_it_counts_both(old: str, new: str,
                                                           said: str) -> None:
    """A new line of 14 Chinese characters and 2 words (6, ORD-776) read "+16 characters"."""
    out = show(summary_panel(record(2, new), record(1, old)))
    assert f"removed [-…-] · added [+…+] · {said}" in out


def test_coverage_counts_turns() -> None:
    assert coverage(1) == "turn 1" and coverage(29) == "turns 1–29" and coverage(None) == "–"


_PIECES = st.sampled_from(["预算", "五千元", "。", "，", "MU5137", " ships ", "Friday", "吗？",
                           "\n", "上海", "hotel", "。我们", "ORD-7731"])


@given(st.lists(_PIECES, max_size=12).map("".join), st.lists(_PIECES, max_size=12).map("".join))
def test_a_diff_keeps_both_versions_recoverable(old: str, new: str) -> None:
    text = diff_text(old, new)
    # Rebuild each version from the styled runs: unstyled text is shared, arrows are neither.
    edges = {0, len(text.plain)} | {s.start for s in text.spans} | {s.end for s in text.spans}
    cuts = sorted(edges)
    old_out: list[str] = []
    new_out: list[str] = []
    for start, end in pairwise(cuts):
        piece = text.plain[start:end]
        styles = {s.style for s in text.spans if s.start <= start and end <= s.end}
        if REMOVED in styles:
            old_out.append(piece)
        elif ADDED in styles:
            new_out.append(piece)
        elif "dim" not in styles:
            old_out.append(piece)
            new_out.append(piece)
    assert "".join(old_out) == old and "".join(new_out) == new
    assert "".join(sentences(old)) == old


def test_the_diff_is_marked_in_every_mode_and_coloured_on_top() -> None:
    # Colour alone cannot carry the diff: Rich colours TERM=xterm-mono, and screen
    # readers and red-green colour-blind readers cannot tell red from green.
    old, new = "- My order ships Monday.", "- My order ships Friday.\n- Refund approved."
    marked = "- My order ships [-Monday-]→[+Friday+].\n[+- Refund approved.+]\n"
    colour = Console(width=80, record=True, force_terminal=True, color_system="truecolor",
                     no_color=False)
    colour.print(DiffLegend(2, 1, "words"), WordDiff(old, new))
    assert colour.export_text(clear=False) == "removed [-…-] · added [+…+] · +2 −1 words\n" + marked
    assert "\x1b[" in colour.export_text(styles=True)  # colour as well
    for plain in (Console(width=80, record=True, color_system=None),  # a pipe, a file
                  Console(width=80, record=True, force_terminal=True, no_color=True)):
        plain.print(WordDiff(old, new))
        assert plain.export_text() == marked


def test_no_color_in_the_environment_marks_the_diff(monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    console = Console(width=80, record=True, force_terminal=True)
    console.print(WordDiff("- 预算五千元。", "- 预算六千元。"))
    assert console.export_text() == "- 预算[-五-]→[+六+]千元。\n"


def test_markers_keep_the_whitespace_outside() -> None:
    text = diff_text("Order ORD-7731 ships Monday.", "Order ships Friday.", markers=True)
    assert text.plain == "Order [-ORD-7731-] ships [-Monday-]→[+Friday+]."


def test_a_rewritten_chinese_line_never_shares_a_line_with_the_next_one() -> None:
    """A version's last line has no newline: shown whole, the line removed from it and
    the line added after it were glued on one line ([-预算八千元。-]→[+想去成都。+])."""
    old = "- 住在南京。\n- 预算八千元。"
    new = "- 住在南京。\n- 想去成都。\n- 喜欢爬山。"
    assert diff_text(old, new, markers=True).plain.splitlines() == [
        "- 住在南京。", "[-- 预算八千元。-]", "[+- 想去成都。+]", "[+- 喜欢爬山。+]"]
    shrunk = diff_text("- 甲乙丙丁。\n- 戊己庚辛。\n- 壬癸子丑。", "- 寅卯辰巳。\n- 午未申酉。",
                       markers=True)
    assert shrunk.plain.splitlines() == [
        "[-- 甲乙丙丁。-]", "[+- 寅卯辰巳。+]", "[-- 戊己庚辛。-]", "[+- 午未申酉。+]",
        "[-- 壬癸子丑。-]"]
    # Sentences of one paragraph still read old → new on their line.
    assert diff_text("甲乙丙。丁戊己。", "子丑寅。丁戊己。", markers=True).plain == (
        "[-甲乙丙。-]→[+子丑寅。+]丁戊己。")
