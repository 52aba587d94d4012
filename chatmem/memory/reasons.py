"""Why a part is in a context and what a context left out, as values.

Strategies put these on `Part.reason` and `Context.dropped`; only chatmem.render.reasons
words them, so no layer parses a sentence back. They are stored with the turn
(chatmem.memory.reason_storage tags each by kind); a reason or note an older version stored
as text comes back as `StoredReason` / `StoredNote` and is shown as it was written.

A run of turns is a `(first, last)` pair; None stands for no turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

TurnRun = tuple[int, int]


def turn_run(numbers: Sequence[int]) -> TurnRun | None:
    """The run from the first to the last of `numbers` (None when there are none)."""
    return (numbers[0], numbers[-1]) if numbers else None


# -- why a part is sent ---------------------------------------------------------------


@dataclass(frozen=True)
class SystemPrompt:
    """The session's system prompt."""


@dataclass(frozen=True)
class AttachedFiles:
    """`count` files attached to the input, quoted as data."""

    count: int


@dataclass(frozen=True)
class NewInput:
    """The new user input."""

    continued: bool = False
    """The reply so far follows it, for the model to go on with (a client's "Continue" of
    a reply cut short: chatmem.memory.context.with_reply_begun)."""


@dataclass(frozen=True)
class AllTurns:
    """`strategy` sends every turn: `turns`; `cut` when a combination left the older of
    them out to fit its shared budget (`turns` then the ones sent)."""

    strategy: str
    turns: TurnRun | None
    cut: SharedBudgetCut | None = None


@dataclass(frozen=True)
class NewestTurns:
    """`strategy` (its `setting` = `value` bounding them) sends the newest `turns`;
    `dropped`: the older turns not sent, `to_fit` when the budget is why, and
    `recalled` messages of them sent by recall after all."""

    strategy: str
    setting: str
    value: int
    turns: TurnRun | None
    dropped: TurnRun | None = None
    to_fit: bool = False
    recalled: int = 0
    behind: str | None = None
    """Why the summary is behind (summary-buffer): its failed update's error."""
    cut: SharedBudgetCut | None = None
    """Of `turns` as the strategy chose them, those a combination left out to fit its
    shared budget (`turns` then the ones sent)."""


@dataclass(frozen=True)
class Unsummarized:
    """Turns after the summary sent raw: `behind` is the error of the failed update that
    left them, None when the update has simply not run yet."""

    turns: TurnRun | None
    behind: str | None = None
    cut: SharedBudgetCut | None = None
    """Those a combination left out to fit its shared budget (`turns` then the ones sent)."""


@dataclass(frozen=True)
class SummaryVersion:
    """Summary `version` of turns 1..`upto`, by `model`; `clipped_to` tokens when it was
    clipped to fit the budget."""

    version: int
    upto: int
    model: str | None
    clipped_to: int | None = None


@dataclass(frozen=True)
class PinnedDetails:
    """Details kept verbatim because summary `versions` dropped them."""

    versions: tuple[int, ...]


@dataclass(frozen=True)
class FactsSelected:
    """`strategy` (`setting` = `value`) sends `sent` of its `total` facts (`ranked` by
    overlap with the input when not all fit), said in `turns`, other `sessions` or
    by `/remember` (`remembered`)."""

    strategy: str
    setting: str
    value: int
    sent: int
    total: int
    ranked: bool
    turns: tuple[int, ...] = ()
    sessions: tuple[str, ...] = ()
    remembered: bool = False


@dataclass(frozen=True)
class RecallMethod:
    """How recall ranked: the `mode` and its weights; `no_embedder` or `embedding_error`
    when it fell back to words only (`failed_embedder`: the registered embedder that raised
    it, for a front end to name its plugin)."""

    mode: str
    dense_weight: float
    smooth: float
    sitting: float
    mmr: float
    no_embedder: bool = False
    embedding_error: str | None = None
    failed_embedder: str | None = None


@dataclass(frozen=True)
class Recalled:
    """Recall (`method`, within `max_tokens`: a combination's budget when `shared`) sends
    `sent` of `candidates` earlier messages from `turns` turns, fused scores `low`..`high`;
    `left` more were ranked and left out; dense scores cover `embedded` of the `candidates`
    while indexing catches up; `by_*`: how many of the sent each route brought."""

    method: RecallMethod
    max_tokens: int
    sent: int
    candidates: int
    turns: int
    low: float
    high: float
    left: int = 0
    embedded: int | None = None
    by_words: int = 0
    """How many of the sent messages each route brought (RecallRoute)."""
    by_meaning: int = 0
    by_neighbour: int = 0
    by_time: int = 0
    by_sitting: int = 0
    by_later: int = 0
    times_named: tuple[tuple[str, str], ...] = ()
    """The times the input named (first and last day, ISO), whose messages gained."""
    unnamed: tuple[str, ...] = ()
    """The speakers the input names, put as `they` in part of its meaning
    (chatmem.memory.unnamed_meaning)."""
    shared: bool = False
    """`max_tokens` is the budget of the combination recall is part of, not its own."""
    dated: int = 0
    """How many runs of the sent messages said on an earlier day open with that day's line."""


