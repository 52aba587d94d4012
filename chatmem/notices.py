"""What a turn, a memory update or opening a session has to tell the user, as values.

Memory and the engine return these; only chatmem.render.notices words them (for the
REPL, the CLI, replay and the HTML report alike), so no layer ever parses a sentence
back. Each notice carries the numbers, ids and names its wording needs.

A context's own warnings, stored with its turn, are in chatmem.context_warnings; what the
history itself has to tell (moved, upgraded, retention, a write lock held) is in
chatmem.history_notices; what opening a session changed of it (strategy, model, system
prompt) is in chatmem.session_notices; what the vector backlog has to tell (and `Failure`,
why a step failed) is in chatmem.indexing_notices. `Notice` is every one of them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum

from chatmem.history_notices import (
    HistoryMoved,
    HistoryUpgrading,
    HistoryWritableByOthers,
    OldHistoryLeft,
    RetentionApplied,
    RetentionSkipped,
    WaitingForUpgrade,
    WaitingForWrite,
)
from chatmem.indexing_notices import Failure, IndexingNotice, VectorsResized
from chatmem.privacy.secrets import Credential
from chatmem.session_notices import (
    BuildSlow,
    EmbedderSlow,
    ModelChanged,
    SavedParamsDropped,
    SettingsNotSaved,
    StateLarge,
    StrategyChanged,
    SystemPromptReplaced,
    UpdateSlow,
)


@dataclass(frozen=True)
class SummaryUpdated:
    """A new summary version now covers turns 1..`upto`."""

    version: int
    upto: int
    added: int
    removed: int
    unit: str
    """What `added` and `removed` count: "words", "characters" (CJK), or "characters and
    words" for changes of both (summarizer.diff_unit)."""
    clipped_to: int | None = None
    """The summary's limit in tokens when its oldest part was clipped to fit, else None."""
    pinned: tuple[str, ...] = ()
    """Details the summarizer dropped and the drift guard pinned."""
    unguarded: tuple[str, ...] = ()
    """Details the summarizer dropped, not pinned because the drift guard is off."""
    refused: tuple[str, ...] = ()
    """Details the summarizer dropped, not pinned because the user unpinned them."""
    unsaid: tuple[str, ...] = ()
    """Details the new summary holds that neither the old one nor the turns it folded say:
    the summarizer's own (a guess, an answer to the user, a detail it translated)."""
    released: tuple[str, ...] = ()
    """Older pins released to keep the pins within `pin_limit` tokens."""
    pin_limit: int = 0
    sensitive: tuple[str, ...] = ()
    """Kinds of sensitive details kept out of the summary and pins ("card number", …)."""
    calls: int = 1
    """Summarizer calls a catch-up took to get here."""

    @property
    def unpinned(self) -> tuple[str, ...]:
        """Dropped details that stay unpinned, whatever the reason."""
        return self.unguarded + self.refused


class Retry(Enum):
    """When what a memory update left undone (a summary, facts, a strategy's update) is
    done again."""

    NEXT_TURN = "next turn"
    """On the session's next turn: a chat's, or a saved replay's once it is continued."""
    NEVER = "never"
    """Not at all: the last turn of a replay kept in memory, which no turn follows."""


@dataclass(frozen=True)
class SummaryFailed:
    """The summarizer failed; `turns` stay in the context unsummarized until it catches up."""

    error: str
    turns: tuple[int, ...]
    calls: int = 1
    retry: Retry = Retry.NEXT_TURN
    """Whether a next turn does it again (NEVER: the last turn of a replay not saved)."""


@dataclass(frozen=True)
class FactsFailed:
    """Fact extraction failed; turns `first`..`last` are retried on the next turn, or, when
    `passed_over` (the number of answers rejected for them), never read for facts."""

    error: str
    first: int
    last: int
    passed_over: int | None = None
    retry: Retry = Retry.NEXT_TURN
    """Whether a next turn does it again (NEVER: the last turn of a replay not saved)."""


@dataclass(frozen=True)
class FactsTooLong:
    """Facts the extractor found, by key, with a key over `key_limit` or a value over
    `value_limit` characters: not kept (the rest of its answer is)."""

    keys: tuple[str, ...]
    key_limit: int
    value_limit: int


@dataclass(frozen=True)
class FactsForgotten:
    """Facts the extractor forgot, by key, reading that the user retracted them."""

    keys: tuple[str, ...]


