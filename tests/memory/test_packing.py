"""`packing`: a message saying what a kept one says is never sent again (MMR λ < 1)."""

from __future__ import annotations

import numpy as np
import pytest
from fact_conversations import context_with

from chatmem.embeddings.hashed import HashEmbedder
from chatmem.memory.packing import Ranked, pack, said_key
from chatmem.memory.reasons import RecallVerdict


def test_a_copy_is_too_similar_where_the_embedder_puts_everything_close() -> None:
    """As e5-small does: an unrelated message at cosine 0.8, a copy at 1.0. At λ 0.6 the
    copy's penalty is only 0.08 above the other's, and its relevance wins that back."""
    other = np.array([0.8, 0.6], dtype=np.float32)
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], other], dtype=np.float32)
    texts = ["Draft an agenda template.", "draft an  agenda template.", "Suggest a retro."]

    def rows() -> list[Ranked]:
        return [Ranked(i, i + 1, i + 1, "user", 0.0, s, None, s, 10, t)
                for i, (s, t) in enumerate(zip([1.0, 0.99, 0.6], texts, strict=True))]

    diverse = rows()
    pack(diverse, 20, mmr=0.6, vectors=vectors)
    assert [r.kept for r in diverse] == [True, False, True]
    assert diverse[1].why is RecallVerdict.TOO_SIMILAR
    # λ 1 ranks by relevance alone: the copy is kept.
    plain = rows()
    pack(plain, 20, mmr=1.0, vectors=vectors)
    assert [r.kept for r in plain] == [True, True, False]


def test_the_same_text_said_by_the_other_role_is_not_a_copy() -> None:
    assert said_key("user", "OK.") != said_key("assistant", "OK.")
    assert said_key("user", "你好 世界") == said_key("user", " 你好\n世界 ")


ASKED = "Draft an agenda template for me."
TEMPLATE = "1. Updates 2. Decisions 3. Action items 4. AOB"
OTHERS = [("Suggest a retro format for the agenda review.", "Start, stop, continue."),
          ("把议程模板也翻译成中文。", "1. 进展 2. 决策 3. 行动项 4. 其他")]


@pytest.mark.parametrize("mode", ["bm25", "hybrid"])
def test_five_copies_of_one_exchange_do_not_fill_the_budget(make_engine, mode: str) -> None:
    embedder = HashEmbedder() if mode == "hybrid" else None
    engine = make_engine("retrieval", embedder=embedder, mode=mode)
    lines = []
    for n in range(5):
        for asked, answered in [(ASKED, TEMPLATE), OTHERS[n % 2]]:
            at = f"2026-05-07T09:{len(lines):02d}:00+00:00"
            lines += [{"role": "user", "content": asked, "ts": at},
                      {"role": "assistant", "content": answered, "ts": at}]
    lines += [{"role": "user", "content": "Thanks.", "ts": "2026-05-07T10:00:00+00:00"},
              {"role": "assistant", "content": "You're welcome.",
               "ts": "2026-05-07T10:00:00+00:00"}]
    engine.store.history.import_messages(engine.session.id, lines)
    engine.indexing.finish(engine.embedder)
    question = "Can you show me the agenda template again? 议程模板呢？"
    context = context_with(engine, "retrieval", question, mode=mode, max_tokens=160)
    sent = [m.content for m in context.part("recalled").messages]
    assert len(sent) == len(set(sent))
    assert {ASKED, TEMPLATE, OTHERS[0][0], OTHERS[1][0]} <= set(sent)
    copies = [r for r in context.recall if r["why"] == RecallVerdict.TOO_SIMILAR.value]
    assert copies
    # λ 1 (relevance alone) sends the copies.
    plain = context_with(engine, "retrieval", question, mode=mode, max_tokens=160, mmr=1)
    assert len(plain.part("recalled").messages) > len(
        {m.content for m in plain.part("recalled").messages})