@dataclass(frozen=True)
class Merged:
    """A part several strategies of a combination contributed to, with each one's reason."""

    reasons: tuple[PartReason, ...]


@dataclass(frozen=True)
class StoredReason:
    """A reason an older version stored as text: shown as it was written."""

    text: str


TextReason = StoredReason
"""A reason in words, for a strategy chatmem does not know (a plugin's): shown and stored
as written."""

PartReason = (SystemPrompt | AttachedFiles | NewInput | AllTurns | NewestTurns | Unsummarized
              | SummaryVersion | PinnedDetails | FactsSelected | Recalled | Merged
              | StoredReason)


# -- what a context left out -----------------------------------------------------------


@dataclass(frozen=True)
class DroppedTurns:
    """Turns `turns` are not sent as history; `recalled_messages` of them (retrieval) or
    some of `recalled_turns` of them (a combination) are sent by recall."""

    turns: TurnRun
    recalled_messages: int = 0
    recalled_turns: int = 0


@dataclass(frozen=True)
class SharedBudgetCut:
    """A combination left out `history` turns and `recalled` (turn, score)s to fit its
    shared `budget`."""

    history: TurnRun | None
    recalled: tuple[tuple[int, float], ...]
    budget: int


@dataclass(frozen=True)
class SummaryClipped:
    """Summary `version` was clipped to fit the budget."""

    version: int


@dataclass(frozen=True)
class SummaryLeftOut:
    """Summary `version` had no room in the budget."""

    version: int


@dataclass(frozen=True)
class PinsLeftOut:
    """`count` older pinned details were left out to fit."""

    count: int


@dataclass(frozen=True)
class PinsReleased:
    """`count` older pinned details were released to keep the pins within `limit` tokens."""

    count: int
    limit: int


@dataclass(frozen=True)
class Summarized:
    """`turns` are sent as the summary, not verbatim."""

    turns: TurnRun


@dataclass(frozen=True)
class NotYetSummarized:
    """`turns`, not yet summarized, were left out to fit."""

    turns: TurnRun


@dataclass(frozen=True)
class StoredNote:
    """A note an older version stored as text: shown as it was written."""

    text: str


TextNote = StoredNote
"""A note in words on what was left out, for a strategy chatmem does not know."""

DroppedNote = (DroppedTurns | SharedBudgetCut | SummaryClipped | SummaryLeftOut | PinsLeftOut
               | PinsReleased | Summarized | NotYetSummarized | StoredNote)


# -- why a recall candidate was kept or left out ---------------------------------------


class RecallRoute(Enum):
    """What brought a recall candidate up: a recall row's `route`, stored by value."""

    WORDS = "words"
    """It holds words of the input (BM25), and they weigh more than its meaning."""
    MEANING = "meaning"
    """Its meaning (its vector and its exchanges', see ranking.dense_scores) weighs most."""
    NEIGHBOUR = "neighbour"
    """It sits next to a match, holding none of the words itself (smoothing)."""
    SITTING = "sitting"
    """It was said in the sitting of a match, not next to one, holding none of the words
    (the sitting prior)."""
    TIME = "time"
    """It was said within a time the input names (`last May`, `上个月`)."""
    LATER = "later"
    """The user said it after a recalled message of theirs, holding its rarest words: it
    may correct it (chatmem.memory.later_mentions)."""


class RecallVerdict(Enum):
    """Why a candidate `inspect` lists was kept or left out: a recall row's `why`, stored
    with the turn by value (rows an older version stored hold a sentence, shown as is)."""

    KEPT = "kept"
    KEPT_AS_QUESTION = "kept_as_question"
    """A user message kept because it asks what a recalled reply answers."""
    DOES_NOT_FIT = "does_not_fit"
    """Its turn in the ranking came, and it was longer than the room left."""
    NO_ROOM = "no_room"
    """The budget was full before its turn came."""
    TOO_SIMILAR = "too_similar"
    """MMR passed it over for a candidate unlike what was already kept."""
    TOP_K = "top_k"
    """top_k messages were kept already (the row's `top_k` says how many)."""
    REPLY_FIRST = "reply_first"
    """A reply whose question did not fit: a context never opens on a reply."""
    MADE_ROOM = "made_room"
    """Left out, as the least relevant, for the question a better-ranked reply answers."""
    SHARED_BUDGET = "shared_budget"
    """Kept by its strategy, cut when a combination fit its parts into one budget."""
    LATER_ROOM = "later_room"
    """Left out, as the least relevant, for a later mention of a better-ranked message."""
    DAY_LINES = "day_lines"
    """Left out, as the least relevant, for the lines saying which earlier day the
    recalled messages were said on."""
    IN_HISTORY = "in_history"
    """Kept, and sent in history: another member of a combination sends its turn there."""