@dataclass(frozen=True)
class FactsNotSaid:
    """Facts the extractor found, by key, whose value is in none of the user's messages it
    read: not kept (the rest of its answer is)."""

    keys: tuple[str, ...]


@dataclass(frozen=True)
class FactsBehind:
    """Fact extraction is `turns` turns behind and catches up on the next turn."""

    turns: int
    retry: Retry = Retry.NEXT_TURN
    """Whether a next turn does it again (NEVER: the last turn of a replay not saved)."""


@dataclass(frozen=True)
class SensitiveNotRemembered:
    """Kinds of sensitive details said but kept out of the facts."""

    kinds: tuple[str, ...]


@dataclass(frozen=True)
class NoEmbedder:
    """`strategy` recalls by meaning but has no embedder: it ranks by words only."""

    strategy: str


@dataclass(frozen=True)
class VectorCacheUnused:
    """The user's vector cache (`path`: eval and replay keep vectors between runs there)
    cannot be opened, `why` (a full disk, a read-only home): this run embeds without it."""

    path: str
    why: str


@dataclass(frozen=True)
class UsageIgnored:
    """Provider `provider` (a plugin's, as registered) reported token counts that are no
    counts (`wrong`, what was wrong): the turn is stored without them."""

    provider: str
    wrong: str


@dataclass(frozen=True)
class InputNotUtf8:
    """The input held bytes that are not UTF-8; each was replaced by `replacement`."""

    replacement: str


@dataclass(frozen=True)
class CredentialInInput:
    """The input (or, `in_system_prompt`, a system prompt given) held a credential chatmem
    runs with; each was replaced by its label (Credential.API_KEY is "[api key]") in what is
    sent and stored."""

    credentials: tuple[Credential, ...]
    in_system_prompt: bool = False


class CutBy(Enum):
    LIMIT = "limit"
    """The reply-length limit (max_reply_tokens)."""
    FILTER = "filter"
    """The model's server's content filter."""


@dataclass(frozen=True)
class ReplyCut:
    """The reply stopped before the model ended it; it is stored as it is, if stored."""

    by: CutBy = CutBy.LIMIT
    empty: bool = False
    """It stopped before any text (a reasoning model may spend the whole limit thinking)."""
    stored: bool = True
    """False for a one-off question, whose turn is kept nowhere."""


@dataclass(frozen=True)
class ContextNotBuilt:
    """The strategy failed to build the context of an exchange another program already had
    (MCP's record_turn): the exchange is stored all the same, with only its input as context."""

    error: str
    culprit: tuple[str, str] | None = None
    """As MemoryUpdateFailed.culprit."""


@dataclass(frozen=True)
class ModelNotClosed:
    """A model's close (a plugin's) failed as the workspace closed, after the work was done:
    told, not an error (a script retrying a failed `ask` would store its turn twice)."""

    error: str
    culprit: tuple[str, str] | None = None
    """As MemoryUpdateFailed.culprit."""


@dataclass(frozen=True)
class MemoryUpdateFailed:
    """The strategy's update failed after the turn committed; it is retried next turn."""

    error: str
    culprit: tuple[str, str] | None = None
    """(kind, name) of the strategy, provider or embedder whose code failed, when chatmem
    does not own it (ExtensionFailed): the wording names the plugin that registered it."""
    stored: bool = False
    """The update ran to its end and only its answer was wrong (not a list of Notices): what
    it stored is kept and sent, and nothing is retried."""
    held_in: str | None = None
    """The user's session holding a state of the failing strategy, which its owner may drop
    (`sessions reset-state`): as StrategyFailed.held_in."""
    retry: Retry = Retry.NEXT_TURN
    """Whether a next turn does it again (NEVER: the last turn of a replay not saved)."""


@dataclass(frozen=True)
class MemoryUpdateCancelled:
    """Ctrl-C during the strategy's update; the turn stands and the update is retried."""

    retry: Retry = Retry.NEXT_TURN
    """Whether a next turn does it again (NEVER: the last turn of a replay not saved)."""


class DerivedMemory(Enum):
    """What a memory update makes from the session's text."""

    SUMMARY = "summary"
    FACTS = "facts"
    STATE = "state"
    """A strategy's own state (a plugin's, stored through SessionState.set)."""


@dataclass(frozen=True)
class ErasedWhileUpdating:
    """Text left the session's memory (a purge, a turn replaced by another chat) while the
    update read it: what it made of turns `first`..`last` (`made`) was not stored, as it may
    hold the erased text, and is made again from the text as it is now next turn. For STATE,
    `strategy` names whose, and `first` = `last` is the last turn its update was given."""

    made: DerivedMemory
    first: int
    last: int
    strategy: str | None = None
    retry: Retry = Retry.NEXT_TURN
    """Whether a next turn does it again (NEVER: the last turn of a replay not saved)."""


