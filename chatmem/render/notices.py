"""The one place notices and context warnings are worded, for the REPL, the CLI, replay
and the HTML report alike.

`repl_hints` adds advice that only makes sense at the REPL prompt ("/summary shows
the diff"); a replay or a report words the same notice without it.
"""

from __future__ import annotations

from functools import singledispatch

from chatmem import install_hint
from chatmem.context_warnings import (
    ContextWarning,
    EmbeddingFailed,
    OverBudget,
    StoredWarning,
    SummaryBehind,
)
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
from chatmem.indexing_notices import IndexingNotice, VectorsResized
from chatmem.memory.assembly import span
from chatmem.notices import (
    ContextNotBuilt,
    ContextsByWordsAlone,
    ContextsOverBudget,
    ContextsWithoutVectors,
    CredentialInInput,
    CutBy,
    DerivedMemory,
    ErasedWhileUpdating,
    ExpectedRepliesReplaced,
    FactsBehind,
    FactsFailed,
    FactsForgotten,
    FactsNotSaid,
    FactsTooLong,
    FileLeft,
    FilesNotReplayed,
    HelperTooSmall,
    InputNotUtf8,
    MemoryUpdateCancelled,
    MemoryUpdateFailed,
    ModelNotClosed,
    NoEmbedder,
    Notice,
    ReplyCut,
    Retry,
    SensitiveNotRemembered,
    SummaryFailed,
    SummaryUpdated,
    UsageIgnored,
    VectorCacheUnused,
)
from chatmem.privacy.secrets import Credential
from chatmem.privacy.sensitive import describe
from chatmem.render.counts import counted, listed
from chatmem.render.errors import by_plugin, held_state_way
from chatmem.render.history_notices import history_notice_text
from chatmem.render.indexing_notices import failure_text, indexing_notice_text
from chatmem.render.plugin_notices import plugin_notice_text
from chatmem.render.session_notices import session_notice_text
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

NO_EMBEDDER = ("no embedder, so recall ranks by words only (mode=bm25); "
               f"{install_hint('embed')}, or set [embeddings], to recall by meaning")


def notice_text(notice: Notice | ContextWarning, *, repl_hints: bool = True) -> str:
    """One line for `notice` (or a context's warning), as the user reads it."""
    return _worded(notice, repl_hints)


def replay_notice_text(notice: Notice) -> str:
    """`notice` as a replay, an eval or their report words it: without REPL advice."""
    return notice_text(notice, repl_hints=False)


def _caught_up(calls: int) -> str:
    return f"caught up in {calls} summarizer calls; " if calls > 1 else ""


@singledispatch
def _worded(notice: object, repl_hints: bool) -> str:
    raise TypeError(f"no wording for {type(notice).__name__}")


@_worded.register
def _(n: SummaryUpdated, repl_hints: bool) -> str:
    text = (f"{_caught_up(n.calls)}summary v{n.version} now covers {span(range(1, n.upto + 1))}:"
            f" +{n.added} −{n.removed} {n.unit}")
    if repl_hints:
        text += "; /summary shows the diff"
    if n.clipped_to is not None:
        text += f"; oldest part clipped to fit {n.clipped_to} tokens"
    lists = " (/summary lists them)" if repl_hints else ""
    groups = [
        ("dropped by the summarizer, not pinned (drift_guard off)", n.unguarded),
        ("dropped by the summarizer, pinned", n.pinned),
        ("dropped by the summarizer, not pinned (you unpinned them)", n.refused),
        ("in the summary as no turn said it", n.unsaid),
        (f"released to keep pins within {n.pin_limit} tokens{lists}", n.released),
        ("sensitive, kept out of the summary and pins",
         (describe(n.sensitive),) if n.sensitive else ()),
    ]
    for label, group in groups:
        if group:
            text += f"; {label}: {listed(group)}"
    return text


@_worded.register
def _(n: SummaryFailed, repl_hints: bool) -> str:
    verb = "stays" if len(n.turns) == 1 else "stay"
    then = (", the next turn catches up" if n.retry is Retry.NEXT_TURN
            else "; the replay ended before a turn caught up")
    return (f"{_caught_up(n.calls)}summary is behind ({n.error}); {span(n.turns)} {verb} in the"
            f" context unsummarized{then}")


@_worded.register
def _(n: FactsFailed, repl_hints: bool) -> str:
    turns = span(range(n.first, n.last + 1))
    if n.passed_over is None:
        if n.retry is Retry.NEVER:
            return (f"facts not updated ({n.error}); {turns} not read for facts: the replay"
                    " ended before a retry")
        return f"facts not updated ({n.error}); {turns} will be retried"
    return (f"facts not updated ({n.error}); {turns} passed over, their answer rejected"
            f" {n.passed_over} times: no fact is read from them{_remember(repl_hints)}")


REMEMBER = "/remember KEY: VALUE"
"""How the REPL's user stores a fact the helper did not."""


def _remember(repl_hints: bool) -> str:
    return f"; {REMEMBER} keeps one" if repl_hints else ""


