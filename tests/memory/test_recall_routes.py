"""What brought a recalled message up, as inspect says it: beside a match or in its sitting."""

from __future__ import annotations

import pytest
from registered import create_strategy

from chatmem.memory.reasons import Recalled, RecallRoute
from chatmem.render.reasons import kept_text, reason_text

CONVERSATIONS = {
    "en": (["My locker code is 4471 and my badge is B-220.", "I like hiking in 黄山.",
            "What is the weather like?", "Tell me a joke."], "What is my locker code?"),
    "zh": (["我的储物柜密码是4471，工牌是B-220。", "我喜欢去黄山徒步。", "今天天气怎么样？",
            "讲个笑话吧。"], "我的储物柜密码是多少？"),
}


@pytest.mark.parametrize("language", sorted(CONVERSATIONS))
def test_a_message_only_its_sitting_brought_is_not_said_to_be_beside_a_match(
    make_engine, language: str,
) -> None:
    """The review's run: turn 3's reply, two messages after the match and scoring only the
    sitting prior, read 'kept, beside' as if it sat next to the match."""
    lines, question = CONVERSATIONS[language]
    engine = make_engine("buffer")
    for line in lines:
        assert engine.run_turn(line).status == "ok"
    recall = create_strategy("retrieval", {"max_tokens": "200", "mode": "bm25"})
    context = recall.build(engine.request(question))
    routes = {(r["turn"], r["role"]): r.get("route") for r in context.recall if r["kept"]}
    assert routes[(1, "user")] == RecallRoute.WORDS.value
    assert routes[(2, "user")] == RecallRoute.NEIGHBOUR.value  # next to turn 1's reply
    assert routes[(3, "assistant")] == RecallRoute.SITTING.value
    reason = context.part("recalled").reason
    assert isinstance(reason, Recalled)
    counts = list(routes.values())
    assert (reason.by_neighbour, reason.by_sitting) == (
        counts.count(RecallRoute.NEIGHBOUR.value), counts.count(RecallRoute.SITTING.value))
    assert f"{reason.by_sitting} in a match's sitting" in reason_text(reason)
    row = next(r for r in context.recall if (r["turn"], r["role"]) == (3, "assistant"))
    assert kept_text(row) == "kept, sitting"


def test_without_a_sitting_prior_a_message_away_from_the_match_is_not_recalled(
    make_engine,
) -> None:
    lines, question = CONVERSATIONS["en"]
    engine = make_engine("buffer")
    for line in lines:
        assert engine.run_turn(line).status == "ok"
    recall = create_strategy("retrieval", {"max_tokens": "200", "mode": "bm25", "sitting": "0"})
    context = recall.build(engine.request(question))
    assert not any(r.get("route") == RecallRoute.SITTING.value for r in context.recall)
