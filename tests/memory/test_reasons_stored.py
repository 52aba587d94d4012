"""Part reasons and dropped notes are values stored by kind; older text comes back as text."""

from __future__ import annotations

import json

import pytest

from chatmem.memory.context import Context, Message, Part
from chatmem.memory.reason_storage import (
    dropped_from_json,
    dropped_json,
    reason_from_json,
    reason_json,
)
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

METHOD = RecallMethod("hybrid", 0.5, 0.5, 0.3, 0.7, embedding_error="超时")
REASONS = [
    SystemPrompt(), AttachedFiles(2), NewInput(), AllTurns("buffer", (1, 30)),
    NewestTurns("retrieval", "recent", 4, (7, 10), (1, 6), recalled=3),
    NewestTurns("summary-buffer", "max_tokens", 500, None, behind="服务器超时"),
    Unsummarized((4, 5), "the summarizer returned an empty summary"),
    SummaryVersion(3, 9, None, clipped_to=120),
    PinnedDetails((1, 3)),
    FactsSelected("entity", "k", 3, 2, 4, True, (1, 2), ("旅行",), True),
    Recalled(METHOD, 800, 5, 40, 3, 0.25, 0.91, left=2, embedded=17),
    Merged((NewestTurns("window", "k", 2, (4, 5)), AllTurns("buffer", (1, 5)))),
    NewestTurns("summary-buffer", "max_tokens", 1000, (9, 9),
                cut=SharedBudgetCut((7, 8), (), 1000)),
    AllTurns("buffer", (3, 5), SharedBudgetCut((1, 2), (), 60)),
    Unsummarized(None, cut=SharedBudgetCut((4, 5), (), 90)),
    Recalled(METHOD, 1000, 5, 40, 3, 0.25, 0.91, shared=True),
]
NOTES = [
    DroppedTurns((1, 3), recalled_messages=2), DroppedTurns((1, 1), recalled_turns=1),
    SharedBudgetCut((1, 2), ((5, 0.31), (6, 0.2)), 1000), SharedBudgetCut(None, ((5, 0.5),), 9),
    SummaryClipped(2), SummaryLeftOut(2), PinsLeftOut(1), PinsReleased(3, 60),
    Summarized((1, 8)), NotYetSummarized((9, 9)),
]


def stored_and_read(context: Context) -> Context:
    """Through the JSON text a turn row holds."""
    return Context.from_json(json.loads(json.dumps(context.to_json(), ensure_ascii=False)))


@pytest.mark.parametrize("reason", REASONS, ids=lambda r: type(r).__name__)
def test_every_reason_reads_back_as_the_value_it_was(reason) -> None:
    context = Context((Part("history", (Message("user", "你好", 3, 1, 1),), reason),))
    assert stored_and_read(context).parts[0].reason == reason
    assert reason_json(reason)["kind"]  # stored tagged by kind, not as a sentence


def test_every_dropped_note_reads_back_in_order() -> None:
    context = Context((), dropped=tuple(NOTES))
    assert stored_and_read(context).dropped == tuple(NOTES)
    assert stored_and_read(Context(())).dropped == ()
    assert Context(()).to_json()["dropped"] is None


def test_text_an_older_version_stored_reads_back_as_text_and_is_written_back_unchanged() -> None:
    old = {"tokens": 20, "budget": 4000, "dropped": "dropped turns 1–3", "warnings": [],
           "parts": [{"kind": "history", "reason": "window k=2: turns 4–5; dropped turns 1–3",
                      "tokens": 20, "messages": []}]}
    context = Context.from_json(old)
    assert context.parts[0].reason == StoredReason("window k=2: turns 4–5; dropped turns 1–3")
    assert context.dropped == (StoredNote("dropped turns 1–3"),)
    again = context.to_json()
    assert (again["dropped"], again["parts"][0]["reason"]) == (old["dropped"],
                                                             old["parts"][0]["reason"])


def test_a_kind_this_version_does_not_know_is_kept_as_text() -> None:
    newer = {"kind": "from_the_future", "turns": [1, 2]}
    assert reason_from_json(newer) == StoredReason(str(newer))
    extra = {**reason_json(AttachedFiles(2)), "size": 9}  # a value a newer version added
    assert reason_from_json(extra) == StoredReason(str(extra))
    assert dropped_from_json([newer, "turn 4 (too long)"]) == (
        StoredNote(str(newer)), StoredNote("turn 4 (too long)"))
    assert dropped_from_json(None) == dropped_from_json("") == ()
    assert dropped_json([]) is None


def test_a_reason_in_words_reads_back_alone_and_inside_a_merged_one() -> None:
    # A plugin's strategy words its own reasons (TextReason); in a combination they are merged
    # with a built-in's, and the turn must still store (it raised TypeError before).
    from chatmem.memory.reasons import TextNote, TextReason

    words = TextReason("anchor head=1 k=3: turns 1, 7, 8")
    merged = Merged((words, NewestTurns("window", "k", 2, (7, 8))))
    for reason in (words, merged):
        context = Context((Part("history", (Message("user", "你好", 3, 1, 1),), reason),),
                          dropped=(TextNote("turns 2–6 not sent"), DroppedTurns((2, 6))))
        again = stored_and_read(context)
        assert again.parts[0].reason == reason
        assert again.dropped == context.dropped
    assert reason_json(merged)["reasons"][0] == "anchor head=1 k=3: turns 1, 7, 8"


def test_a_reason_whose_values_are_not_its_types_is_kept_as_text() -> None:
    # A hand's or a grantee's row: a run as text, a count too large for any store, a
    # boolean as a count, a recall method where a part's reason goes.
    for wrong in ({"kind": "all_turns", "strategy": "buffer", "turns": "x"},
                  {"kind": "newest_turns", "strategy": "window", "setting": "k", "value": True,
                   "turns": [1, 2]},
                  {"kind": "summary_version", "version": 1, "upto": 10**30, "model": None},
                  {"kind": "merged", "reasons": [{"kind": "all_turns", "strategy": "buffer",
                                                  "turns": [1]}]},
                  reason_json(METHOD)):
        assert reason_from_json(wrong) == StoredReason(str(wrong))
        assert dropped_from_json([wrong]) == (StoredNote(str(wrong)),)
    assert reason_from_json(reason_json(REASONS[-1])) == REASONS[-1]
