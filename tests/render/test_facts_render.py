"""The facts table: CJK cells stay aligned, ages read naturally."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.cells import cell_len
from rich.console import Console

from chatmem.render.facts import age, facts_table, until


def test_age_counts_up_in_natural_units() -> None:
    now = datetime(2026, 5, 3, 12, 0, tzinfo=UTC)
    assert age("2026-05-03T11:59:50+00:00", now) == "10 s"
    assert age("2026-05-03T11:30:00+00:00", now) == "30 min"
    assert age("2026-05-03T07:00:00+00:00", now) == "5 h"
    assert age("2026-04-30T12:00:00+00:00", now) == "3 d"
    assert age(None, now) == ""


def test_time_left_reads_the_span_given_not_one_unit_less() -> None:
    """A fact kept 7 days, listed a moment later, expires "in 7 d" (it said 6 d)."""
    now = datetime(2026, 5, 3, 12, 0, 5, tzinfo=UTC)
    assert until("2026-05-10T12:00:00+00:00", now) == "in 7 d"
    assert until("2026-05-03T15:00:00+00:00", now) == "in 3 h"
    assert until("2026-05-04T00:00:00+00:00", now) == "in 12 h"
    assert until("2026-05-03T12:00:30+00:00", now) == "in 25 s"
    assert until("2026-05-03T12:00:00+00:00", now) == "now"
    assert until(None, now) == ""


def test_chinese_values_keep_the_table_aligned() -> None:
    rows = [
        {"id": 1, "key": "名字", "value": "李雷", "scope": "user", "owner": "user 李",
         "source": "turn 1", "updated_at": None},
        {"id": 12, "key": "order id", "value": "ORD-7731", "scope": "session",
         "owner": "session trip", "source": "/remember", "updated_at": None},
    ]
    console = Console(width=120, record=True)
    console.print(facts_table(rows))
    lines = console.export_text().rstrip("\n").split("\n")
    widths = {cell_len(line) for line in lines if line.strip() and "facts" not in line}
    assert len(widths) == 1
    assert any("李雷" in line for line in lines) and any("ORD-7731" in line for line in lines)


def test_an_empty_table_says_how_to_add_facts() -> None:
    console = Console(width=120, record=True)
    console.print(facts_table([]))
    assert "no facts yet: state them in the chat, or /remember KEY: VALUE" in console.export_text()


def test_a_pinned_detail_reads_like_a_fact_with_its_summary_version() -> None:
    from chatmem.memory.pins import PinnedFact
    from chatmem.render.facts import pinned_row

    pin = PinnedFact(session_id=1, strategy="summary-buffer", text="五千元", version=2, pin_id=3)
    row = pinned_row(pin, "session 旅行", "2026-05-03T11:30:00+00:00")
    assert (row["kind"], row["id"], row["key"], row["value"], row["scope"], row["source"]) == (
        "pinned", "p3", "(pinned)", "五千元", "session", "summary-buffer v2 (pinned)")
    console = Console(width=120, record=True)
    console.print(facts_table([row]))
    line = next(x for x in console.export_text().splitlines() if "五千元" in x)
    assert [c.strip() for c in line.strip("│ ").split("│")][:6] == [
        "p3", "(pinned)", "五千元", "session", "session 旅行", "summary-buffer v2 (pinned)"]


def test_a_narrow_terminal_gets_each_fact_stacked_not_a_table_folded_to_letters() -> None:
    rows = [{"id": 1, "key": "地址", "value": "北京市海淀区中关村大街一号", "scope": "session",
             "owner": "session 旅行", "source": "turn 1", "updated_at": None},
            {"id": 2, "key": "order id", "value": "ORD-7731", "scope": "user",
             "owner": "user ann", "source": "/remember", "updated_at": None}]
    narrow = Console(width=40, record=True)
    narrow.print(facts_table(rows))
    lines = narrow.export_text().splitlines()
    assert all(cell_len(line) <= 40 for line in lines)
    assert "1 地址 = 北京市海淀区中关村大街一号" in [line.rstrip() for line in lines]
    assert "2 order id = ORD-7731" in [line.rstrip() for line in lines]
    wide = Console(width=120, record=True)
    wide.print(facts_table(rows))
    header = next(line for line in wide.export_text().splitlines() if "scope" in line)
    assert all(word in header for word in ("id", "key", "value", "scope", "owner", "source"))


def test_a_dry_run_line_keeps_the_words_around_each_mention_not_a_whole_pasted_page() -> None:
    """A purge's dry run printed each message whole: a pasted page with one mention filled
    screens with the mention somewhere inside, and a 2,000-turn history's ran to thousands
    of screen lines."""
    from chatmem.render.facts import MENTION_CONTEXT, mention_line

    before, middle, after = "前文" * 500, "中间的话" * 100, "after words " * 200
    content = f"{before}我的预算是五千元{middle}还是五千元{after}"
    first = content.index("五千元")
    second = content.index("五千元", first + 3)
    line = mention_line("session 旅行, turn 3", "user", content,
                        [(first, first + 3), (second, second + 3)]).plain
    assert line.count("[[五千元]]") == 2
    assert "我的预算是[[五千元]]中间的话" in line and "还是[[五千元]]after words" in line
    assert line.count("…") == 3
    assert len(line) < 3 * MENTION_CONTEXT * 2 + 100
    short = "我的预算是五千元。"
    assert mention_line("session 旅行, turn 1", "user", short, [(5, 8)]).plain \
        == "session 旅行, turn 1, user: 我的预算是[[五千元]]。"
