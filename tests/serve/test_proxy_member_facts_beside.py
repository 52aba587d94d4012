"""A group chat member's fact sits beside the owner's profile fact of the same key, never over
it (README: "beside the profile's, never over them"), through `chatmem serve` on SQLite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from test_proxy import RunningProxy
from test_proxy_group_facts import _facts_block, _post

from chatmem.config.settings import Settings
from chatmem.store import FactScope, Store


def _lines(db: Path, session: str, asked: str) -> list[list[object]]:
    block = _facts_block(db, session, asked)
    return [json.loads(line)[1:] for line in block.split("\n")[2:-1]]


def _profile(db: Path) -> dict[str, str]:
    with Store(db) as store:
        return {f.key: f.value for f in store.facts.facts(user=None, session_id=None)
                if f.scope == FactScope.USER}


@pytest.mark.parametrize("words", [
    ("name", "My name is Ann.", "My name is Mallory.", "My name is Annie.",
     "Ann", "Mallory", "Annie"),
    ("名字", "我叫安娜。", "我叫小明。", "我叫安妮。", "安娜", "小明", "安妮"),
])
def test_a_members_value_of_the_owners_key_does_not_hide_the_owners_fact(
        db_path: Path, words: tuple[str, ...]) -> None:
    """bob's "My name is Mallory." in ann's group chat became the session's value of `name`,
    and the session's own value hides the profile's: `inspect --next "who am I?"` sent only
    `[8,"name","Mallory",2,null,"bob"]`, not ann's name. Both are sent, his named as his;
    and ann's next "My name is Annie." is her profile's new name, not a change of his."""
    key, hers, his, again, her_value, his_value, her_new = words
    settings = Settings(provider="scripted", db=str(db_path), user_facts=True)
    with RunningProxy(settings, strategy="entity") as running:
        _post(running, "grp", {"role": "user", "content": hers})
        _post(running, "grp", {"role": "user", "name": "bob", "content": his})
        _post(running, "grp", {"role": "user", "name": "bob", "content": "ok"})
    assert _profile(db_path) == {key: her_value}
    sent = _lines(db_path, "grp", "who am I?")
    assert [key, her_value] in [line[:2] for line in sent]
    assert [key, his_value, 2, None, "bob"] in sent
    with RunningProxy(settings, strategy="entity") as running:
        _post(running, "grp", {"role": "user", "content": again})
        _post(running, "grp", {"role": "user", "content": "ok"})
    assert _profile(db_path) == {key: her_new}
    sent = _lines(db_path, "grp", "who am I?")
    assert [key, his_value, 2, None, "bob"] in sent
    assert [key, her_new] in [line[:2] for line in sent]


def test_the_extractor_is_told_whose_a_current_fact_is() -> None:
    """With bob's name beside the user's, the extractor saw two `name` facts alike and no
    way to tell the user's from his: a member's current fact carries its speaker."""
    from chatmem.memory.extraction_request import extraction_messages
    from chatmem.store import FactRecord

    def fact(id: int, scope: FactScope, value: str) -> FactRecord:
        return FactRecord(id, scope, None, 1, "name", value, id, 1, "2026-01-01T00:00:00Z",
                          "2026-01-01T00:00:00Z", None)

    sent = extraction_messages([fact(1, FactScope.USER, "Ann"),
                                fact(2, FactScope.SESSION, "小明")],
                               [(3, "hi")], stated_by={2: "小明"})
    assert json.loads(sent[1]["content"])["facts"] == [
        {"key": "name", "value": "Ann", "scope": "user"},
        {"key": "name", "value": "小明", "scope": "session", "speaker": "小明"}]
