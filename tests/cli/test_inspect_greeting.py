"""A session that opens with the assistant's greeting (a character app's, a transcript's):
recall may send it first, as the conversation opened, where a reply cut from its question
never opens a context."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import invoke, output

OPENING = [
    {"role": "assistant", "content": "欢迎，旅人。The password is OWL-7."},
    {"role": "user", "content": "hi I am Bo"},
    {"role": "assistant", "content": "hello Bo"},
    {"role": "user", "content": "what is the weather like"},
    {"role": "assistant", "content": "sunny"},
]


def recalled_and_history(tmp_path: Path, question: str) -> list[tuple[str, list[str]]]:
    db = ("--db", str(tmp_path / "h.db"))
    transcript = tmp_path / "greeting.jsonl"
    transcript.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in [
        {"chatmem": 1, "title": "greeting"}, *OPENING]) + "\n", encoding="utf-8")
    invoke("sessions", "import", str(transcript), "--name", "g", "--no-index", *db, code=0)
    seen = json.loads(output("inspect", "g", "--next", question, "-s",
                             "retrieval:mode=bm25", "--json", "--provider", "scripted", *db))
    return [(p["kind"], [m["content"] for m in p["messages"]])
            for p in seen["context"]["parts"] if p["kind"] in ("recalled", "history")]


def test_recall_sends_the_greeting_the_session_opened_with_first(tmp_path: Path) -> None:
    assert recalled_and_history(tmp_path, "what is the password?") == [
        ("recalled", ["欢迎，旅人。The password is OWL-7.", "hi I am Bo", "hello Bo"]),
        ("history", ["what is the weather like", "sunny"]),
    ]


def test_a_reply_recalled_without_its_question_still_never_opens_it(tmp_path: Path) -> None:
    # "sunny" alone would open on a reply: it comes with its question or not at all.
    parts = dict(recalled_and_history(tmp_path, "is it sunny?"))
    recalled = parts.get("recalled", [])
    assert recalled[:1] != ["sunny"]
    assert recalled == [] or recalled[0] in ("欢迎，旅人。The password is OWL-7.", "hi I am Bo")
