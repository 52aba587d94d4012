"""A purge folds only the traditional Chinese characters simplified text never writes as
themselves.

Attacker review: purging 于梅 also erased 我姐姐叫於梅, and a dry run of 干隆 marked 乾隆: the
traditional → simplified fold search reads text by took 於 for 于 and 乾 for 干, though both
are simplified characters too (a surname, the emperor). A purge erases the exact value with
the foldings that cannot be someone else (臺北 is 台北); what only search's wider fold finds
is kept and listed apart, unsure.
"""

from __future__ import annotations

import json

import pytest
from cli_runner import chat, invoke
from conftest import History

from chatmem import fts
from chatmem.chinese_variants import simplified, solely_traditional
from chatmem.privacy.mentions import MARKER, Span, erase_mentions, mention_spans
from chatmem.privacy.near_mentions import other_spellings
from chatmem.store import Store

F = MARKER


def test_the_exact_fold_leaves_the_characters_simplified_text_writes_too() -> None:
    exact, wide = solely_traditional(), simplified()
    assert exact.items() <= wide.items() | {(ord("薴"), ord("苧"))}
    for character in "乾於著夥":
        assert ord(character) in wide and ord(character) not in exact
    assert "臺北禮金後個們".translate(exact) == "台北礼金后个们"
    # Search keeps its wider fold: 干隆 still finds 乾隆.
    assert fts.folded("乾隆於梅") == "干隆于梅"
    assert fts.folded("乾隆於梅", exact=True) == "乾隆於梅"


@pytest.mark.parametrize(("value", "text", "erased", "otherwise"), [
    ("于梅", "客户于梅下周来，我姐姐叫於梅", f"客户{F}下周来，我姐姐叫於梅", ["於梅"]),
    ("於梅", "我姐姐叫於梅，客户于梅", f"我姐姐叫{F}，客户于梅", ["于梅"]),
    ("干隆", "乾隆皇帝的故事", "乾隆皇帝的故事", ["乾隆"]),
    ("台北", "婚禮在臺北舉行，台北很美", f"婚禮在{F}舉行，{F}很美", []),
    ("臺北", "台北很美", f"{F}很美", []),
    ("于臺生", "於台生和于台生", f"於台生和{F}", ["於台生"]),
])
def test_a_mention_needs_only_the_folds_that_cannot_be_someone_else(
        value: str, text: str, erased: str, otherwise: list[str]) -> None:
    assert erase_mentions(text, [value]) == erased
    assert [text[s.start:s.end] for s in other_spellings(text, [value])] == otherwise


def test_an_exact_mention_is_never_also_listed_as_spelled_otherwise() -> None:
    text = "于梅和於梅"
    assert mention_spans(text, "于梅") == [Span(0, 2)]
    assert mention_spans(text, "于梅", wide=True) == [Span(0, 2), Span(3, 5)]
    assert other_spellings(text, ["于梅"]) == [Span(3, 5)]


def _said(history: History, session: str) -> list[str]:
    with Store(history.location, key=history.key) as store:
        return [m.content for m in store.history.messages(store.sessions.session(session).id)
                if m.role == "user"]


def test_a_purge_keeps_a_name_spelled_with_a_simplified_character_on_every_backend(
        history: History) -> None:
    db = str(history.location)
    chat(db, "zh", ["/remember 客户: 于梅", "客户于梅下周来", "我姐姐叫於梅，别弄混",
                    "/remember 同事: 干隆", "乾隆皇帝的故事",
                    "/remember 城市: 台北", "婚禮在臺北舉行"], code=0)
    dry = invoke("facts", "forget", "同事", "--purge", "--dry-run", "-s", "zh", "--db", db,
                 code=0)
    assert "[[乾隆]]" in dry.stdout and "kept, unsure" in dry.stdout
    listed = json.loads(invoke("facts", "forget", "同事", "--purge", "--dry-run", "--json",
                               "-s", "zh", "--db", db, code=0).stdout)["messages"]
    assert [(m["mentions"], m["spelled_otherwise"]) for m in listed if m["role"] == "user"] \
        == [([], [[0, 2]])]
    asked = invoke("facts", "forget", "客户", "--purge", "--dry-run", "-s", "zh", "--db", db,
                   code=0)
    assert "keeping 2 mentions spelled otherwise" in asked.stderr.replace("\n", " ")
    erased = invoke("facts", "forget", "客户", "--purge", "-y", "-s", "zh", "--db", db, code=0)
    # --yes reads no message to count what it kept, and still says what kind it kept.
    assert "kept any mention written 於 for 于" in erased.stderr.replace("\n", " ")
    assert "chatmem logs -q 於梅" in erased.stderr.replace("\n", " ")
    invoke("facts", "forget", "同事", "--purge", "-y", "-s", "zh", "--db", db, code=0)
    city = invoke("facts", "forget", "城市", "--purge", "-y", "-s", "zh", "--db", db, code=0)
    assert "臺" not in city.stderr  # 臺 is read as 台 by a purge too: erased, not kept
    assert _said(history, "zh") == [f"客户{F}下周来", "我姐姐叫於梅，别弄混", "乾隆皇帝的故事",
                                    f"婚禮在{F}舉行"]
