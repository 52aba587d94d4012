"""A recalled statement brings what the user said about it later (chatmem.memory.later_mentions)."""

from __future__ import annotations

import pytest
from registered import create_strategy

from chatmem.memory.reasons import Recalled, RecallRoute
from chatmem.render.reasons import kept_text, reason_text

FILLER = {
    "en": ["Any tips for sleeping better?", "What should I read next?",
           "How long should I boil an egg?", "Recommend a history podcast."],
    "zh": ["有什么改善睡眠的建议？", "我接下来该读什么书？", "鸡蛋要煮多久？",
           "推荐一个历史播客。"],
}
CONVERSATIONS = {
    # The review's stale.jsonl: the statement, filler, its correction, more filler.
    "en": ("I eat a lot of meat, steak is my favourite.",
           "I no longer eat meat, I went vegetarian last month.", "What's my favourite food?"),
    # Two words shared, as in English (牛肉, 牛排: one bigram each).
    "zh": ("我吃很多牛肉，牛排是我的最爱。", "我不再吃牛肉和牛排了，上个月开始吃素。",
           "我最爱的食物是什么？"),
}


def recalled(make_engine, language: str, **params: str):
    statement, correction, question = CONVERSATIONS[language]
    filler = FILLER[language]
    engine = make_engine("buffer")
    for line in [statement, *filler * 2, correction, *filler * 2]:
        assert engine.run_turn(line).status == "ok"
    recall = create_strategy("retrieval", {"max_tokens": "150", "mode": "bm25", **params})
    context = recall.build(engine.request(question))
    sent = [m.content for m in context.part("recalled").messages]
    return context, sent, statement, correction


@pytest.mark.parametrize("language", sorted(CONVERSATIONS))
def test_a_recalled_statement_brings_the_later_one_that_corrects_it(
    make_engine, language: str,
) -> None:
    """The review's run: turn 1 "steak is my favourite" kept at 1.00, turn 10 "I no longer
    eat meat" left out for lack of room while filler filled it."""
    context, sent, statement, correction = recalled(make_engine, language)
    assert statement in sent and correction in sent
    assert sent.index(statement) < sent.index(correction)  # in conversation order
    row = next(r for r in context.recall if r["kept"] and r["turn"] == 10 and r["role"] == "user")
    assert row["route"] == RecallRoute.LATER.value
    assert kept_text(row) == "kept, later"
    made_room = [r for r in context.recall if r["why"] == "later_room"]
    assert made_room and not any(r["kept"] for r in made_room)
    reason = context.part("recalled").reason
    assert isinstance(reason, Recalled) and reason.by_later == 1
    assert "1 said later of a match" in reason_text(reason)
    assert context.tokens <= 150


@pytest.mark.parametrize("language", sorted(CONVERSATIONS))
def test_later_0_recalls_each_message_on_its_own(make_engine, language: str) -> None:
    context, sent, statement, correction = recalled(make_engine, language, later="0")
    assert statement in sent and correction not in sent
    assert not any(r.get("route") == RecallRoute.LATER.value for r in context.recall)


def test_a_later_message_sharing_only_common_words_is_not_brought(make_engine) -> None:
    """`I` and `my` are everywhere: a later message holding none of the statement's rare
    words is not taken for a word on it."""
    engine = make_engine("buffer")
    lines = ["My cat is called Tofu and she is grey.", *FILLER["en"] * 3,
             "My favourite colour is green."]
    for line in lines:
        assert engine.run_turn(line).status == "ok"
    recall = create_strategy("retrieval", {"max_tokens": "150", "mode": "bm25"})
    context = recall.build(engine.request("What is my cat called?"))
    assert not any(r.get("route") == RecallRoute.LATER.value for r in context.recall)


@pytest.mark.parametrize("language", sorted(CONVERSATIONS))
@pytest.mark.parametrize("order", [(10, 20, 30, 40), (40, 30, 20, 10)])
def test_later_matches_scoring_alike_are_read_in_the_search_order(
    language: str, order: tuple[int, ...],
) -> None:
    """Of later matches scoring the same, the READS first found are read (and the latest of
    them holding the rare words is the mention): equal scores keep the search's order."""
    from chatmem import fts
    from chatmem.memory.later_mentions import READS, Lookup, _latest_mention
    from chatmem.memory.packing import Ranked
    from chatmem.store.recall import WordMatches

    statement, correction, _ = CONVERSATIONS[language]

    def at(position: int) -> Ranked:
        return Ranked(position, position, position // 2, "user", 1.0, 1.0, None, 0.5, 10,
                      statement if position == 2 else correction)

    rare = set(fts.search_terms(statement)) & set(fts.search_terms(correction))
    scores = {p: 1.0 for p in order}
    lookup = Lookup(search=lambda text: WordMatches(scores),
                    text_at=lambda p: statement if p == 2 else correction, ranked_at=at)
    found = _latest_mention(at(2), rare, scores, [], lookup)
    assert found is not None and found.position == max(order[:READS])
