"""Reasons and dropped notes as stored with the turn: `reason_json` tags each by kind, and
reading one back gives the value, or (text an older version stored, or a kind or value a
newer one added) a `StoredReason` / `StoredNote` shown as it was written."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from chatmem.field_types import fitting
from chatmem.memory.reasons import (
    AllTurns,
    AttachedFiles,
    DroppedNote,
    DroppedTurns,
    FactsSelected,
    Merged,
    NewestTurns,
    NewInput,
    NotYetSummarized,
    PartReason,
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

_KINDS: dict[str, type[Any]] = {
    "system_prompt": SystemPrompt, "attached_files": AttachedFiles, "new_input": NewInput,
    "all_turns": AllTurns, "newest_turns": NewestTurns, "unsummarized": Unsummarized,
    "summary_version": SummaryVersion, "pinned_details": PinnedDetails,
    "facts_selected": FactsSelected, "recall_method": RecallMethod, "recalled": Recalled,
    "merged": Merged, "dropped_turns": DroppedTurns, "shared_budget_cut": SharedBudgetCut,
    "summary_clipped": SummaryClipped, "summary_left_out": SummaryLeftOut,
    "pins_left_out": PinsLeftOut, "pins_released": PinsReleased, "summarized": Summarized,
    "not_yet_summarized": NotYetSummarized,
}
_KIND_OF = {cls: kind for kind, cls in _KINDS.items()}


def _encode(value: Any) -> Any:
    if isinstance(value, StoredReason | StoredNote):
        return value.text  # a reason in words, also inside a Merged one
    if type(value) in _KIND_OF:
        # A field at its default is left out (reading fills it back): every turn stores its
        # reasons, and most fields of most reasons are at their defaults.
        return {"kind": _KIND_OF[type(value)],
                **{f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)
                   if f.default is dataclasses.MISSING or getattr(value, f.name) != f.default}}
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_decode(v) for v in value)
    if isinstance(value, Mapping):
        values = {k: _decode(v) for k, v in value.items() if k != "kind"}
        if value["kind"] == "merged":  # a member's reason in words is stored as its text
            values["reasons"] = tuple(StoredReason(r) if isinstance(r, str) else r
                                      for r in values.get("reasons", ()))
        decoded = _KINDS[value["kind"]](**values)
        if not fitting(decoded):
            raise TypeError(f"a {value['kind']} reason's values are not of its types")
        return decoded
    return value


def reason_json(value: PartReason | DroppedNote) -> dict[str, Any] | str:
    """A reason or note as stored with the turn: {"kind": …, its values}."""
    if isinstance(value, StoredReason | StoredNote):
        return value.text
    encoded: dict[str, Any] = _encode(value)
    return encoded


def _typed(data: Any) -> Any | None:
    """The value `data` stands for, None when this version does not know its kind, or it
    is no reason or note (a recall method stands only inside a Recalled)."""
    try:
        value = _decode(data)
    except (KeyError, TypeError):  # kinds or values a newer version added
        return None
    return value if isinstance(value, PartReason | DroppedNote) else None


def reason_from_json(data: Mapping[str, Any] | str) -> PartReason:
    """A stored reason back as a value; text (older versions) as a StoredReason."""
    if isinstance(data, str):
        return StoredReason(data)
    value = _typed(data)
    return value if value is not None else StoredReason(str(data))


def dropped_json(notes: Sequence[DroppedNote]
                 ) -> list[dict[str, Any] | str] | str | None:
    """A context's dropped notes as stored (None when nothing was left out); the text an
    older version stored is written back as it was."""
    if len(notes) == 1 and isinstance(notes[0], StoredNote):
        return notes[0].text
    return [reason_json(n) for n in notes] if notes else None


def dropped_from_json(data: Sequence[Mapping[str, Any] | str] | str | None
                      ) -> tuple[DroppedNote, ...]:
    """Stored dropped notes back as values; the one text older versions stored as a StoredNote."""
    if not data:
        return ()
    if isinstance(data, str):
        return (StoredNote(data),)
    notes: list[DroppedNote] = []
    for item in data:
        value = StoredNote(item) if isinstance(item, str) else _typed(item)
        notes.append(value if value is not None else StoredNote(str(item)))
    return tuple(notes)
