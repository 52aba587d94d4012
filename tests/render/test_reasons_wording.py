"""The wording of part reasons and dropped notes: one line each, as `inspect` shows them.

Wording is the subject here; every other test asserts the values."""

from __future__ import annotations

import pytest

from chatmem.memory.reasons import (
    AllTurns,
    AttachedFiles,
    DroppedTurns,
    FactsSelected,
    Merged,
    NewestTurns,
    NewInput,
    NotYetSummarized,
    PinnedDetails,
    PinsLeftOut,
    PinsReleased,
    Recalled,
    RecallMethod,
    RecallVerdict,
    SharedBudgetCut,
    StoredNote,
    StoredReason,
    Summarized,
    SummaryClipped,
    SummaryLeftOut,
    SummaryVersion,
    SystemPrompt,
    Unsummarized,
)
from chatmem.render.reasons import dropped_line, dropped_text, reason_text, verdict_text

WORDS = RecallMethod("bm25", 0.5, 0.5, 0.3, 0.7)


@pytest.mark.parametrize(("reason", "text"), [
    (SystemPrompt(), "system prompt"),
    (AttachedFiles(1), "1 attached file, quoted as data (always sent)"),
    (AttachedFiles(2), "2 attached files, quoted as data (always sent)"),
    (NewInput(), "the new user input (always sent)"),
    (AllTurns("buffer", (1, 30)), "buffer: all turns 1–30"),
    (AllTurns("buffer", (1, 1)), "buffer: turn 1, the only one"),
    (NewestTurns("window", "k", 2, (4, 5), (1, 3)), "window k=2: turns 4–5; dropped turns 1–3"),
    (NewestTurns("window", "k", 1, (3, 3)), "window k=1: turn 3"),
    (NewestTurns("tokens", "max_tokens", 99, (2, 3), (1, 1), to_fit=True),
     "tokens max_tokens=99: turns 2–3; dropped turn 1 to fit"),
    (NewestTurns("retrieval", "recent", 0, None, (1, 9), recalled=4),
     "retrieval recent=0: no turns; dropped turns 1–9 except 4 recalled messages"),
    (NewestTurns("summary-buffer", "max_tokens", 500, (8, 9), behind="超时"),
     "summary-buffer max_tokens=500: turns 8–9 (summary behind: 超时)"),
    (Unsummarized((2, 2), "empty summary"), "turn 2 (summary behind: empty summary)"),
    (Unsummarized((2, 3)), "turns 2–3 (not yet summarized)"),
    (SummaryVersion(1, 1, "scripted:scripted"), "summary v1 of turn 1 (scripted:scripted)"),
    (SummaryVersion(2, 9, None, clipped_to=40),
     "summary v2 of turns 1–9 (unknown model); clipped to 40 tokens to fit the budget"),
    (PinnedDetails((1, 3)), "kept verbatim: dropped by summary v1, v3"),
    (FactsSelected("entity", "k", 3, 1, 1, False, sessions=("旅行",)),
     "entity k=3: the only fact (from session 旅行)"),
    (FactsSelected("entity", "k", 3, 2, 4, True, (1, 2), ("a",), True),
     "entity k=3: 2 of 4 facts, ranked by overlap with the input"
     " (from this session's turns 1, 2; session a; /remember)"),
    (FactsSelected("entity", "k", 3, 2, 2, False, (2,), ("b",)),
     "entity k=3: all 2 facts (from this session's turn 2; session b)"),
    (FactsSelected("entity", "k", 3, 2, 2, False, (1, 2), (), True),
     "entity k=3: all 2 facts (from turns 1, 2, /remember)"),
    (Recalled(WORDS, 800, 3, 40, 1, 0.25, 0.5),
     "retrieval bm25 (smooth 0.5, sitting 0.3) max_tokens=800: 3 of 40 earlier messages,"
     " from 1 turn, fused 0.25–0.50"),
    (Recalled(RecallMethod("hybrid", 0.5, 0.5, 0.3, 0.7), 800, 3, 1200, 2, 0.2, 0.9, left=5,
              embedded=1000),
     "retrieval hybrid (dense 0.5, smooth 0.5, sitting 0.3, mmr 0.7) max_tokens=800:"
     " 3 of 1200 earlier messages, from 2 turns, fused 0.20–0.90; 5 more ranked, left out"
     " (see inspect); dense over 1,000 of 1,200 messages; indexing"),
    (Recalled(RecallMethod("dense", 0.5, 0.5, 0.3, 0.7, no_embedder=True), 8, 1, 2, 1, 1, 1),
     "retrieval dense (mmr 0.7); no embedder max_tokens=8: 1 of 2 earlier messages,"
     " from 1 turn, fused 1.00–1.00"),
    (Recalled(RecallMethod("bm25", 0.5, 0.5, 0.3, 0.7, embedding_error="timed out"), 8, 1, 2,
              1, 1, 1),
     "retrieval bm25 (smooth 0.5, sitting 0.3); embedding failed (timed out), ranked by words"
     " only max_tokens=8: 1 of 2 earlier messages, from 1 turn, fused 1.00–1.00"),
    (Recalled(WORDS, 800, 3, 40, 1, 0.25, 0.5, by_time=2,
              times_named=(("2023-05-08", "2023-05-08"), ("2023-06-01", "2023-06-10"),
                           ("2026-05-25", "2026-06-04"), ("2025-12-01", "2026-01-31"))),
     "retrieval bm25 (smooth 0.5, sitting 0.3) max_tokens=800: 3 of 40 earlier messages,"
     " from 1 turn, fused 0.25–0.50; 2 dated when asked; the input names 8 May 2023,"
     " 1–10 Jun 2023, 25 May–4 Jun 2026, 1 Dec 2025–31 Jan 2026"),
    # Cut by a combination's shared budget: what is sent, and what of the choice went.
    (NewestTurns("summary-buffer", "max_tokens", 1000, (121, 121),
                 cut=SharedBudgetCut((115, 120), (), 1000)),
     "summary-buffer max_tokens=1000: turn 121; history turns 115–120 left out to fit the"
     " shared budget of 1,000"),
    (NewestTurns("window", "k", 6, (39, 39), (1, 33), cut=SharedBudgetCut((34, 38), (), 300)),
     "window k=6: turn 39; dropped turns 1–33; history turns 34–38 left out to fit the shared"
     " budget of 300"),
    (AllTurns("buffer", (5, 8), SharedBudgetCut((1, 4), (), 60)),
     "buffer: turns 5–8; history turns 1–4 left out to fit the shared budget of 60"),
    (Unsummarized((3, 3), cut=SharedBudgetCut((2, 2), (), 90)),
     "turn 3 (not yet summarized); history turn 2 left out to fit the shared budget of 90"),
    (Recalled(WORDS, 1000, 28, 240, 17, 0.39, 1.25, left=114, shared=True),
     "retrieval bm25 (smooth 0.5, sitting 0.3) shared budget 1,000: 28 of 240 earlier"
     " messages, from 17 turns, fused 0.39–1.25; 114 more ranked, left out (see inspect)"),
    (Merged((NewestTurns("window", "k", 1, (3, 3)), StoredReason("x"))),
     "window k=1: turn 3 | x"),
    (StoredReason("as an older version wrote it"), "as an older version wrote it"),
])
def test_each_reason_has_one_wording(reason, text: str) -> None:
    assert reason_text(reason) == text


