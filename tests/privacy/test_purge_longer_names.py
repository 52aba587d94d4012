"""Purging a name keeps a longer name that holds it: 张伟 in 张伟明, as Ann in Anna.

Chinese writes no space after a name, so 张伟明 may be someone else (a colleague) or 张伟
then 明天: a mention inside a longer name the profile has stored (a fact's value, a pinned
detail) is kept, and `--dry-run` lists it apart, with the mentions erased though a longer
name may go on after them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import chat, invoke
from growth import assert_linear

from chatmem.privacy.mentions import MARKER, Span, erase_mentions, kept_spans, unsure
from chatmem.store import Store


def contents(db: Path, session: str) -> list[str]:
    with Store(db) as store:
        return [m.content for m in store.history.messages(store.sessions.session(session).id)]


# (the user's name, a colleague's that holds it, what the user says)
NAMES = [
    ("张伟", "张伟明", ["我的同事叫{other}，他住在上海。", "我叫{name}，住在杭州。"]),
    ("Ann", "Anna", ["My colleague is called {other}, she lives in Leeds.",
                     "I am {name}, I live in York."]),
]


@pytest.mark.parametrize(("name", "other", "said"), NAMES, ids=["zh", "en"])
def test_purging_a_name_keeps_a_longer_stored_name_that_holds_it(
        tmp_path: Path, name: str, other: str, said: list[str]) -> None:
    db = tmp_path / "h.db"
    lines = [s.format(name=name, other=other) for s in said]
    chat(db, "t", f"{lines[0]}\n/remember 同事: {other}\n{lines[1]}\n/remember 名字: {name}\n",
         code=0)
    dry = invoke("facts", "forget", "t", "名字", "--purge", "--dry-run", "--json",
                 "--db", str(db))
    assert dry.exit_code == 0, dry.stderr
    listed = {m["content"]: m for m in json.loads(dry.stdout)["messages"]}
    # The colleague's name is no mention (Anna is not listed at all; 张伟明 only as kept).
    assert listed.get(lines[0], {"mentions": []})["mentions"] == []
    assert listed[lines[1]]["mentions"] != []
    done = invoke("facts", "forget", "t", "名字", "--purge", "--yes", "--db", str(db))
    assert done.exit_code == 0, done.stderr
    kept = contents(db, "t")
    assert kept[0] == lines[0]  # 我的同事叫张伟明 as it was, not 我的同事叫[forgotten]明
    assert kept[2] == lines[1].replace(name, MARKER)
    with Store(db) as store:
        assert [f.value for f in store.facts.facts(session_id=store.sessions.session("t").id)] \
            == [other]


def test_the_dry_run_lists_what_it_keeps_and_what_may_be_a_longer_name_apart(
        tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    chat(db, "t", "我的同事叫张伟明。\n张伟说他明天来。\n/remember 同事: 张伟明\n"
                  "/remember 名字: 张伟\n", code=0)
    dry = invoke("facts", "forget", "t", "名字", "--purge", "--dry-run", "--db", str(db))
    assert dry.exit_code == 0, dry.stderr
    out = dry.stdout
    erased_part, _, rest = out.partition("erased, though a longer name may go on after it:")
    unsure_part, _, kept_part = rest.partition("kept, inside a longer stored name:")
    assert "[[张伟]]说他明天来" in erased_part and "[[张伟]]说他明天来" in unsure_part
    assert "我的同事叫[[张伟]]明" in kept_part and "[[张伟]]明" not in erased_part
    assert "keeping 2 mentions inside a longer stored name" in dry.stderr


def test_the_rule_without_a_store() -> None:
    text = "我的同事叫张伟明，张伟说明天见。"
    assert erase_mentions(text, ["张伟"]) == "我的同事叫[forgotten]明，[forgotten]说明天见。"
    assert erase_mentions(text, ["张伟"], keep=["张伟明"]) == \
        "我的同事叫张伟明，[forgotten]说明天见。"
    assert kept_spans(text, ["张伟"], ["张伟明"]) == [Span(5, 7)]
    assert unsure(text, Span(9, 11)) and not unsure("我叫张伟。", Span(2, 4))
    assert erase_mentions("Ann and Anna", ["Ann"], keep=["Anna"]) == f"{MARKER} and Anna"


@pytest.mark.parametrize(("value", "keep", "unit", "erased"), [
    ("张伟", "张伟明", "张伟明和张伟；", f"张伟明和{MARKER}；"),
    ("Ann Lee", "Ann Lee-Smith", "Ann Lee-Smith and Ann Lee; ", f"Ann Lee-Smith and {MARKER}; "),
])
def test_mentions_inside_a_longer_name_are_kept_in_time_linear_in_the_text(
        value: str, keep: str, unit: str, erased: str) -> None:
    """Each mention was checked against every mention of the longer names: a 28 KB message
    of 张伟明和张伟 took 1.8 s a look at what to keep, a purge looks more than once, and a
    message of 400 KB took minutes."""
    assert_linear(lambda text: kept_spans(text, [value], [keep]), lambda n: unit * n, 1000,
                  value)
    assert erase_mentions(unit * 3, [value], keep=[keep]) == erased * 3