@_worded.register(FactsTooLong)
@_worded.register(FactsNotSaid)
@_worded.register(FactsForgotten)
def _(n: FactsTooLong | FactsNotSaid | FactsForgotten, repl_hints: bool) -> str:
    return facts_left_text(n, REMEMBER if repl_hints else None)


def facts_left_text(n: FactsTooLong | FactsNotSaid | FactsForgotten, way: str | None) -> str:
    """Facts the helper found and memory does not keep, by key (each cut at 40 characters:
    a helper's key can be a paragraph); `way`: how the reader stores one itself, if it has
    one (the REPL's /remember, an MCP client's remember tool)."""
    keys = listed([k if len(k) <= 40 else f"{k[:40]}…" for k in n.keys])
    again = ""
    if isinstance(n, FactsTooLong):
        what = (f"not remembered, longer than a fact holds (key ≤ {n.key_limit:,}, value ≤"
                f" {n.value_limit:,} characters)")
    elif isinstance(n, FactsNotSaid):
        what = "not remembered, the helper model's value is not in what you said"
    else:
        what, again = "forgot, as the helper model read what you said", " again"
    return f"{what}: {keys}" + (f"; {way} keeps one{again}" if way else "")


@_worded.register
def _(n: FactsBehind, repl_hints: bool) -> str:
    then = ("catching up next turn" if n.retry is Retry.NEXT_TURN
            else "the replay ended before they caught up")
    return f"facts are {counted(n.turns, 'turn')} behind; {then}"


@_worded.register
def _(n: SensitiveNotRemembered, repl_hints: bool) -> str:
    return not_remembered_text(n, REMEMBER)


def not_remembered_text(n: SensitiveNotRemembered, way: str | None = None) -> str:
    """`way`: how to store one on purpose, if the reader has one."""
    on_purpose = f"; {way} stores one on purpose" if way else ""
    return (f"not remembered: {describe(n.kinds)} (sensitive details stay out of "
            f"memory{on_purpose})")


@_worded.register
def _(n: NoEmbedder, repl_hints: bool) -> str:
    return f"{n.strategy}: {NO_EMBEDDER}"


@_worded.register
def _(n: VectorCacheUnused, repl_hints: bool) -> str:
    return (f"{n.path}: the vector cache cannot be used ({n.why}); this run embeds every"
            " text, and keeps none for the next")


HELPER_MODEL_HINT = ("name a stronger model for these calls: helper_model = \"gpt-4o-mini\" "
                     "with helper_provider = \"openai\" in the config (or a GGUF path for the "
                     "local provider), env CHATMEM_HELPER_MODEL, or --helper-model")


@_worded.register
def _(n: StateLarge | BuildSlow | EmbedderSlow | UpdateSlow, repl_hints: bool) -> str:
    return plugin_notice_text(n)


@_worded.register
def _(n: HelperTooSmall, repl_hints: bool) -> str:
    return f"{n.strategy}: {helper_too_small_text(n)}"


def helper_too_small_text(n: HelperTooSmall) -> str:
    """HelperTooSmall without its strategy's name, for a line that names it already."""
    return (f"{n.model} (the embedded SmolLM2-135M) is too small to write summaries or "
            "extract facts, so none are stored and older turns are kept or left out as they "
            f"are; {HELPER_MODEL_HINT}")


@_worded.register
def _(n: CredentialInInput, repl_hints: bool) -> str:
    named = " and ".join(_CREDENTIAL_WORDS[credential] for credential in n.credentials)
    held = "the system prompt" if n.in_system_prompt else "the input"
    return (f"{held} held your {named}; it was replaced by {', '.join(n.credentials)} in "
            "what is sent and stored")


_CREDENTIAL_WORDS = {Credential.API_KEY: "api key", Credential.HISTORY_KEY: "history key"}


@_worded.register
def _(n: InputNotUtf8, repl_hints: bool) -> str:
    return f"the input held bytes that are not UTF-8; each was replaced by {n.replacement}"


@_worded.register
def _(n: ReplyCut, repl_hints: bool) -> str:
    by = ("the model's server's content filter" if n.by is CutBy.FILTER
          else "the reply-length limit (max_reply_tokens)")
    if n.empty:
        why = "" if n.by is CutBy.FILTER else " (a reasoning model may spend it all thinking)"
        kept = "an empty reply is stored" if n.stored else "there is no reply"
        return f"the reply stopped at {by} before any text{why}; {kept}"
    kept = "it is stored as it is" if n.stored else "it is incomplete"
    return f"the reply stopped at {by}; {kept}"


@_worded.register
def _(n: UsageIgnored, repl_hints: bool) -> str:
    return (f"token counts of provider {n.provider!r} ignored: {n.wrong}; the turn is stored"
            f" without them{by_plugin('provider', n.provider)}")


@_worded.register
def _(n: ContextNotBuilt, repl_hints: bool) -> str:
    by = by_plugin(*n.culprit) if n.culprit else ""
    return f"turn stored with only its input as context, memory failed: {n.error}{by}"


@_worded.register
def _(n: ModelNotClosed, repl_hints: bool) -> str:
    by = by_plugin(*n.culprit) if n.culprit else ""
    return f"the work is done, then closing the model failed: {n.error}{by}"


