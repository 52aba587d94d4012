"""A recorded turn: an exchange had elsewhere (a replay's transcript, an MCP client's
record_turn) committed as an ok turn without calling the model, its memory updated as a
chat's turn updates it (chatmem.engine.turns runs the turns the model answers)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from chatmem.engine.preflight import TurnChecks
from chatmem.engine.results import TurnResult
from chatmem.engine.said import Said, SaidAt
from chatmem.engine.session_changes import SessionChanges
from chatmem.engine.turn_rows import TurnRows
from chatmem.engine.upkeep import MemoryUpkeep
from chatmem.errors import StrategyFailed
from chatmem.memory.assembly import assemble
from chatmem.memory.guards import PLUGIN_BUILDS
from chatmem.notices import ContextNotBuilt, Notice
from chatmem.speakers import relayed, with_speaker
from chatmem.store import TurnStatus
from chatmem.text import valid_text

if TYPE_CHECKING:
    from chatmem.attachments import Attachment
    from chatmem.memory.base import Context, ContextRequest


class RecordedTurns(SessionChanges, MemoryUpkeep, TurnChecks, TurnRows):
    """The recorded half of an engine (chatmem.engine.turns.Engine)."""

    if TYPE_CHECKING:
        def request(self, text: str, attachments: Sequence[Attachment] = (),
                    said_at: SaidAt = Said.NOW, speaker: str | None = None
                    ) -> ContextRequest: ...

        def build_context(self, text: str, attachments: Sequence[Attachment] = (),
                          said_at: SaidAt = Said.NOW, speaker: str | None = None
                          ) -> Context: ...

    def replay_turn(self, text: str, reply: str,
                    times: tuple[str | None, str | None] = (None, None),
                    ids: tuple[str | None, str | None] = (None, None),
                    said_at: SaidAt = Said.NOW, speaker: str | None = None,
                    attachments: Sequence[Attachment] = (), *, kept: bool = False
                    ) -> TurnResult:
        """Commit `text` with a recorded `reply` as an ok turn, without calling the model.

        Replay uses it so strategies are compared on identical conversations;
        `times` are the recorded messages' timestamps (recall's sittings use them), `ids`
        their transcript ids (a saved replay's probes name messages by them), `said_at`
        when its context reads the input as said (a transcript's time; default now),
        `speaker` who said it in a group chat (ContextRequest.speaker), `attachments` the
        files the recorded turn sent with it. `kept`: an exchange another program had, kept
        even when the strategy fails to build (with only its input as context; MCP).
        """
        [text, reply, *attached], replaced = self.without_credentials(
            valid_text(text), valid_text(reply), *(a.text for a in attachments))
        attachments = [replace(a, text=t) for a, t in zip(attachments, attached, strict=True)]
        if (member := self._grantee_label()) is not None:
            # A grantee's exchange (MCP's record_turn on `ann/trip`) is his, as his chat's
            # turn is (Engine.turn): unlabelled, her model read his words as hers.
            text, speaker = with_speaker("user", text, member), relayed(speaker, member)
        # As send's: a fork's or an import's turns before this one are first folded in (an
        # MCP client's record_turn on one; a replay starts empty, where this does nothing).
        caught = self.catch_up(backlog_after_turn=True)
        self.state.caches.pop(PLUGIN_BUILDS, None)
        try:
            context = self.build_context(text, attachments, said_at=said_at, speaker=speaker)
        except StrategyFailed as e:
            if not kept:
                raise
            context = assemble(self.request(text, attachments, said_at, speaker), [])
            caught = [*caught, ContextNotBuilt(str(e), (e.kind, e.name))]
        if (took := self.state.caches.pop(PLUGIN_BUILDS, None)) and kept:
            caught += self.slow_build(took)  # as a chat's turn says it (MCP's record_turn)
        self._keep_changes()
        self.store.images.keep_images(self.session.id, [a.image for a in attachments if a.image])
        record = self.store.turns.commit_turn(
            self._record(text, context, TurnStatus.OK, speaker, reply=reply),
            sent_at=times[0], replied_at=times[1], external_ids=ids,
            message_tokens=self._message_tokens(context, text, reply))
        return TurnResult(record, context, reply,
                          replaced + caught + unsaid(caught, self.update_memory(
                              turns=record.history_turn)))



def unsaid(said: Sequence[Notice], more: Sequence[Notice]) -> list[Notice]:
    """`more` less what `said` holds already: an update failing as the catch-up before the
    turn failed (a plugin's that raises each time) is one line, not the same line twice."""
    return [n for n in more if n not in said]
