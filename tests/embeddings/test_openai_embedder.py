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
