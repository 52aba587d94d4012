"""The scripted provider's rule-based fact extractor, in English and Chinese."""

from __future__ import annotations

import json

import pytest

from chatmem.memory.facts import extraction_messages, parse_extraction
from chatmem.providers.scripted import RULES, ScriptedProvider
from chatmem.providers.scripted_facts import extract


@pytest.mark.parametrize(("text", "sets", "retracts"), [
    ("Hi! My name is Alice Moreau.", [("name", "Alice Moreau")], []),
    ("Call me Al, please", [("name", "Al")], []),
    ("I'm allergic to peanuts and shellfish.", [("allergy", "peanuts and shellfish")], []),
    ("I am allergic to cats but I love dogs", [("allergy", "cats")], []),
    ("My order id is ORD-7731.", [("order id", "ORD-7731")], []),
    ("My budget is 5,000 euros, and my city is Lisbon.",
     [("budget", "5,000 euros"), ("city", "Lisbon")], []),
    ("I live in São Paulo!", [("city", "São Paulo")], []),
    ("Please forget my city.", [], ["city"]),
    ("The weather is nice today.", [], []),
    ("我叫李雷。", [("名字", "李雷")], []),
    ("我的订单号是ORD-7731，预算五千元，五月去杭州",
     [("订单号", "ORD-7731"), ("预算", "五千元")], []),
    ("我对花生过敏。", [("过敏", "花生")], []),
    ("我的名字是韩梅梅！", [("名字", "韩梅梅")], []),
    ("预算为三万元", [("预算", "三万元")], []),
    ("我住在杭州。", [("城市", "杭州")], []),
    ("请忘记我的预算", [], ["预算"]),
    ("今天天气不错。", [], []),
])
def test_statements_become_facts_verbatim(text, sets, retracts) -> None:
    assert extract(text) == (sets, retracts)


def test_the_answer_has_the_shape_a_model_must_give(store) -> None:
    messages = extraction_messages([], [(1, "我叫李雷。"), (2, "My order id is ORD-7731.")])
    provider = ScriptedProvider()
    answer = provider.complete(messages, purpose="facts")
    assert provider.calls_by_purpose == {"facts": 1} and provider.calls == 0
    assert json.loads(answer) == {
        "set": [
            {"key": "名字", "value": "李雷", "turn": 1, "scope": "user"},
            {"key": "order id", "value": "ORD-7731", "turn": 2, "scope": "session"},
        ],
        "retract": [],
    }
    parsed = parse_extraction(answer, [1, 2])
    assert [(c.key, c.value, c.scope, c.turn) for c in parsed.set] == [
        ("名字", "李雷", "user", 1), ("order id", "ORD-7731", "session", 2)]


def test_a_request_it_cannot_read_gets_an_empty_answer() -> None:
    answer = RULES["facts"]([{"role": "user", "content": "not json"}])
    assert json.loads(answer) == {"set": [], "retract": []}
