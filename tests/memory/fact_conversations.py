"""Scripted conversations shared by the entity, retrieval and combined tests."""

from __future__ import annotations

import json
from collections.abc import Callable

from registered import create_strategy

from chatmem.engine import Engine
from chatmem.memory.context import Context
from chatmem.memory.facts import BLOCK_CLOSE, BLOCK_OPEN

ENGLISH_FACTS = [
    "Hi! My name is Alice Moreau.",
    "My order id is ORD-7731.",
    "My budget is 5,000 euros.",
    "I live in Lisbon.",
    "I am allergic to peanuts.",
]
ENGLISH_VALUES = {
    "name": ("Alice Moreau", 1),
    "order id": ("ORD-7731", 2),
    "budget": ("5,000 euros", 3),
    "city": ("Lisbon", 4),
    "allergy": ("peanuts", 5),
}
TOPICS = [
    "volcanoes", "jazz history", "sourdough bread", "chess openings", "tide pools", "comets",
    "origami", "honeybees", "typography", "glaciers", "bicycle repair", "opera", "fungi",
    "lighthouses", "knitting", "octopuses", "sundials", "paper mills", "rainbows", "kites",
    "marathons", "violins", "deserts", "coral reefs", "telescopes", "maple syrup", "wolves",
    "pottery", "sailing knots", "auroras", "windmills", "penguins", "crosswords", "fossils",
]
ENGLISH_FILLER = [f"Tell me one curious thing about {topic}." for topic in TOPICS]

CHINESE_FACTS = [
    "我叫李雷。",
    "我的订单号是ORD-7731，预算五千元。",
    "我对花生过敏。",
    "我们五月去杭州旅行，想看西湖。",
]
CHINESE_FILLER = [
    "今天天气不错。", "推荐一本好书吧。", "怎样煮米饭更香？", "猫为什么喜欢睡觉？",
    "请讲一个笑话。", "月亮离地球有多远？", "学习编程难吗？", "茶和咖啡哪个更健康？",
    "周末适合做点运动。", "北京的冬天冷吗？", "给我一个早餐建议。", "如何养好绿萝？",
    "音乐能让人放松。", "长城有多长？", "怎么写一首短诗？", "熊猫吃什么？",
    "明天会下雨吗？", "一天喝多少水合适？",
]


def run_conversation(engine: Engine, lines: list[str]) -> None:
    for line in lines:
        result = engine.run_turn(line)
        assert result.status == "ok"
        assert result.notices == []


def english_session(make_engine: Callable[..., Engine], strategy: str = "entity",
                    **params: object) -> Engine:
    """39 committed turns: five facts, then 34 unrelated questions."""
    engine = make_engine(strategy, **params)
    run_conversation(engine, ENGLISH_FACTS + ENGLISH_FILLER)
    assert engine.history().turn_count() == 39
    return engine


def chinese_session(make_engine: Callable[..., Engine], strategy: str = "entity",
                    **params: object) -> Engine:
    """22 committed turns in Chinese: four with facts and plans, then small talk."""
    engine = make_engine(strategy, **params)
    run_conversation(engine, CHINESE_FACTS + CHINESE_FILLER)
    assert engine.history().turn_count() == 22
    return engine


def context_with(engine: Engine, strategy: str, text: str, **params: object) -> Context:
    """The context `strategy` would send for `text` now, on the engine's stored session."""
    chosen = create_strategy(strategy, {k: str(v) for k, v in params.items()})
    return chosen.build(engine.request(text))


def facts_in(context: Context) -> dict[str, tuple[str, str]]:
    """key → (value, source label) of the facts block of a context."""
    part = context.part("facts")
    if part is None:
        return {}
    (message,) = part.messages
    lines = message.content.split("\n")
    inside = lines[lines.index(BLOCK_OPEN) + 1 : lines.index(BLOCK_CLOSE)]
    # Each line is [id, key, value, turn] plus the session when stated in another one.
    rows = [json.loads(line) for line in inside]
    return {row[1]: (row[2], _source(row)) for row in rows}


def _source(row: list[object]) -> str:
    elsewhere = f" of session {row[4]}" if len(row) > 4 else ""
    return "/remember" if row[3] is None else f"turn {row[3]}{elsewhere}"


def sent_text(context: Context, *, without_input: bool = True) -> str:
    kinds = [p for p in context.parts if not (without_input and p.kind == "input")]
    return "\n".join(m.content for p in kinds for m in p.messages)


MIXED_TOPICS = ["trains", "weather", "hotels", "museums", "food"]


def mixed_line(i: int) -> str:
    """Turn i of a long mixed conversation: bookings with ids, prices and dates every ten
    turns, a Chinese traveller's details, a question about an earlier booking, small talk."""
    if i % 10 == 1:
        return (f"My booking number is BK-{1000 + i} and the price is {7 * i} EUR"
                f" on 2026-03-{(i + 1) % 28:02d}.")
    if i % 10 == 5:
        return f"我叫王小明{i}，预算是{i}千元，三月十五日出发，航班MU{5000 + i}。"
    if i % 10 == 7:
        return f"What was booking BK-{1000 + i - 6} about?"
    return f"Turn {i}: tell me something about topic {MIXED_TOPICS[i * 7 % 5]} number {i}."
