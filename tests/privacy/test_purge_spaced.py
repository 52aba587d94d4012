"""`facts forget --purge` finds a Chinese name spaced out: 王　芳 and 王 芳 mention 王芳.

Review of s51, fix E: rosters and minutes pad a two-character name to the width of three
with a full-width space (参会：王　芳、李　雷). The purge said "erased fact 1: 妻子" and the
name stayed in the message, the reply and the index: whitespace between two Han characters
of the value was never allowed. Now any run of it is, where the spaced form stands apart
(王 芳草 is 王 then 芳草, and stays).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import chat, invoke
from conftest import History

from chatmem.privacy.mentions import MARKER, Span, erase_mentions, kept_spans, mention_spans
from chatmem.store import Store

F = MARKER
SPACES = ["\u3000", " ", "\n"]
"""A full-width space (what a roster pads with), an ASCII one, a line break."""


def _said(history: History, session: str) -> list[str]:
    with history.open() as store:
        return [m.content for m in store.history.messages(store.sessions.session(session).id)]


def test_on_every_backend_a_purge_erases_a_name_spaced_out(history: History) -> None:
    location = str(history.location)
    said = [*(f"参会：王{space}芳、李{space}雷" for space in SPACES), "王 芳草地很美", "王芳芳来了"]
    with history.open() as store:
        session = store.sessions.create_session("名单", "buffer").id
        store.history.import_messages(session, [{"role": "user", "content": text}
                                                for text in said])
        store.facts.upsert_fact("妻子", "王芳", scope="session", session_id=session)
    invoke("facts", "forget", "名单", "妻子", "--purge", "--yes", "--db", location, code=0)
    assert _said(history, "名单") == [*(f"参会：{F}、李{space}雷" for space in SPACES),
                                    "王 芳草地很美", f"{F}芳来了"]


def test_the_dry_run_lists_the_spaced_mentions_and_not_the_words_that_spell_it(
        tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    chat(db, "名单", ["/remember 妻子：王芳", "参会：王　芳、李　雷", "我姓王 芳芳是我妹妹"],
         code=0)
    dry = invoke("facts", "forget", "名单", "妻子", "--purge", "--dry-run", "--json",
                 "--db", db, code=0)
    said = json.loads(dry.stdout)["messages"]
    listed = {m["content"]: [Span(*s) for s in m["mentions"]] for m in said}
    assert listed == {"参会：王　芳、李　雷": [Span(3, 6)],
                      "echo #1: 参会：王　芳、李　雷": [Span(12, 15)]}
    shown = invoke("facts", "forget", "名单", "妻子", "--purge", "--dry-run", "--db", db, code=0)
    assert "参会：[[王　芳]]、李　雷" in shown.stdout and "我姓" not in shown.stdout
    assert "2 mentions in 2 messages" in shown.stderr


@pytest.mark.parametrize(("text", "expected"), [
    ("参会：王　芳、李　雷", f"参会：{F}、李　雷"),
    ("王 芳", F), ("王\n芳", F), ("王\u00a0芳。", f"{F}。"), ("王\u2003芳", F),
    ("王\u3000\u200b芳", F), ("王\n\n芳", F), ("Wang（王 芳）", f"Wang（{F}）"),
    ("王芳草", f"{F}草"),  # unspaced, as before: the exact string, marked unsure
    # A space between two words that happen to spell the name: no mention.
    ("王 芳草", "王 芳草"), ("老王 芳草地", "老王 芳草地"), ("我姓王 芳芳", "我姓王 芳芳"),
    ("王　芳说", "王　芳说"),
])
def test_whitespace_between_two_han_characters_of_a_value(text: str, expected: str) -> None:
    assert erase_mentions(text, ["王芳"]) == expected


def test_the_rule_for_other_values() -> None:
    # A three-character name padded either way, kana, and a value stored spaced.
    assert erase_mentions("欧 阳 锋、欧阳　锋。", ["欧阳锋"]) == f"{F}、{F}。"
    assert erase_mentions("さ くら、さくら", ["さくら"]) == f"{F}、{F}"
    assert erase_mentions("王芳，王　芳", ["王 芳"]) == f"{F}，{F}"
    # Words of a script that spaces them still need the space, and Hangul keeps its.
    assert mention_spans("NewYork", "New York") == []
    assert mention_spans("김 민수", "김민수") == []
    # A longer stored name spaced out keeps the shorter inside it, as unspaced.
    assert kept_spans("张 伟明。", ["张伟"], ["张伟明"]) == []
    assert erase_mentions("张　伟明。", ["张伟"], keep=["张伟明"]) == "张　伟明。"


def test_the_index_holds_no_character_of_the_spaced_name_after_the_purge(
        tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    chat(db, "名单", ["/remember 妻子：王芳", "参会：王　芳、李　雷"], code=0)
    with Store(db) as store:
        assert store.db.newest_word_matches(["王"], 50) != []
    invoke("facts", "forget", "名单", "妻子", "--purge", "--yes", "--db", db, code=0)
    with Store(db) as store:
        assert store.db.newest_word_matches(["王"], 50) == []
        assert store.db.newest_word_matches(["芳"], 50) == []
        assert store.db.newest_word_matches(["李"], 50) != []
