"""The scripted provider's rule-based fact extractor, in English and Chinese."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmem.memory.extraction_answer import parse_extraction
from chatmem.memory.extraction_request import extraction_messages
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


@pytest.mark.parametrize(("text", "sets"), [
    ("你好，我叫王小明，订单号是ORD-7731", [("名字", "王小明"), ("订单号", "ORD-7731")]),
    ("订单号ORD-7731", [("订单号", "ORD-7731")]),
    ("这次的航班号是CA1858。", [("航班号", "CA1858")]),
    ("my order number is KW-58213", [("order number", "KW-58213")]),
    ("Sure, the order number is KW-58213 and it's under Dana Whitfield.",
     [("order number", "KW-58213")]),
    ("The cabin Wi-Fi password is blue-otter-88.", [("cabin wi-fi password", "blue-otter-88")]),
    ("my order number is KW-58213 and it is late", [("order number", "KW-58213")]),
    # Question words inside a statement do not make it a question.
    ("我对吗啡过敏。", [("过敏", "吗啡")]),
])
def test_id_shaped_values_are_captured_with_their_key(text, sets) -> None:
    assert extract(text) == (sets, [])


@pytest.mark.parametrize("text", [
    "我的订单号是什么？", "我的订单号是多少", "我的名字是什么", "我住在哪里？", "预算是多少？",
    "我的订单号是ORD-7731吗", "我住在杭州吗",
    "what is my order?", "What is my order number?", "is my name Ada", "My name is?",
    "Can you use 07700 900123 instead?",
    # A key needs a link word (是, 为, a colon) unless it ends like one (号, 码).
    "去程坐MU5137", "the plan is fine",
])
def test_questions_and_keyless_ids_are_never_facts(text) -> None:
    assert extract(text) == ([], [])


def test_a_statement_next_to_a_question_still_counts() -> None:
    assert extract("我叫王小明，我的订单号是什么？") == ([("名字", "王小明")], [])
    assert extract("My name is Ada. What is my order?") == ([("name", "Ada")], [])


def test_a_retraction_asked_as_a_question_still_retracts() -> None:
    assert extract("Can you forget my city?") == ([], ["city"])


@given(st.text(alphabet=st.characters(blacklist_characters="。！？；，、\n;!?.,\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
               max_size=60), st.sampled_from(["?", "？"]))
def test_a_single_clause_asked_as_a_question_is_never_a_fact(text: str, mark: str) -> None:
    assert extract(text + mark)[0] == []
    assert extract(f"my order number is {text}{mark}")[0] == []
