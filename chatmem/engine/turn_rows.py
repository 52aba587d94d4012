"""The rows a turn writes: the turn record with what inspect needs to show it again, the
cancelled or failed turn's row (not kept once its context may hold erased text), and the
new messages' token counts. A base of `chatmem.engine.turns.Engine`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chatmem.errors import NotFound, SessionGone, StoreError, StoreFailure
from chatmem.speakers import writer_label
from chatmem.store import TurnRecord, TurnStatus
from chatmem.store.records import AccessLevel

if TYPE_CHECKING:
    from chatmem.memory.base import Strategy
    from chatmem.memory.context import Context
    from chatmem.providers.base import Provider
    from chatmem.store import SessionRecord
    from chatmem.store.protocols import TurnStore
    from chatmem.tokens import TokenCounter


class TurnRows:
    """The rows half of an engine (the attributes are set by `Engine.__init__`)."""

    store: TurnStore
    session: SessionRecord
    strategy: Strategy
    provider: Provider
    counter: TokenCounter
    _grantee_of: tuple[int, str | None] | None
    _erasures: int | None

    if TYPE_CHECKING:
        def estimate(self, context: Context) -> int: ...

    def _record(self, text: str, context: Context, status: TurnStatus,
                speaker: str | None = None, **extra: Any) -> TurnRecord:
        # A write share's grantee speaks in the owner's session as a member does: his "my
        # name is …" is his, not the owner's (nor her profile's), whoever's helper reads it.
        speaker = speaker or self._grantee()
        return TurnRecord(
            session_id=self.session.id,
            status=status,
            input=text,
            # Whether counts were approximate depends on the counter, which inspect
            # cannot rebuild from the row: keep it with the context. So is who said the
            # input in a group chat, which fact extraction reads later (store.history.
            # speakers): a member's statement is not the profile owner's.
            context={**context.to_json(), "approximate": self.counter.approximate,
                     **({"speaker": speaker} if speaker else {})},
            strategy=self.strategy.name,
            params=dict(self.strategy.params),
            provider=self.provider.name,
            model=self.provider.model,
            tokenizer=self.counter.key,
            estimated_tokens=self.estimate(context),
            **extra,
        )

    def _grantee(self) -> str | None:
        if self._grantee_of is None or self._grantee_of[0] != self.session.id:
            try:
                access = self.store.sessions.session_access(self.session.id)
            except NotFound:
                # Deleted, or no longer shared with this role, while the turn ran: its
                # write says so (SessionGone, named), not "no session with id N".
                return None
            self._grantee_of = (self.session.id, access.role
                                if access.level is AccessLevel.WRITE else None)
        return self._grantee_of[1]

    def _grantee_label(self) -> str | None:
        """A write share's grantee's role as the speaker his words are labelled with in the
        owner's session (`bob: …`, as a group chat member's): unlabelled, her next context
        sent his "I am Ann, my name is Mallory now." as her own words, to her model and her
        summaries. None in one's own session, and for a role whose name spells a role's
        word (`system: …` would read as the system's line), whose words stay unlabelled."""
        grantee = self._grantee()
        return None if grantee is None else writer_label(grantee)

    def _record_unless_erased(self, record: TurnRecord) -> TurnRecord:
        """A cancelled or failed turn's row; not kept (the record as it is, unnumbered) when
        text left the session's memory meanwhile, as its context may hold it, or the session
        is gone: the Ctrl-C or the provider's error is what the user is told, not the
        refusal (the next turn says the session is gone)."""
        try:
            return self.store.turns.record_turn(record, erasures=self._erasures)
        except SessionGone:
            return record
        except StoreError as e:
            if e.kind is not StoreFailure.ERASED_MEANWHILE:
                raise
            return record

    def _message_tokens(self, context: Context, text: str, reply: str) -> tuple[int, int]:
        """The new messages' token counts, stored with the turn so no later read writes.

        The input was counted to build this context: its count is reused.
        """
        user = context.input_tokens
        if user is None:
            user = self.counter.count_message("user", text)
        return user, self.counter.count_message("assistant", reply)
