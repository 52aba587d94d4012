"""The word index holds what a reply says, not the reasoning it opens with.

A context sends a reply without its `<think>` block (message_counts.sent_text); indexed
whole, recall by words found a reply by what the model only thought, and sent the turn
as if it said it. Every path that writes an index entry: import, fork, a purge's rewrite.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import invoke
from matches import match_scores

from chatmem.store import Store

REPLY = "<think>用户可能喜欢 zebrafish 和蓝鲸，先想想 Quillborne</think>读《活着》吧，Quillborne。"


def _matched(db: Path, session: str, query: str) -> list[int]:
    with Store(db) as store:
        found = match_scores(store, store.sessions.session(session).id, query,
                             before_turn=99, limit=10)
    return sorted(found)


def test_a_replys_reasoning_is_not_indexed_on_any_path(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in [
        {"role": "user", "content": "推荐一本书"},
        {"role": "assistant", "content": REPLY},
        {"role": "user", "content": "<think>typed by the user</think> is kept"}]),
        encoding="utf-8")
    invoke("sessions", "import", str(transcript), "t", "--db", str(db), code=0)
    invoke("sessions", "fork", "t", "f", "--db", str(db), code=0)
    for session in ("t", "f"):
        assert _matched(db, session, "zebrafish") == []
        assert _matched(db, session, "蓝鲸") == []
        assert _matched(db, session, "活着") == [2]
        assert _matched(db, session, "typed") == [3]  # a user's text is what was sent
    # A purge rewrites the reply: its new entry leaves the reasoning out too.
    invoke("chat", "t", "--db", str(db), "--provider", "scripted",
           input="/remember name: Quillborne\n", code=0)
    invoke("facts", "forget", "t", "name", "--purge", "--yes", "--db", str(db), code=0)
    assert _matched(db, "t", "活着") == [2]
    assert _matched(db, "t", "zebrafish") == []
