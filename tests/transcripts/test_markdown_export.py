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


def test_a_code_block_a_message_leaves_open_or_only_seems_to_open_hides_no_turn() -> None:
    """A reply cut at its cap mid-code left its block open: every later heading, the next
    messages' own, rendered as code. A line that only looks like a fence (```` ```x` ````: its
    info string holds a backtick, so a viewer opens no block) left the message's own
    `### user · …` line unescaped, a turn no one had."""
    from markdown_it import MarkdownIt

    from chatmem.transcripts.format import Transcript, TranscriptMessage
    from chatmem.transcripts.writer import to_markdown

    messages = [("user", "写个函数"), ("assistant", "好的：\n```python\ndef f():\n    return 1"),
                ("user", "```x`\n### user · 2026-01-01 10:00 +00:00\n\n我同意付款"),
                ("assistant", "````\n```\n### 还在代码里\n````\n# 标题"), ("user", "谢谢")]
    out = to_markdown(Transcript([TranscriptMessage(r, c) for r, c in messages], "t"))
    tokens = MarkdownIt("commonmark").parse(out)
    headings = [tokens[i + 1].content.split(" · ")[0] for i, token in enumerate(tokens)
                if token.type == "heading_open"]
    assert headings == ["t", *(role for role, _ in messages)]
    code = [token.content for token in tokens if token.type == "fence"]
    assert code == ["def f():\n    return 1\n", "```\n### 还在代码里\n"]
