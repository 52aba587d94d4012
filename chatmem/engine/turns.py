"""One turn: build the context → stream from the provider → commit → update memory.

A turn commits atomically after the reply completes. A failed or cancelled
turn records only its turn row (so `inspect` can show what would have been
sent); nothing from it enters memory. Derived state is updated after commit,
and a failing update never undoes the turn.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from datetime import tzinfo
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from chatmem.activity import QUIET, Activity
from chatmem.engine.attached import attached_messages, refuse_unseen_images
from chatmem.engine.recorded import RecordedTurns, unsaid
from chatmem.engine.results import TurnResult
from chatmem.engine.said import Said, SaidAt, said_time
from chatmem.engine.streaming import ProviderCalls, caller_failure, close_quietly
from chatmem.errors import (
    ChatmemError,
    EmptyInput,
    NotFound,
    OverBudget,
    ProviderError,
    ProviderNotFound,
    SessionGone,
    StoreError,
    StrategyFailed,
    UsageError,
)
from chatmem.history import StoredHistory
from chatmem.memory.base import Context, ContextRequest, Message, Strategy
from chatmem.memory.context import with_reply_begun
from chatmem.memory.guards import PLUGIN_BUILDS, build_guarded
from chatmem.memory.indexing import Indexing
from chatmem.memory.state import SessionState
from chatmem.notices import CutBy, InputNotUtf8, Notice, ReplyCut
from chatmem.providers.base import Provider, ReplyStream, Usage
from chatmem.providers.interruptible import InterruptibleReply
from chatmem.speakers import relayed, with_speaker
from chatmem.store import SessionRecord, TurnStatus
from chatmem.store.protocols import TurnStore
from chatmem.text import REPLACEMENT, is_valid, shows_something, valid_text
from chatmem.timestamps import parse_time
from chatmem.timezones import system_zone
from chatmem.tokens import TokenCounter

if TYPE_CHECKING:
    from chatmem.attachments import Attachment
    from chatmem.config.settings import Settings
    from chatmem.embeddings import Embedder


StoreT = TypeVar("StoreT", bound=TurnStore, covariant=True)
"""The engine's store: it uses only `TurnStore`; its owner (the REPL) may use the rest of
the store it passed in (`Engine[Store]`); any engine is an `Engine[TurnStore]`."""


class Engine(RecordedTurns, Generic[StoreT]):
    """Runs turns of one session with one strategy and one provider, on the thread that
    opened its store (chatmem.app.Workspace says why; another thread is refused, WrongThread)."""

    store: StoreT

    def __init__(
        self,
        store: StoreT,
        session: SessionRecord,
        provider: Provider,
        strategy: Strategy,
        *,
        budget: int | None = None,
        helper: Provider | None = None,
        settings: Settings | None = None,
        embedder: Embedder | Callable[[], Embedder | None] | None = None,
        activity: Activity = QUIET,
        allow_over_budget: bool = False,
        background_indexing: bool = True,
        keeps_memory: bool = True,
        notices: Sequence[Notice] = (),
        pending: dict[str, Any] | None = None,
        created: bool = False,
        interrupt_ends: bool = False,
        zone: tzinfo | None = None,
        typed_secrets: Mapping[str, str] | None = None,
    ) -> None:
        self.store = store
        self.session = session
        self.provider = provider
        self.strategy = strategy
        self.budget = budget
        self.helper = helper or provider
        """What strategy calls (summaries, facts) go to: the chat's provider unless the
        helper_model setting names another."""
        self.settings = settings
        self.typed_secrets = typed_secrets
        """What is masked in the user's input (Workspace.typed_secrets: with the key the
        history opened with); None: what `settings` name (providers.typed_secrets)."""
        self.zone: tzinfo = zone or (settings.zone if settings is not None else system_zone())
        """The zone the user's days are read in: the `timezone` setting's, else the
        system's (chatmem.timezones)."""
        self.activity = activity
        """Where model calls outside the reply are shown (a spinner in the REPL)."""
        self.allow_over_budget = allow_over_budget
        """Send an input that cannot fit the budget anyway, after a warning."""
        self.counter: TokenCounter = provider.token_counter()
        self.state = SessionState(store, session.id, session.user, drift_guard=(
            settings.summary.drift_guard if settings is not None else True))
        self.keeps_memory = keeps_memory
        """False for a one-off question: no summary or fact is derived from a conversation
        nobody will continue (each would be a model call for nothing)."""
        self.notices: list[Notice] = list(notices)
        """What opening the session changed (strategy, system prompt), for the user to see."""
        self._caught_up = False
        self._said_helper_too_small = False
        self._embedder = embedder
        """An embedder, or how to open one the first time a strategy needs it."""
        self.pending: dict[str, Any] = dict(pending or {})
        """What opening the session changed (strategy, params, system) and is not stored
        yet: it is stored with the first turn stored, or when the command ends, unless
        every turn was refused (a refused turn stores nothing, these changes included)."""
        self.created = created
        """This engine's command created the session (removed again if nothing is kept)."""
        self._refused = False
        self._stored = False
        self.configured = False
        """A strategy or system prompt was chosen for the session in this command (a flag, a
        slash command): a session set up so is kept, turns or not (`discard_if_unused`)."""
        self.replied: tuple[Usage, Context] | None = None
        """The last reply's usage and context, set as it is complete (before `on_reply_end`)."""
        self._grantee_of: tuple[int, str | None] | None = None
        """(session id, this role's name when it is a write share's grantee there), once
        asked."""
        self.background_indexing = background_indexing
        """Embed messages between turns (a chat); False: before the next build (replay,
        eval, what-if: results that do not depend on timing)."""
        self.indexing = Indexing(store, session.id, background=background_indexing)
        """The session's messages without vectors, one backlog per embedding model."""
        self.interrupt_ends = interrupt_ends
        """Ctrl-C while a reply streams or the strategy updates its memory ends the command
        (replay, eval, what-ifs: a half-built result is no result, and nobody's turn is
        stored). False (a chat): the turn is stored as cancelled, the update retried next turn."""
        self._turns_unfolded = 0
        self._erasures: int | None = None
        """`sessions.erasures` when this engine last looked (follow_erasures)."""
        self.erasures_seen(store.sessions.erasures(session.id))

    @property
    def embedder(self) -> Embedder | None:
        """The embedder for recall, when the strategy uses one; opened on first use."""
        if not self.strategy.needs_embedder:
            return None
        if callable(self._embedder) and not hasattr(self._embedder, "embed"):
            self._embedder = self._embedder()
        return self._embedder  # type: ignore[return-value]

    def history(self, turns: int | None = None) -> StoredHistory:
        """`turns`: its turn count, when a commit just stored it (StoredHistory)."""
        return StoredHistory(self.store, self.session.id, self.counter,
                             counts=self.state.message_counts(self.counter), turns=turns)

    def request(self, text: str, attachments: Sequence[Attachment] = (),
                said_at: SaidAt = Said.NOW, speaker: str | None = None,
                reply_begun: str | None = None) -> ContextRequest:
        """The request for `text`, said at `said_at` (chatmem.engine.said) by `speaker` (a
        group chat's, whose label `text` opens with; ContextRequest.speaker), and the reply
        to it so far that the model is to go on with (ContextRequest.reply_begun)."""
        user = Message.counted("user", text, self.counter)
        begun = (Message.counted("assistant", reply_begun, self.counter) if reply_begun
                 else None)
        # Its own user message each, before the input: read as data, and out of the input,
        # so history and recall hold what the user typed, not every file ever attached.
        attached = attached_messages(attachments, self.counter, self.provider)
        return ContextRequest(
            history=self.history(),
            input=user,
            counter=self.counter,
            attached=attached,
            system=self.system_prompt,
            state=self.state,
            budget=self.budget,
            embedder=self.embedder,
            secrets=self.settings.credentials if self.settings is not None else dict,
            zone=self.zone,
            said_at=said_time(said_at, self.store, self.session.id, self.zone),
            speaker=speaker,
            reply_begun=begun,
        )

    def build_context(self, text: str, attachments: Sequence[Attachment] = (),
                      said_at: SaidAt = Said.NOW, speaker: str | None = None) -> Context:
        """What would be sent for `text` (and files attached to it), said at `said_at`
        (default now), without calling the model: with the credentials masked, as a turn
        would send it."""
        self.follow_erasures()
        text, attached, _ = self.without_credentials_attached(text, attachments)
        return self._build(self.request(text, attached, said_at, speaker))

    def _build(self, request: ContextRequest) -> Context:
        """The strategy's context for `request`; its failure names the session holding a
        state it may have failed on (StrategyFailed.held_in)."""
        try:
            return build_guarded(self.strategy, request)
        except StrategyFailed as e:
            e.held_in = self.state_held_in(e.name)
            raise

    def run_turn(self, text: str, on_delta: Callable[[str], None] | None = None,
                 on_reply_end: Callable[[], None] | None = None,
                 attachments: Sequence[Attachment] = (),
                 supersedes: int | None = None, external_id: str | None = None,
                 cancel: threading.Event | None = None,
                 speaker: str | None = None,
                 on_stored: Callable[[TurnResult], None] | None = None,
                 on_answering: Callable[[], None] | None = None,
                 reply_begun: str | None = None) -> TurnResult:
        """Send one user input, with `attachments` quoted as data; returns the result,
        cancelled on Ctrl-C, or once `cancel` is set (a served client hung up) even while
        the model sends nothing.

        `on_delta` gets the reply as it streams, `on_reply_end` is called when it
        is complete, before the strategy's own model calls. Provider errors are
        recorded as a failed turn and raised again (a provider's exception that is not
        chatmem's as ProviderFailed); so is what `on_delta` or `on_reply_end` raises, as
        it is. The reply's stream is closed on any early end. `supersedes`: the number of the
        turn this one replaces once stored (chatmem.engine.resend); `external_id`: the
        input's id in the transcript a replay plays; `speaker`: a group chat's, who said
        `text` (ContextRequest.speaker). `on_stored` gets the result (its notices as
        they are then) once an ok turn is stored, before memory's update, which may wait
        long for the helper model: a server answers its client there; the update's notices
        are in the result returned. `on_answering` is called when the model's server says it
        took the request (ReplyStream's empty piece), before any text: a reasoning model may
        think minutes before its first word, and a server sends its client its headers then.
        `reply_begun`: a reply cut short that the model is to go on with (a served client's
        "Continue"): sent after the input (with_reply_begun), and stored as the reply with
        what the model adds, which alone is streamed and is the result's `reply`.
        """
        # Pre-flight, before any model call (catching up may call the helper model).
        try:
            if not shows_something(text):
                # An empty turn (spaces, a zero-width space) would be sent and stored.
                raise EmptyInput
            # Follows erasures too, before the backlogs store what they computed: it may be
            # of text gone since.
            self.check_writable()
            refuse_unseen_images(attachments, self.provider)
        except (StoreError, UsageError, NotFound):
            self._refused = True  # not sent: nothing of it is to be stored
            raise
        notices = self.catch_up()
        if not is_valid(text):
            text = valid_text(text)
            notices.append(InputNotUtf8(REPLACEMENT))
        text, attachments, replaced = self.without_credentials_attached(text, attachments)
        notices += replaced
        if reply_begun:
            # The client's text as the input is (its last message, which a user may edit):
            # an MCP record_turn's reply is masked too.
            [reply_begun], replaced = self.without_credentials(valid_text(reply_begun))
            notices += [told for told in replaced if told not in notices]
        if (member := self._grantee_label()) is not None:
            # His words, not hers: also under a name his client gave (`ann` would be hers).
            text, speaker = with_speaker("user", text, member), relayed(speaker, member)
        # a build itself never writes
        notices += self.indexing.pause()
        sent_at = self.store.now()  # stamps the input and the reply; its context reads its day
        try:
            request = self.request(text, attachments, parse_time(sent_at), speaker,
                                   reply_begun)
            request.state.caches.pop(PLUGIN_BUILDS, None)
            context = self._build(request)
            if request.reply_begun is not None:
                context = with_reply_begun(context, request.reply_begun)
            if took := request.state.caches.pop(PLUGIN_BUILDS, None):  # a plugin's build
                notices += self.slow_build(took)
            self.check_budget(context)
        except (OverBudget, StrategyFailed):
            self._refused = True
            raise
        self._keep_changes()
        # Kept by content hash, once per session, before it is sent: inspect shows it
        # whatever the reply's fate.
        self.store.images.keep_images(self.session.id, [a.image for a in attachments if a.image])
        started = time.monotonic()
        stream: ReplyStream | None = None
        chunks: list[str] = []

        def elapsed() -> int:
            return int((time.monotonic() - started) * 1000)

        calls = ProviderCalls(self.provider, self.settings)
        try:
            if cancel is not None and cancel.is_set():
                # Its client left while the turn waited (for its conversation): nobody
                # reads the reply, so the model is not asked (nor paid) for it.
                raise KeyboardInterrupt
            # Inside the net: a provider may send its request (and fail) as it is asked.
            stream = calls.stream(context.messages())
            if cancel is not None:
                stream = InterruptibleReply(stream, cancel)
            for delta in calls.deltas(stream):
                if not delta:
                    if on_answering:
                        on_answering()
                    continue
                chunks.append(delta)
                if on_delta:
                    on_delta(delta)
            # Inside the net: a Ctrl-C while the finished reply is drawn cancels it like
            # one during the stream, and the turn is still recorded.
            self.replied = stream.usage, context
            if on_reply_end:
                on_reply_end()
        except KeyboardInterrupt:
            close_quietly(stream)
            if self.interrupt_ends:
                raise
            record = self._record_unless_erased(self._record(
                text, context, TurnStatus.CANCELLED, speaker,
                reply=(reply_begun or "") + "".join(chunks) or None,
                latency_ms=elapsed(), error="cancelled by the user",
                rendered_prompt=None if stream is None else stream.rendered_prompt,
            ))
            return TurnResult(record, context, "".join(chunks))
        except ProviderError as e:
            close_quietly(stream)
            self._record_unless_erased(self._record(
                text, context, TurnStatus.FAILED, speaker, latency_ms=elapsed(), error=str(e),
                rendered_prompt=None if stream is None else stream.rendered_prompt,
            ))
            if isinstance(e, ProviderNotFound) and self.model_from is not None:
                e.model_from, e.session = self.model_from, self.address
            raise
        except BaseException as e:
            # The caller's own code (on_delta, on_reply_end) raised: the reply is not read
            # on (nor paid for), the turn is recorded failed, and the caller hears its own
            # exception as it raised it.
            close_quietly(stream)
            with suppress(ChatmemError):
                self._record_unless_erased(self._record(
                    text, context, TurnStatus.FAILED, speaker, latency_ms=elapsed(),
                    error=caller_failure(e, calls.mask),
                    rendered_prompt=None if stream is None else stream.rendered_prompt))
            raise
        reply = "".join(chunks)
        whole = (reply_begun or "") + reply
        usage, rendered_prompt = stream.usage, stream.rendered_prompt
        close_quietly(stream)  # read to its end, it may still hold a connection
        try:
            record = self.store.turns.commit_turn(self._record(
                text, context, TurnStatus.OK, speaker, reply=whole, latency_ms=elapsed(),
                prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                rendered_prompt=rendered_prompt), sent_at=sent_at, supersedes=supersedes,
                message_tokens=self._message_tokens(context, text, whole),
                erasures=self._erasures,
                external_ids=(external_id, None), after_turn=request.history.turn_count())
        except SessionGone as gone:
            raise gone.named(self.address) from None
        # Read extends life: a fact this context sent is not idle (fact_idle_days).
        self.store.retention.mark_facts_used(list(context.fact_ids))
        self._note_model()
        if usage.ignored is not None:
            notices.append(usage.ignored)
        if usage.cut_at_limit or usage.filtered:
            notices.append(ReplyCut(CutBy.FILTER if usage.filtered else CutBy.LIMIT, not reply,
                                    stored=self.keeps_memory))
        if on_stored is not None:
            on_stored(TurnResult(record, context, reply, list(notices)))
        if self.keeps_memory:
            # The commit checked the erasures against `_erasures` under the write lock.
            notices += unsaid(notices, self.update_memory(turns=record.history_turn,
                                                          erasures=self._erasures))
        return TurnResult(record, context, reply, notices)