@_worded.register
def _(n: MemoryUpdateFailed, repl_hints: bool) -> str:
    by = by_plugin(*n.culprit) if n.culprit else ""
    if n.stored:
        return f"memory updated (what it stored is kept), its answer ignored: {n.error}{by}"
    if by and n.held_in is not None and repl_hints:
        by += held_state_way(n.held_in, n.culprit[1] if n.culprit else "")
    then = ("will retry next turn" if n.retry is Retry.NEXT_TURN
            else "the replay ended before a retry")
    return f"memory update failed, {then}: {n.error}{by}"


@_worded.register
def _(n: MemoryUpdateCancelled, repl_hints: bool) -> str:
    if n.retry is Retry.NEVER:
        return "memory update cancelled; the turn is stored, and the replay ended before a retry"
    return "memory update cancelled; the turn is stored and the update is retried next turn"


@_worded.register
def _(n: ErasedWhileUpdating, repl_hints: bool) -> str:
    turns = span(range(n.first, n.last + 1))
    made = (f"the summary of {turns} was" if n.made is DerivedMemory.SUMMARY
            else f"the facts found in {turns} were" if n.made is DerivedMemory.FACTS
            else f"the memory strategy {n.strategy} made after turn {n.last} was")
    then = ("it runs again on the text as it is now next turn" if n.retry is Retry.NEXT_TURN
            else "the replay ended before it ran again")
    return (f"{made} not stored: text was erased from this session while the update ran"
            f" (a purge, or a turn replaced in another chat); {then}")


@_worded.register
def _(n: StrategyChanged | ModelChanged | SettingsNotSaved | SavedParamsDropped
      | SystemPromptReplaced, repl_hints: bool) -> str:
    return f"session {session_notice_text(n)}"


@_worded.register
def _(n: HistoryMoved | OldHistoryLeft | HistoryUpgrading | WaitingForUpgrade | WaitingForWrite
      | RetentionApplied | RetentionSkipped | HistoryWritableByOthers, repl_hints: bool) -> str:
    return history_notice_text(n)


@_worded.register
def _(n: ContextsOverBudget, repl_hints: bool) -> str:
    return (f"{counted(n.over, 'context')} of {n.built:,} over the budget of {n.budget:,}"
            f" (the largest {n.most:,} tokens)")


@_worded.register
def _(n: ContextsByWordsAlone, repl_hints: bool) -> str:
    return (f"{counted(n.failed, 'context')} of {n.built:,} ranked by words alone: embedding "
            f"the input failed ({n.error}{by_plugin('embedder', n.embedder)})")


@_worded.register
def _(n: FilesNotReplayed, repl_hints: bool) -> str:
    names = ", ".join(n.names)
    if n.why is FileLeft.GONE:
        return (f"turn {n.turn}: {names} not sent again: the session no longer holds the"
                " image; this turn's figures are not the chat's")
    return (f"turn {n.turn}: {names} sent as its description alone: the model cannot see"
            " images; this turn's figures are not the chat's")


@_worded.register
def _(n: ExpectedRepliesReplaced, repl_hints: bool) -> str:
    # One figure or both, never "0 expected ids".
    said = [f"{counted(n.ids, 'expected id')} name recorded replies that --regenerate"
            " replaced"] if n.ids else []
    if n.text:
        only = "only they said" if n.ids else "only recorded replies said, which --regenerate" \
                                              " replaced,"
        said.append(f"{counted(n.text, 'expected text')} {only}")
    return "; ".join(said) + ": not scored"


@_worded.register
def _(n: ContextsWithoutVectors, repl_hints: bool) -> str:
    return (f"{counted(n.partly, 'context')} of {n.built:,} ranked messages without a vector by"
            f" words alone: indexing them failed ({failure_text(n.failure)})")


# -- a context's warnings -------------------------------------------------------------


@_worded.register
def _(n: OverBudget, repl_hints: bool) -> str:
    if n.fixed:
        alone = "input and attached files" if n.attached else "input"
        return (f"system prompt and {alone} alone take {n.tokens:,} tokens,"
                f" over the budget of {n.budget:,}")
    return f"context is {n.tokens:,} tokens, over the budget of {n.budget:,}"


@_worded.register
def _(n: SummaryBehind, repl_hints: bool) -> str:
    said = [f"{span(range(n.first, n.last + 1))} sent unsummarized"] if n.first else []
    if n.waiting_first:
        said.append(f"{span(range(n.waiting_first, n.waiting_last + 1))} not sent: over the"
                    " budget until the summary catches up")
    return "summary is behind; " + ", ".join(said or ["no turn of it sent"])


@_worded.register
def _(n: EmbeddingFailed, repl_hints: bool) -> str:
    by = by_plugin("embedder", n.embedder)
    return f"recall: embedding failed ({n.error}{by}), ranked by words only"


@_worded.register
def _(n: StoredWarning, repl_hints: bool) -> str:
    return n.text


@_worded.register
def _(n: IndexingNotice | VectorsResized, repl_hints: bool) -> str:
    return indexing_notice_text(n)
