"""Commands on PostgreSQL keep what SQLite keeps: a message too long for one tsvector is
stored and found by its words, and a copy that fails names its session."""

from __future__ import annotations

import json
import random
from pathlib import Path

from cli_runner import invoke
from pg import PostgresServer

from chatmem import fts
from chatmem.store.postgres_backend import PostgresBackend


def _chinese(count: int, seed: int) -> str:
    chosen = random.Random(seed)
    return "".join(chr(chosen.randint(0x4E00, 0x9FFF)) for _ in range(count))


def _english_words(count: int, seed: int) -> list[str]:
    chosen = random.Random(seed)
    return ["".join(chosen.choice("bcdfghjklmnpqrstvwxz") for _ in range(8))
            for _ in range(count)]


def _found(url: str, query: str) -> list[str]:
    """The sessions whose messages the word index finds for `query`, by their best match,
    searched by its terms as recall and logs search them (folded as the index is)."""
    with PostgresBackend(url) as db:
        ids = [message_id for message_id, _, _ in
               db.word_scores(fts.search_terms(query), None, None, 10)]
        return [name for (name,) in db.execute(
            "SELECT s.name FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE m.id = ANY(?) ORDER BY s.name", [ids])]


def test_a_chat_message_of_150000_chinese_characters_is_stored_and_found(pg_url: str) -> None:
    long = _chinese(150_000, seed=3)
    invoke("chat", "长消息", "--db", pg_url, "--provider", "scripted", "--allow-over-budget",
           input=long + "\n", code=0)
    listed = json.loads(invoke("sessions", "list", "--db", pg_url, "--json", code=0).stdout)
    assert [(s["name"], s["turns"]) for s in listed] == [("长消息", 1)]
    assert _found(pg_url, long[:2]) == ["长消息", "长消息"]  # the message and its echo
    shown = invoke("logs", "--db", pg_url, "-q", long[:2], "--json", code=0).stdout
    assert [turn["session"] for turn in json.loads(shown)] == ["长消息"]


def test_a_transcript_of_100000_distinct_words_imports_and_copies(pg_url: str,
                                                                   tmp_path: Path) -> None:
    words = _english_words(100_000, seed=7)
    transcript = tmp_path / "词.jsonl"
    transcript.write_text("\n".join(json.dumps({"role": role, "content": content},
                                               ensure_ascii=False) for role, content in (
        ("user", " ".join(words) + " 长长的英文"), ("assistant", "收到"))) + "\n",
        encoding="utf-8")
    invoke("sessions", "import", str(transcript), "词表", "--db", pg_url, "--no-index", code=0)
    assert _found(pg_url, words[0]) == ["词表"]
    sqlite = str(tmp_path / "h.db")
    invoke("sessions", "import", str(transcript), "复制", "--db", sqlite, "--no-index", code=0)
    invoke("sessions", "copy", "--from", sqlite, "--to", pg_url, code=0)
    assert _found(pg_url, words[0]) == ["复制", "词表"]


def test_a_copy_the_target_refuses_names_the_session(pg_server: PostgresServer, pg_url: str,
                                                     tmp_path: Path) -> None:
    sqlite = str(tmp_path / "h.db")
    for name, said in (("甲会话", "我们去杭州"), ("乙会话", "这句话被禁止")):
        invoke("chat", name, "--db", sqlite, "--provider", "scripted", input=said + "\n",
               code=0)
    with pg_server.admin(pg_url.split("/")[3].split("?")[0]) as conn:
        conn.execute("ALTER TABLE messages ADD CONSTRAINT 不许 CHECK (content NOT LIKE '%禁止%')")
    refused = invoke("sessions", "copy", "--from", sqlite, "--to", pg_url)
    assert refused.exit_code != 0
    assert "session '乙会话' could not be copied (no session was)" in refused.stderr
    assert refused.stderr.count("\n") == 1
    assert invoke("sessions", "list", "--db", pg_url, "--json", code=0).stdout.strip() == "[]"


def test_a_nul_character_is_stored_and_read_back_on_postgresql(pg_url: str,
                                                               tmp_path: Path) -> None:
    """PostgreSQL's text cannot hold U+0000: it is stored escaped and read back as it was,
    through a chat, an import, an export and a copy either way, as on SQLite (and U+FDD0, the
    escape, comes back as itself)."""
    said = "空字符\x00在这里 \ufdd0\ufdd1 又一个\x00"
    transcript = tmp_path / "空.jsonl"
    transcript.write_text(json.dumps({"role": "user", "content": said}) + "\n"
                          + json.dumps({"role": "assistant", "content": "好的\x00"}) + "\n",
                          encoding="utf-8")
    invoke("sessions", "import", str(transcript), "空字符", "--db", pg_url, "--no-index", code=0)
    invoke("chat", "聊天", "--db", pg_url, "--provider", "scripted",
           input="你好\x00世界\n第二句\n", code=0)

    def messages(db: str, name: str) -> list[str]:
        exported = tmp_path / f"{name}.jsonl"
        invoke("sessions", "export", name, "--db", db, "-o", str(exported), "--force", code=0)
        return [json.loads(line)["content"]
                for line in exported.read_text(encoding="utf-8").splitlines()
                if line.strip() and "content" in json.loads(line)]

    assert messages(pg_url, "空字符") == [said, "好的\x00"]
    assert messages(pg_url, "聊天")[:2] == ["你好\x00世界", "echo #1: 你好\x00世界"]
    sqlite = str(tmp_path / "h.db")
    invoke("sessions", "copy", "--from", pg_url, "--to", sqlite, code=0)
    assert messages(sqlite, "空字符") == [said, "好的\x00"]
    invoke("sessions", "rename", "空字符", "回来", "--db", sqlite, code=0)
    invoke("sessions", "copy", "回来", "--from", sqlite, "--to", pg_url, code=0)
    assert messages(pg_url, "回来") == [said, "好的\x00"]
