"""What recall works out of a candidate's text alone is worked out once per session, not at
every build: a conversation's pools overlap from turn to turn (97-99% on benchmarks/run.py's
turns), and each build keyed every candidate it looked at (`said`) and read each one's
speaker label again. Contexts come out the same."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chatmem.embeddings.hashed import HashEmbedder
from chatmem.engine import Engine
from chatmem.memory import packing, speaker_prior
from chatmem.memory.packing import Known, Ranked

SPEAKERS = ["alice", "Bob", "王小明", "José"]


def chatted(make_engine: Callable[..., Engine]) -> Engine:
    engine = make_engine("retrieval", embedder=HashEmbedder(), max_tokens=400)
    lines = []
    for n in range(40):
        at = f"2026-05-0{n % 7 + 1}T09:{n:02d}:00+00:00"
        who = SPEAKERS[n % len(SPEAKERS)]
        said = (f"{who}: the hiking trip on day {n} needs {n} maps" if n % 2
                else f"{who}：第{n}天去西湖，预算{n}百元")
        lines += [{"role": "user", "content": said, "ts": at},
                  {"role": "assistant", "content": f"Noted item {n}: maps and 西湖.", "ts": at}]
    engine.store.history.import_messages(engine.session.id, lines)
    engine.indexing.finish(engine.embedder)
    return engine


def test_a_second_build_works_out_no_key_or_label_again(
        make_engine: Callable[..., Engine], monkeypatch: pytest.MonkeyPatch) -> None:
    engine = chatted(make_engine)
    question = "What did alice say about the hiking maps? 王小明的预算呢？"
    first = engine.build_context(question)
    worked: list[str] = []
    keyed, written = packing.said_key, speaker_prior._written
    monkeypatch.setattr(packing, "said_key", lambda role, text: worked.append(text)
                        or keyed(role, text))
    monkeypatch.setattr(speaker_prior, "_written", lambda text: worked.append(str(text))
                        or written(text))
    as_label = speaker_prior._as_label
    monkeypatch.setattr(speaker_prior, "_as_label", lambda written: worked.append(written)
                        or as_label(written))
    again = engine.build_context(question)
    assert worked == []
    assert again.messages() == first.messages()
    assert again.recall == first.recall
    assert [r for r in first.recall if r["kept"]]


def test_a_kept_key_is_of_the_text_it_was_worked_out_of() -> None:
    """A message rewritten (a purge) under the same id is keyed anew."""
    known = Known()

    def ranked(text: str) -> Ranked:
        return Ranked(7, 1, 1, "user", 0.0, 1.0, None, 1.0, 5, text, known=known)

    assert ranked("Call me at 555-0100.").said == packing.said_key("user", "Call me at 555-0100.")
    assert ranked("Call me at [redacted].").said == packing.said_key("user",
                                                                     "Call me at [redacted].")
    assert ranked("call me AT 555-0100. ").said == packing.said_key("user", "Call me at 555-0100.")


def test_what_is_kept_is_bounded(make_engine: Callable[..., Engine],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from chatmem.memory import recall_sources

    engine = chatted(make_engine)
    question = "What did alice say about the hiking maps?"
    first = engine.build_context(question)
    known = engine.state.caches["known"]
    assert len(known.said) > 10
    stale = (10**9, 0)
    known.said[stale], known.labels[stale] = 1, "alice"
    monkeypatch.setattr(recall_sources, "KNOWN_AT_MOST", 10)
    # Past the bound, a build lets go of what was kept before it, and works it out again.
    assert engine.build_context(question).messages() == first.messages()
    assert stale not in known.said and stale not in known.labels
    assert known.said and known.labels


def test_a_second_build_makes_no_sent_message_again(
        make_engine: Callable[..., Engine], monkeypatch: pytest.MonkeyPatch) -> None:
    """A build makes tens of messages as sent (some sixty at 2,000 tokens), most of them the
    last build's: each was made again (its reasoning cut, day lines escaped) at every build.
    Kept with the session's caches, which a purge empties (tests/engine/test_erasures.py)."""
    from chatmem.memory import recall_sources

    engine = chatted(make_engine)
    question = "What did alice say about the hiking maps? 王小明的预算呢？"
    first = engine.build_context(question)
    made: list[str] = []
    sent_text = recall_sources.sent_text
    monkeypatch.setattr(recall_sources, "sent_text", lambda role, content: made.append(content)
                        or sent_text(role, content))
    again = engine.build_context(question)
    assert made == []
    assert again.messages() == first.messages()
    assert len(first.part("recalled").messages) >= 5
    engine.state.caches.clear()  # as an erasure does: made anew, alike
    assert engine.build_context(question).messages() == first.messages()
    assert made
