"""An engine's checks before a turn is sent: the history writable and the session not gone,
what derived memory follows erasures made since it last looked, and the input within its
budget with the system prompt. A refusal here costs nothing: no model was called. A base
of `chatmem.engine.turns.Engine`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from chatmem.activity import SendingOverBudget
from chatmem.errors import OverBudget, ReadOnlyShare, SessionGone, StoreError
from chatmem.memory.guards import falls_with_setting
from chatmem.memory.params import budget_params
from chatmem.memory.quoting import attached_from_block
from chatmem.notices import CredentialInInput
from chatmem.privacy.secrets import TypedMask
from chatmem.text_caches import forget_texts

if TYPE_CHECKING:
    from chatmem.activity import Activity
    from chatmem.attachments import Attachment
    from chatmem.config.settings import Settings
    from chatmem.memory.base import ContextRequest, Strategy
    from chatmem.memory.context import Context
    from chatmem.memory.indexing import Indexing
    from chatmem.memory.state import SessionState
    from chatmem.store import SessionRecord
    from chatmem.store.protocols import TurnStore
    from chatmem.tokens import TokenCounter


class TurnChecks:
    """The checks half of an engine (the attributes are set by `Engine.__init__`)."""

    store: TurnStore
    session: SessionRecord
    strategy: Strategy
    budget: int | None
    activity: Activity
    allow_over_budget: bool
    counter: TokenCounter
    state: SessionState
    indexing: Indexing
    _erasures: int | None
    settings: Settings | None
    typed_secrets: Mapping[str, str] | None

    if TYPE_CHECKING:
        @property
        def address(self) -> str: ...

        def request(self, text: str) -> ContextRequest: ...

    def without_credentials(self, *texts: str) -> tuple[list[str], list[CredentialInInput]]:
        """`texts` (an input, a recorded reply) with the credentials chatmem runs with
        replaced by their labels, and the notice saying so if any was: what is sent and
        stored, so `inspect` shows what the model read and no byte of a key is stored
        (README: the key never reaches the database)."""
        return without_typed_credentials(self.settings, *texts, secrets=self.typed_secrets)

    def without_credentials_attached(self, text: str, attachments: Sequence[Attachment],
                                     ) -> tuple[str, list[Attachment], list[CredentialInInput]]:
        """`text` and the text of each of `attachments` with the credentials replaced (as
        `without_credentials`): a file holding the key (a .env, a config pasted in) is sent
        and stored as the input is."""
        [text, *attached], told = self.without_credentials(text, *(a.text for a in attachments))
        return (text, [replace(a, text=t) for a, t in zip(attachments, attached, strict=True)],
                told)

    def follow_erasures(self) -> None:
        """Forget what this engine derived from text that has left the session's memory
        since it last looked (a purge, a replaced turn; here or by another process): recall's
        caches, and the vectors its backlogs computed and have not stored. An engine kept
        open across turns (a chat, a server's) would otherwise go on ranking by them.

        Raises SessionGone (a NotFound) when the session itself is gone (deleted, erased by
        retention)."""
        erasures = self.store.sessions.erasures(self.session.id)
        if erasures is None:
            raise SessionGone(self.address, "nothing was sent")
        if erasures != self._erasures:
            self.erasures_seen(erasures)
            self.state.caches.clear()
            self.indexing.abandon()
            # The process's caches of texts too: an erasure by another process (`facts
            # forget --purge` beside a running serve or mcp) emptied only its own.
            forget_texts()

    def erasures_seen(self, erasures: int | None) -> None:
        """`erasures`, the session's count as read now, is the one this engine follows: what
        it reads of the session's memory from now on is shared with the other engines of
        this process that saw the same count of the same file's session (SessionState.
        shared), and never with one that saw another."""
        self._erasures = erasures
        identity = self.store.vectors.shared_identity
        self.state.shared = None if identity is None or erasures is None else (
            identity, self.session.id, self.session.created_at, erasures)

    def estimate(self, context: Context) -> int:
        """chatmem's count of the whole request, compared with what the provider reports."""
        if self.counter.additive:
            # The parts already hold each message's cached count; recounting the
            # whole context every turn would make a turn's cost grow with it.
            return context.tokens
        # A chat template (local) can add text between messages: count what it renders.
        return self.counter.count_messages(context.messages())

    def check_writable(self) -> None:
        """A reply that cannot be stored is a paid call (or minutes of a local model) wasted.

        Follows erasures (follow_erasures) once any wait is over: the count the commit
        compares with is read after a purge this waited for, as the context is built after
        it; read before, that purge would refuse the turn once its reply was paid for."""
        try:
            # Patient as the commit is: waiting is said, and sending then stores its reply.
            self.store.check_writable(patient=True)
            self.follow_erasures()
            self.store.sessions.check_session_writable(self.session.id)
        except ReadOnlyShare as e:
            # Kept typed: each front end words its own way on (a client cannot fork).
            raise ReadOnlyShare(e.address, e.owner, location=e.location,
                                nothing_sent=True) from None
        except StoreError as e:
            raise StoreError(f"nothing was sent: {e}", kind=e.kind,
                             location=e.location) from None

    def check_budget(self, context: Context) -> None:
        """Refuse an input that cannot fit the budget with the system prompt: no strategy can help.

        With allow_over_budget it is sent, after a warning the user sees first.
        """
        if not context.budget:
            return
        fixed: tuple[tuple[str, int], ...] = tuple(context.fixed.items())
        # A local model's chat template adds tokens no strategy can drop (its default system
        # prompt when the session has none): counted as /tokens and the turn's line count them.
        if (template := self.estimate(context) - context.tokens) > 0:
            fixed += (("chat template", template),)
        if sum(tokens for _, tokens in fixed) + context.priming <= context.budget:
            return
        if self.allow_over_budget:
            self.activity.warn(SendingOverBudget(fixed, context.priming, context.budget))
            return
        raise OverBudget(fixed, context.priming, context.budget, strategy=self.strategy.name,
                         budget_params=budget_params(self.strategy.params, context.budget),
                         context_budget_too=self.budget == context.budget and falls_with_setting(
                             self.strategy, self.request("")),
                         files=_files(context))


def _files(context: Context) -> tuple[tuple[str, int], ...]:
    """Each attached file's name and tokens, largest first: "files 7,195" alone did not say
    which of the files given to leave out."""
    part = context.part("files")
    if part is None:
        return ()
    named = [(quoted[0] if (quoted := attached_from_block(m.content)) else "a file", m.tokens)
             for m in part.messages]
    return tuple(sorted(named, key=lambda file: -file[1]))


def without_typed_credentials(settings: Settings | None, *texts: str, system: bool = False,
                              secrets: Mapping[str, str] | None = None,
                              ) -> tuple[list[str], list[CredentialInInput]]:
    """`texts` with the credentials `settings` run with (`secrets`, what the workspace says
    they are: Workspace.typed_secrets, else providers.typed_secrets(settings)) replaced by
    their labels, and the notice saying so if any was (`system`: the texts are a system
    prompt)."""
    if settings is None:
        return list(texts), []
    from chatmem.providers import typed_secrets

    mask = TypedMask(typed_secrets(settings) if secrets is None else secrets)
    masked = [mask(text) for text in texts]
    return masked, [CredentialInInput(mask.found, in_system_prompt=system)] if mask.found else []
