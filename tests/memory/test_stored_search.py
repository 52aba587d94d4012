"""`request.search`: the session's word search and stored vectors, read-only, for a plugin's
strategy (README, "Searching what is stored"). Before it a plugin had to walk the whole
history each build and embed every message again; now it gets retrieval's own sources,
bounded to the turns its history holds, as stored messages it may send as they are."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from chatmem.embeddings.hashed import HashEmbedder
from chatmem.history import StoredHistory
from chatmem.memory.base import MemoryEnv

LINES = [
    ("user", "My dentist is Dr Okafor on Elm Street."),
    ("assistant", "Noted: Dr Okafor, Elm Street."),
    ("user", "我们五月去杭州旅行，预算五千元。"),
    ("assistant", "好的，五月杭州，预算五千元。"),
    ("user", "Pasta for dinner tonight."),
    ("assistant", "Enjoy the pasta."),
    ("user", "The dentist moved my visit to Tuesday."),
    ("assistant", "Tuesday, then."),
]


def engine_with(make_engine, embedder=None):
    engine = make_engine("window", embedder=embedder)
    engine.store.history.import_messages(
        engine.session.id, [{"role": r, "content": c} for r, c in LINES])
    if embedder is not None:
        engine.indexing.finish(embedder)
    return engine


def stored(engine):
    return {m.id: m for t in engine.request("x").history.turns(1, 99) for m in t.messages}


def test_words_finds_english_and_chinese_as_the_history_holds_them(make_engine) -> None:
    engine = engine_with(make_engine)
    request = engine.request("who is my dentist?")
    history = stored(engine)
    found = request.search.words("dentist Okafor")
    assert [f.message.content for f in found][:1] == ["My dentist is Dr Okafor on Elm Street."]
    assert {f.message.content for f in found} >= {"The dentist moved my visit to Tuesday."}
    # Stored messages as the history gives them (text, role, tokens, id, turn): sendable.
    assert all(f.message == history[f.message.id] for f in found)
    assert [f.score for f in found] == sorted((f.score for f in found), reverse=True)
    assert [f.message.turn for f in request.search.words("杭州")] == [2, 2]
    assert request.search.words("杭州", limit=1)[0].message.turn == 2
    assert len(request.search.words("杭州", limit=1)) == 1
    # Only the turns before `before_turn`, and only those the history holds.
    assert [f.message.turn for f in request.search.words("dentist", before_turn=4)] == [1]
    early = replace(request, history=StoredHistory(engine.store, engine.session.id,
                                                   engine.counter, upto=3))
    assert {f.message.turn for f in early.search.words("dentist Tuesday")} == {1}
    assert request.search.words("   ") == []
    assert request.search.words("zebra") == []


def test_meaning_and_vectors_read_the_stored_vectors(make_engine) -> None:
    embedder = HashEmbedder()
    engine = engine_with(make_engine, embedder)
    request = replace(engine.request("dinner?"), embedder=embedder)
    history = stored(engine)
    found = request.search.meaning("Pasta for dinner tonight.", limit=3)
    assert len(found) == 3
    assert found[0].message.content == "Pasta for dinner tonight."
    assert found[0].message == history[found[0].message.id]
    assert found[0].score > found[1].score
    assert {f.message.turn for f in request.search.meaning("Tuesday", before_turn=3)} <= {1, 2}
    vectors = request.search.vectors(history.values())
    assert set(vectors) == set(history)
    pasta = found[0].message
    # Stored as float16: the same vector to three places.
    assert np.allclose(vectors[pasta.id], embedder.embed([pasta.content])[0], atol=2e-3)
    # Copies: a plugin writing into one changes nothing chatmem ranks by.
    vectors[pasta.id][:] = 0
    assert request.search.meaning("Pasta for dinner tonight.", limit=1)[0].message == pasta
    # No embedder: no meaning, no vectors (recall by words still works).
    plain = replace(request, embedder=None)
    assert plain.search.meaning("Pasta") == [] and plain.search.vectors(history.values()) == {}


def test_an_update_searches_too(make_engine) -> None:
    engine = engine_with(make_engine)
    request = engine.request("x")
    env = MemoryEnv(request.history, engine.counter, request.state)
    assert [f.message.turn for f in env.search.words("Okafor")] == [1, 1]