@dataclass(frozen=True)
class HelperTooSmall:
    """`strategy` summarizes or extracts facts, but its helper is `model`, the embedded
    SmolLM2-135M, which cannot: the calls are skipped and nothing is stored, rather than
    a junk summary or junk facts. Said once per chat."""

    strategy: str
    model: str


@dataclass(frozen=True)
class ContextsOverBudget:
    """Of the `built` contexts a replay or an eval built, `over` went over their `budget`,
    the largest taking `most` tokens (each one's warning, as `inspect` shows it, folded)."""

    over: int
    built: int
    budget: int
    most: int


@dataclass(frozen=True)
class ContextsByWordsAlone:
    """Of the `built` contexts a replay or an eval built, `failed` ranked by words alone:
    embedding the input failed (`error`, the first failure's; `embedder`, the registered
    embedder that raised it, for a front end to name its plugin)."""

    failed: int
    built: int
    error: str
    embedder: str | None = None


@dataclass(frozen=True)
class ContextsWithoutVectors:
    """Of the `built` contexts a replay or an eval built, `partly` ranked some messages by
    words alone: they had no vector, as indexing them failed (`failure`, the first one).
    Without it an embedder down for a whole run gave words-alone figures as hybrid ones."""

    partly: int
    built: int
    failure: Failure


@dataclass(frozen=True)
class ExpectedRepliesReplaced:
    """`replay --regenerate`: the probes' expected `ids` that name recorded assistant
    messages (replaced by new replies, or dropped), and their expected strings (`text`)
    only those messages said. Neither is scored: no strategy could find them, and buffer,
    which keeps everything, showed 0.57."""

    ids: int
    text: int


class FileLeft(Enum):
    """Why a replayed turn did not send a file its stored turn sent."""

    GONE = "gone"
    """An image whose bytes the session no longer holds: not sent."""
    UNSEEN = "unseen"
    """An image the replay's model cannot see: its description sent alone."""


@dataclass(frozen=True)
class FilesNotReplayed:
    """A replayed turn (`turn`, counted from 1 as replay plays them) that did not send the
    files `names` as its stored turn did, for `why`: its prompt is not the chat's."""

    turn: int
    names: tuple[str, ...]
    why: FileLeft


Notice = (IndexingNotice | VectorsResized | SummaryUpdated | SummaryFailed | FactsFailed
          | FactsTooLong | FactsNotSaid | FactsForgotten | FactsBehind | SensitiveNotRemembered
          | NoEmbedder | InputNotUtf8 | CredentialInInput | VectorCacheUnused
          | ReplyCut | UsageIgnored
          | ContextNotBuilt | ModelNotClosed
          | MemoryUpdateFailed | MemoryUpdateCancelled | ErasedWhileUpdating
          | StrategyChanged | ModelChanged
          | SavedParamsDropped | SystemPromptReplaced | SettingsNotSaved | StateLarge
          | BuildSlow | UpdateSlow | EmbedderSlow | HelperTooSmall
          | HistoryMoved | OldHistoryLeft | RetentionApplied | RetentionSkipped
          | HistoryWritableByOthers
          | HistoryUpgrading | WaitingForUpgrade | WaitingForWrite
          | ContextsOverBudget | ContextsByWordsAlone | ContextsWithoutVectors
          | ExpectedRepliesReplaced | FilesNotReplayed)


def after_calls(notices: list[Notice], calls: int) -> list[Notice]:
    """The last fold's notices, the first saying how many summarizer calls a catch-up took."""
    if calls > 1 and notices and isinstance(notices[0], SummaryUpdated | SummaryFailed):
        return [dataclasses.replace(notices[0], calls=calls), *notices[1:]]
    return notices


RETRIED = (SummaryFailed, FactsFailed, FactsBehind, MemoryUpdateFailed, MemoryUpdateCancelled,
           ErasedWhileUpdating)
"""The notices of work left for the next turn (their `retry`)."""


def never_retried(notices: list[Notice]) -> list[Notice]:
    """`notices` as said at the last turn of a replay kept in memory, which no turn follows:
    what they leave for the next turn is never done."""
    return [dataclasses.replace(n, retry=Retry.NEVER) if isinstance(n, RETRIED) else n
            for n in notices]
