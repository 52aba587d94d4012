"""The `openai` embedder against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import numpy as np
import pytest
from registered import create_embedder, create_strategy

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.context_warnings import EmbeddingFailed
from chatmem.errors import ConfigError, ProviderError


def embedder_for(server, **table):
    settings = Settings(embeddings=EmbeddingsSection(provider="openai", model="nomic-embed-text",
                                    base_url=server.base_url, **table), max_retries=0)
    return create_embedder("openai", settings)


def test_vectors_come_back_in_input_order_and_unit_length(chat_server) -> None:
    embedder = embedder_for(chat_server)
    rows = embedder.embed(["aaaa", "hello 你好", "b"])
    assert rows.shape == (3, 8) and embedder.dimensions == 8
    assert np.allclose(np.linalg.norm(rows, axis=1), 1)
    assert rows[0][ord("a") % 8] == pytest.approx(1.0)  # "aaaa": one slot only
    sent = chat_server.requests[-1]
    assert (sent["model"], sent["input"]) == ("nomic-embed-text", ["aaaa", "hello 你好", "b"])
    assert embedder.key == "openai:nomic-embed-text"


def test_a_server_error_is_a_provider_error_naming_the_endpoint(chat_server) -> None:
    chat_server.plan = ["500"]
    with pytest.raises(ProviderError, match=r"embeddings at http://127\.0\.0\.1:\d+/v1 failed"):
        embedder_for(chat_server).embed(["x"])


def test_the_openai_embedder_needs_a_model() -> None:
    with pytest.raises(ConfigError, match=r"set \[embeddings\] model"):
        create_embedder("openai", Settings(embeddings=EmbeddingsSection(provider="openai")))


def test_retrieval_recalls_through_the_endpoint_and_falls_back_when_it_fails(
    make_engine, chat_server
) -> None:
    embedder = embedder_for(chat_server)
    engine = make_engine("retrieval", embedder=embedder)
    for line in ["aaaa aaaa", "zzzz", "qqqq", "wwww"]:
        assert engine.run_turn(line).status == "ok"
    engine.indexing.finish(embedder)  # the backlog's work between turns, done now
    context = engine.build_context("aaaa")
    assert "aaaa aaaa" in [m.content for m in context.part("recalled").messages]
    assert any(r["dense"] is not None for r in context.recall)
    chat_server.plan = ["500"]
    failed = create_strategy("retrieval").build(engine.request("aaaa"))
    assert [w for w in failed.warnings if isinstance(w, EmbeddingFailed)]
    assert failed.part("input").messages[0].content == "aaaa"


NAN = float("nan")


@pytest.mark.parametrize(("vectors", "said"), [
    ([[NAN] + [1.0] * 7, [1.0] * 8], "a vector holding NaN or infinity"),
    ([[1.0] * 8, [float("inf")] * 8], "a vector holding NaN or infinity"),
    ([[1.0] * 8, [1.0] * 3], "vectors of different lengths (3 and 8)"),
    ([[]], "an array of shape (2, 0) for 2 texts"),
])
def test_an_endpoints_vectors_that_are_no_vectors_are_one_error_naming_it(
        chat_server, vectors: list, said: str) -> None:
    """One NaN was stored (as float16 NaN) and turned off recall by meaning for the session
    without a word; rows of different lengths were numpy's raw ValueError."""
    chat_server.vectors = vectors
    with pytest.raises(ProviderError) as error:
        embedder_for(chat_server).embed(["a", "b"])
    assert str(error.value).startswith(f"embeddings at {chat_server.base_url} answered {said}")


def test_an_endpoints_later_vectors_keep_the_width_of_its_first(chat_server) -> None:
    embedder = embedder_for(chat_server)
    assert embedder.embed(["a"]).shape == (1, 8)
    chat_server.vectors = [[1.0] * 4]
    with pytest.raises(ProviderError, match=r"shape \(1, 4\) for 1 texts; it should be \(1, 8\)"):
        embedder.embed(["b"])


def test_a_nan_from_the_endpoint_is_not_stored_and_recall_works_once_it_recovers(
        make_engine, chat_server) -> None:
    embedder = embedder_for(chat_server)
    engine = make_engine("retrieval", embedder=embedder)
    chat_server.vectors = [[NAN] * 8]
    for line in ["aaaa aaaa", "zzzz"]:
        assert engine.run_turn(line).status == "ok"
    with pytest.raises(ProviderError):
        engine.indexing.finish(embedder)
    chat_server.vectors = None
    engine.indexing.finish(embedder)  # nothing stored as NaN: the messages are embedded now
    context = create_strategy("retrieval").build(engine.request("aaaa"))
    assert not [w for w in context.warnings if isinstance(w, EmbeddingFailed)]
    assert "aaaa aaaa" in [m.content for m in context.part("recalled").messages]
    assert any(r["dense"] is not None for r in context.recall)
