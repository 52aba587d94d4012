"""Whose recall index the owner's retrieval reads (PostgreSQL): a word entry or a vector of
her message a write share's grantee deletes, inserts or rewrites by plain SQL is not hers.
The server stamps each `message_words` and `message_vectors` row with the role that writes
it (p027); a reader trusts only an entry it or the session's owner wrote, reads any other as
missing, and her next turn indexes such a message again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run
from grantees import sql_as
from pg import Team

from chatmem.store import Store

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

HERS = {"en": ["My name is Ann.", "I live in Hangzhou.", "I work on the compiler team.",
               "Our release is planned for May.", "The audit comes first.",
               "Staging moves to the new cluster.", "The budget review is on Thursday.",
               "My cat is called Mochi.", "I drink green tea.", "Tell me a joke."],
        "zh": ["我叫安娜。", "我住在杭州。", "我在编译器团队工作。", "我们的版本计划在五月发布。",
               "审计先进行。", "预发布环境迁移到新的集群。", "预算评审在周四。", "我的猫叫麻糬。",
               "我喝绿茶。", "给我讲个笑话。"]}
QUESTION = {"en": "Which city do I live in, Hangzhou?", "zh": "我住在哪个城市，杭州吗？"}
LIVES = {"en": "I live in Hangzhou.", "zh": "我住在杭州。"}


def indexed_session(team: Team, tmp_path: Path, language: str) -> tuple[str, str, Path, int]:
    """Ann's and bob's URLs, a config (scripted) and the id of ann's `proj` (retrieval
    strategy, her ten turns), shared with bob for writing."""
    config = tmp_path / "config.toml"
    config.write_text('provider = "scripted"\n', encoding="utf-8")
    ann, bob = team.url("ann"), team.url("bob")
    for i, said in enumerate(HERS[language]):
        run(ann, "ask", "proj", said, *(("--strategy", "retrieval", "--save") if i == 0 else ()),
            "--config", str(config), code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    (found,), = team.rows("SELECT id FROM sessions WHERE name = 'proj'")
    return ann, bob, config, int(found)


def recalled(url: str, config: Path, language: str, mode: str = "hybrid") -> list[str]:
    """What the next turn of ann's `proj` recalls (two messages, one recent; by words and
    meaning, or `mode`), as `url`'s role reads the index."""
    shown = json.loads(run(url, "inspect", "proj" if url.endswith("ann") else "ann/proj",
                           "--next", QUESTION[language], "-s", "retrieval", "-p", "top_k=2",
                           "-p", "recent=1", "-p", f"mode={mode}", "--json", "--config",
                           str(config), code=0).stdout)
    return [m["content"] for p in shown["context"]["parts"] if p["kind"] == "recalled"
            for m in p["messages"]]


