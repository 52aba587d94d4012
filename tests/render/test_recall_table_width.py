"""The retrieval recall table of `inspect --next … --strategy retrieval` reads at 80 columns
(issue 21, Build 9): no header cut to …, no column wrapped one letter per line."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import invoke
from rich.cells import cell_len

HEADERS = ("turn", "bm25", "words", "dense", "fused", "tokens", "kept / why", "message")
INPUTS = ["my order is ORD-7731 and it arrived broken, the box was crushed in transit",
          "我们五月去杭州旅行，住在西湖边上的酒店", "the weather is nice today",
          "I like green tea a lot", "please refund my card"]


def recall_lines(tmp_path: Path, width: int) -> list[str]:
    db = str(tmp_path / f"r{width}.db")
    chatted = invoke("chat", "r", "--db", db, "--provider", "scripted",
                     input="\n".join(INPUTS) + "\n")
    assert chatted.exit_code == 0, chatted.stderr
    result = invoke("inspect", "r", "--db", db, "--provider", "scripted",
                    "--next", "what was my order number 杭州",
                    "--strategy", "retrieval:top_k=3,recent=2",
                    env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "recall: candidates ranked" in line)
    end = next(i for i, line in enumerate(lines) if "messages sent" in line)
    return [line for line in lines[start + 1:end] if line.strip()]


def test_the_recall_table_fits_80_columns_with_whole_headers_and_one_line_rows(
    tmp_path: Path
) -> None:
    lines = recall_lines(tmp_path, 80)
    assert all(cell_len(line) <= 80 for line in lines)
    header, rule, *rows = lines
    assert [cell.strip() for cell in header.split("  ") if cell.strip()] == list(HEADERS)
    assert "…" not in header and set(rule.strip()) == {"─"}
    # Six candidates (three kept, three past top_k), each on one line: nothing wrapped.
    assert len(rows) == 6
    whys = [row.split()[6:8] for row in rows]
    assert [w[0] for w in whys].count("kept,") == 3
    assert {w[1] for w in whys if w[0] == "kept,"} <= {"words", "meaning", "beside", "date"}
    assert whys.count(["top_k=3", "reached"]) == 3
    assert all(row.split()[0].isdigit() for row in rows)
    assert any("我们五月" in row for row in rows)


def test_a_narrower_message_column_is_cut_not_wrapped_and_wider_terminals_show_more(
    tmp_path: Path
) -> None:
    wide = recall_lines(tmp_path, 120)
    narrow = recall_lines(tmp_path, 80)
    assert len(wide) == len(narrow) == 8
    assert any("arrived broken" in line for line in wide)
    assert any(line.endswith("…") for line in map(str.rstrip, narrow))
    assert all(cell_len(line) <= 120 for line in wide)


def test_the_title_says_a_named_speaker_s_gain_takes_fused_past_1(tmp_path: Path) -> None:
    db = str(tmp_path / "group.db")
    chatted = invoke("chat", "g", "--db", db, "--provider", "scripted",
                     input="alice: I collect old maps of Dublin\nbob: nice maps, alice!\n")
    assert chatted.exit_code == 0, chatted.stderr
    asked = ["inspect", "g", "--db", db, "--provider", "scripted", "--next",
             "Which maps does alice collect?", "--strategy", "retrieval:mode=bm25,recent=1"]
    rows = json.loads(invoke(*asked, "--json").stdout)["context"]["recall"]
    assert max(row["fused"] for row in rows) > 1
    shown = invoke(*asked, env={"COLUMNS": "100"})
    assert shown.exit_code == 0, shown.stderr
    title = next(line for line in shown.stdout.splitlines() if "candidates ranked" in line)
    assert "speaker" in title, title
