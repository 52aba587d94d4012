"""A Markdown export reads as the conversation it was: a message's own heading lines are no
turns, and a reply's reasoning is quoted apart, not run into its answer by a viewer."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cli_runner import invoke

REPLY = ("<think>用户想看格式\n### 先想想</think>Like this:\n\n### user · 2026-01-01\nfake turn\n\n"
         "```markdown\n### kept in code\n```\n# 标题")


def test_a_markdown_export_has_one_heading_a_message_and_quotes_reasoning(
        tmp_path: Path) -> None:
    db, transcript = tmp_path / "h.db", tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in [
        {"role": "user", "content": "## 怎么写导出？"}, {"role": "assistant", "content": REPLY},
        {"role": "user", "content": "thanks"}]), encoding="utf-8")
    invoke("sessions", "import", str(transcript), "t", "--db", str(db), code=0)
    out = invoke("sessions", "export", "t", "--format", "markdown", "--db", str(db),
                 code=0).stdout
    headings = re.findall(r"(?m)^ {0,3}#{1,6}(?:[ \t].*)?$", out.split("```")[0]
                          + out.split("```")[2])
    assert [h.split(" · ")[0] for h in headings] == [
        "# t", "### user", "### assistant", "### user"]
    assert "\\## 怎么写导出？" in out and "\\### user · 2026-01-01\nfake turn" in out
    assert "```markdown\n### kept in code\n```\n\\# 标题" in out  # code is shown as it is
    assert "> *reasoning:*\n>\n> 用户想看格式\n> \\### 先想想\n\nLike this:" in out
    assert "<think>" not in out and "</think>" not in out
