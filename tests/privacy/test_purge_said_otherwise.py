"""A purged fact's number is erased as the user wrote it in the message it was read from.

A helper model writes "15000" for 我的月薪是一万五 and "25 cats" for "twenty-five cats"
(said_values takes those forms as said); `facts forget --purge` looked for the value as
written and left 一万五 in the message the fact cites.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import chat, invoke

from chatmem.memory.said_values import written_otherwise
from chatmem.privacy.mentions import MARKER
from chatmem.store import FactScope, Store

KEY = "correct horse battery staple"

# (what the user said, the fact's key and value, the message after the purge)
SAID = [
    ("我的月薪是一万五，房租两千五百元", "月薪", "15000", f"我的月薪是{MARKER}，房租两千五百元"),
    # The value whole, as "25 cats" is erased (privacy.number_forms: the amount in words).
    ("I have twenty-five cats and 3 dogs", "cats", "25 cats",
     f"I have {MARKER} and 3 dogs"),
]


def _stored(db: str, said: str, key: str, value: str, secret: str | None) -> None:
    """`said` in session t, and the fact extraction writes from it (citing its turn)."""
    chat(db, "t", [said, "and then?"], env={"CHATMEM_KEY": secret}, code=0)
    with Store(db, key=secret) as store:
        session = store.sessions.session("t")
        first = store.history.messages(session.id)[0]
        store.facts.upsert_fact(key, value, scope=FactScope.USER, user="default",
                                source_message_id=first.id, source_turn=first.turn,
                                source_session_id=session.id)


def _purged(db: str, key: str, secret: str | None) -> list[str]:
    invoke("facts", "forget", "t", key, "--purge", "--yes", "--db", db,
           env={"CHATMEM_KEY": secret}, code=0)
    with Store(db, key=secret) as store:
        return [m.content for m in store.history.messages(store.sessions.session("t").id)]


@pytest.mark.parametrize(("said", "key", "value", "after"), SAID, ids=["zh", "en"])
@pytest.mark.parametrize("secret", [None, KEY], ids=["plain", "encrypted"])
def test_a_purge_erases_the_number_as_the_cited_message_wrote_it(
        tmp_path: Path, said: str, key: str, value: str, after: str, secret: str | None
) -> None:
    db = str(tmp_path / "h.db")
    _stored(db, said, key, value, secret)
    kept = _purged(db, key, secret)
    assert kept[0] == after
    assert kept[1] == f"echo #1: {after}"  # the reply quoting it, in the same turn
    assert kept[2] == "and then?"


def test_on_postgresql_too(pg_url: str) -> None:
    said, key, value, after = SAID[0]
    _stored(pg_url, said, key, value, None)
    assert _purged(pg_url, key, None)[0] == after


def test_a_value_remembered_without_a_turn_is_looked_for_in_every_form(tmp_path: Path) -> None:
    # /remember cites no message; an amount is looked for in all its forms everywhere
    # (privacy.number_forms), so 一万五 goes as 15000 would.
    db = str(tmp_path / "h.db")
    chat(db, "t", ["我的月薪是一万五", "/remember 月薪: 15000"], code=0)
    kept = _purged(db, "月薪", None)
    assert kept[0] == f"我的月薪是{MARKER}"


def test_the_forms_of_a_value() -> None:
    assert written_otherwise("15000", "月薪一万五一个月") == ["一万五"]
    assert written_otherwise("15000", "I earn 15,000 a month") == ["15,000"]
    assert written_otherwise("25", "Twenty-five, not twenty") == ["Twenty-five"]
    assert written_otherwise("2500元", "两千五百元") == ["两千五百"]
    # One digit is searched for in no form (mentions.MIN_CHARACTERS): "three" is too common.
    assert written_otherwise("3", "three kids") == []
    assert written_otherwise("15000", "我的月薪是15000") == []