def message_id(team: Team, session_id: int, content: str) -> int:
    (found,), = team.rows("SELECT id FROM messages WHERE session_id = %s AND content = %s",
                          [session_id, content])
    return int(found)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_index_a_grantee_empties_by_sql_comes_back_with_her_next_turn(
        team: Team, tmp_path: Path, language: str) -> None:
    ann, bob, config, session_id = indexed_session(team, tmp_path, language)
    assert recalled(ann, config, language)[0] == LIVES[language]
    assert sql_as(bob, "DELETE FROM message_words WHERE session_id = %s", [session_id]) > 0
    assert sql_as(bob, "DELETE FROM message_vectors WHERE message_id IN"
                       " (SELECT id FROM messages WHERE session_id = %s)", [session_id]) > 0
    assert LIVES[language] not in recalled(ann, config, language)
    # Her next turn indexes her messages again, words as vectors, as hers.
    run(ann, "ask", "proj", "ok", "--config", str(config), code=0)
    assert recalled(ann, config, language, "bm25")[0] == LIVES[language]
    assert recalled(ann, config, language)[0] == LIVES[language]
    assert team.rows("SELECT count(*) FROM messages m WHERE session_id = %s AND NOT EXISTS"
                     " (SELECT 1 FROM message_words w WHERE w.message_id = m.id)",
                     [session_id]) == [(0,)]
    assert team.rows("SELECT DISTINCT writer FROM message_words WHERE session_id = %s",
                     [session_id]) == [("ann",)]
    # A one-shot ask stops its background embedding after the batch at hand, which under
    # load may be none: `index` embeds the rest, and what it writes is hers as well.
    run(ann, "index", "proj", "--config", str(config), code=0)
    assert team.rows("SELECT DISTINCT v.writer FROM message_vectors v JOIN messages m"
                     " ON m.id = v.message_id WHERE m.session_id = %s", [session_id]) == [("ann",)]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_index_a_grantee_rewrites_by_sql_is_not_her_ranking(
        team: Team, tmp_path: Path, language: str) -> None:
    ann, bob, config, session_id = indexed_session(team, tmp_path, language)
    before = recalled(ann, config, language, "bm25")
    lives = message_id(team, session_id, LIVES[language])
    cat = message_id(team, session_id, HERS[language][7])
    original = vector(ann, session_id, cat)
    # He gives her cat's message the words, then the meaning, of where she lives, and
    # where she lives (and its reply) the words of her cat.
    assert sql_as(bob, "UPDATE message_words SET terms = (SELECT terms FROM message_words"
                       " WHERE message_id = %s) WHERE message_id = %s", [lives, cat]) == 1
    assert sql_as(bob, "UPDATE message_words SET terms = to_tsvector('english', 'mochi')"
                       " WHERE message_id IN (%s, %s)", [lives, lives + 1]) == 2
    assert recalled(bob, config, language, "bm25")[0] == HERS[language][7]  # his to read
    assert HERS[language][7] not in recalled(ann, config, language, "bm25")
    assert sql_as(bob, "UPDATE message_vectors SET vector = o.vector, context_vector ="
                       " o.context_vector FROM message_vectors o WHERE o.message_id = %s"
                       " AND o.model = message_vectors.model AND message_vectors.message_id"
                       " = %s", [lives, cat]) == 1
    assert vector(bob, session_id, cat) == vector(ann, session_id, lives)
    assert vector(ann, session_id, cat) is None
    # Her next turn puts her own entries in their place, which he reads too.
    run(ann, "ask", "proj", "ok", "--config", str(config), code=0)
    assert vector(ann, session_id, cat) == original == vector(bob, session_id, cat)
    assert recalled(ann, config, language, "bm25") == before
    assert recalled(bob, config, language, "bm25") == before


def vector(url: str, session_id: int, message: int) -> bytes | None:
    """The vector of `message` `url`'s role reads (None: none it trusts)."""
    with Store(url) as store:
        found = [v.vector for v in store.vectors.vector_rows(session_id, "hash")
                 if v.message_id == message]
    return bytes(found[0]) if found else None


def turn_recalled(url: str, config: Path) -> list[str]:
    """What the last turn of ann's `proj` recalled, as stored."""
    shown = json.loads(run(url, "inspect", "proj", "--json", "--config", str(config),
                           code=0).stdout)
    return [m["content"] for p in shown["context"]["parts"] if p["kind"] == "recalled"
            for m in p["messages"]]


@pytest.mark.parametrize(("language", "mode"), [("en", "bm25"), ("zh", "bm25"),
                                                ("zh", "hybrid")])
def test_her_first_turn_after_he_empties_the_words_recalls_by_them(
        team: Team, tmp_path: Path, language: str, mode: str) -> None:
    """Recall by words alone (mode=bm25) opens no embedder, and the entries he deleted were
    never indexed again; by words and meaning her first turn after it recalled without them
    (indexed again only after its commit)."""
    config = tmp_path / "config.toml"
    config.write_text('provider = "scripted"\n', encoding="utf-8")
    ann, bob = team.url("ann"), team.url("bob")
    for i, said in enumerate(HERS[language]):
        run(ann, "ask", "proj", said, *(("--strategy", "retrieval", "-p", "top_k=2", "-p",
                                         "recent=1", "-p", f"mode={mode}", "--save")
                                        if i == 0 else ()), "--config", str(config), code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    (session_id,), = team.rows("SELECT id FROM sessions WHERE name = 'proj'")
    assert sql_as(bob, "DELETE FROM message_words WHERE session_id = %s", [session_id]) > 0
    if mode == "hybrid":  # and the meaning, which her backlog embeds after the commit
        assert sql_as(bob, "DELETE FROM message_vectors WHERE message_id IN"
                           " (SELECT id FROM messages WHERE session_id = %s)", [session_id]) > 0
    run(ann, "ask", "proj", QUESTION[language], "--config", str(config), code=0)
    assert LIVES[language] in turn_recalled(ann, config)
    run(ann, "ask", "proj", QUESTION[language], "--config", str(config), code=0)
    assert LIVES[language] in turn_recalled(ann, config)
    assert team.rows("SELECT count(*) FROM messages m WHERE session_id = %s AND NOT EXISTS"
                     " (SELECT 1 FROM message_words w WHERE w.message_id = m.id)",
                     [session_id]) == [(0,)]