def test_dropped_notes_are_joined_in_order_and_say_dropped_once() -> None:
    notes = (DroppedTurns((1, 35), recalled_turns=1),
             SharedBudgetCut((36, 37), ((5, 0.314), (6, 0.2)), 1000))
    assert dropped_line(notes) == (
        "dropped turns 1–35 (1 recalled); history turns 36–37 and recalled turns 5 (0.31),"
        " 6 (0.20) left out to fit the shared budget of 1,000")
    assert dropped_text((DroppedTurns((1, 3), recalled_messages=2),)) == (
        "dropped turns 1–3 except 2 recalled messages")
    summary = (SummaryClipped(2), SummaryLeftOut(3), PinsLeftOut(1), PinsReleased(2, 60),
               Summarized((1, 8)), NotYetSummarized((9, 9)))
    assert dropped_line(summary) == (
        "dropped: summary v2 clipped to fit the budget; summary v3 left out: no room in the"
        " budget; 1 older pinned detail left out to fit; 2 older pinned details released to"
        " keep pins within 60 tokens (/summary lists them); turns 1–8 summarized; turn 9 not"
        " yet summarized, left out to fit")
    assert dropped_text((SharedBudgetCut(None, ((4, 0.5),), 300),)) == (
        "recalled turn 4 (0.50) left out to fit the shared budget of 300")
    assert dropped_line((StoredNote("dropped turns 1–2"),)) == "dropped turns 1–2"
    assert dropped_text(()) == ""


@pytest.mark.parametrize(("row", "text"), [
    ({"why": "kept"}, "kept"),
    ({"why": "kept_as_question"}, "kept: asks what a recalled reply answers"),
    ({"why": "does_not_fit"}, "budget: does not fit"),
    ({"why": "no_room"}, "budget: no room left"),
    ({"why": "too_similar"}, "diversity: too like what was kept"),
    ({"why": "top_k", "top_k": 3}, "top_k=3 reached"),
    ({"why": "reply_first"}, "left out: a reply cannot open the context"),
    ({"why": "shared_budget"}, "shared budget: left out to fit"),
    # A row an older version stored holds the sentence it showed: shown as it was.
    ({"why": "budget: does not fit"}, "budget: does not fit"),
    ({"why": "top_k=2 reached"}, "top_k=2 reached"),
])
def test_each_recall_verdict_has_one_wording(row: dict[str, object], text: str) -> None:
    assert verdict_text(row) == text


def test_every_recall_verdict_is_worded() -> None:
    worded = {verdict_text({"why": v.value, "top_k": 1}) for v in RecallVerdict}
    assert len(worded) == len(RecallVerdict)
    assert not worded & {v.value for v in RecallVerdict} - {"kept"}
