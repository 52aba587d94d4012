"""An engine's bookkeeping of its session row: what opening the session changed (strategy,
parameters, system prompt) is stored with the first turn stored, or dropped when every turn
was refused; the session follows the model its latest turn used, and a session changed by
another process is noticed. A session shared for writing is the owner's to set up: a
grantee's strategy, system prompt and model hold for the grantee's engine alone. A base of
`chatmem.engine.turns.Engine`."""

from __future__ import annotations

import dataclasses
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from chatmem.engine.preflight import without_typed_credentials
from chatmem.errors import ChatmemError, SessionGone
from chatmem.session_notices import SettingsNotSaved
from chatmem.store.records import session_address

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from chatmem.config.settings import Settings
    from chatmem.errors import ModelFrom
    from chatmem.memory.base import Strategy
    from chatmem.memory.vector_backlog import IndexingStatus
    from chatmem.notices import Notice
    from chatmem.providers.base import Provider
    from chatmem.store import SessionRecord
    from chatmem.store.protocols import TurnStore
    from chatmem.tokens import TokenCounter


class SessionChanges:
    """The session-row half of an engine (the attributes are set by `Engine.__init__`)."""

    store: TurnStore
    session: SessionRecord
    strategy: Strategy
    provider: Provider
    counter: TokenCounter
    pending: dict[str, Any]
    created: bool
    _caught_up: bool
    _refused: bool
    _stored: bool
    notices: list[Notice]
    settings: Settings | None
    typed_secrets: Mapping[str, str] | None
    _finished = False
    chosen_here: frozenset[str] = frozenset()
    """What whoever opened this engine chose (strategy and params, system, provider and
    model): a change another process makes to those is not followed (a server's request
    naming a strategy keeps it; two engines choosing differently reopened each other on
    every request)."""

    settings_owner: str | None = None
    """The session's owner when this role shares it for writing: only the owner changes
    the session's settings (strategy, parameters, system prompt, model), so this engine's
    are its own, never stored (`set_strategy`, `set_system`, `_note_model`)."""

    model_from: ModelFrom | None = None
    """Where the chat model came from (a choice, the session's latest, the config's), for
    the words of its 404 (ProviderNotFound)."""

    own_system: tuple[str | None] | None = None
    """A system prompt for this engine's turns only, never the session's (`use_system`)."""

    chat_settings: Settings | None = None
    """The settings its chat model was opened from (app.conversations.start_conversation);
    None when the caller handed a model in."""

    helper: Provider

    if TYPE_CHECKING:
        def close_indexing(self) -> list[IndexingStatus]: ...

    @property
    def system_prompt(self) -> str | None:
        """The system prompt this engine's turns are sent with."""
        return self.session.system if self.own_system is None else self.own_system[0]

    def use_system(self, system: str | None) -> None:
        """Send the next turns with `system` (None: none) without making it the session's: a
        served request's own system messages are its instructions alone, and the next
        request (or a chat resuming the session) does not inherit them."""
        self.own_system = (self._without_credentials(system),)
        self.chosen_here |= {"system"}  # another's change to the session's is not this one's

    def use_chat(self, provider: Provider, chat_settings: Settings, settings: Settings) -> None:
        """Send the next replies through `provider`, opened from `chat_settings`: the model
        this engine runs on, with other per-call options (a served request's seed,
        temperature or max_tokens), as an engine opened with `settings` would; its session,
        caches and token counts stay (the model, hence the tokenizer, is the same). Strategy
        calls the chat model makes (no helper named) go to it too, as they would there."""
        if self.helper is self.provider:
            self.helper = provider
        self.provider, self.chat_settings, self.settings = provider, chat_settings, settings

    @property
    def address(self) -> str:
        """What names the session to the user: `OWNER/NAME` on another's, shared for writing
        (their own may have its name), else its name."""
        return session_address(self.session.name, self.settings_owner)

    def take_opening_notices(self) -> list[Notice]:
        """What opening the session told (`notices`), once: a server keeps an engine open
        between requests, and only the request that opened it is told."""
        told, self.notices = self.notices, []
        return told

    def told_first(self, notices: Sequence[Notice]) -> None:
        """Put what opening the history told before it (a file moved, retention) ahead of
        the session's own opening notices, each once: a front end without a listener
        (a server) tells them with the session's."""
        self.notices = [*dict.fromkeys([*notices, *self.notices])]

    def follow_strategy_changes(self) -> None:
        """The strategy this engine was opened with was a default (a server's `serve -s`),
        not the caller's choice: a change another process makes to it (a /strategy in a
        chat) is followed, as one to the session's own would be (`changed_elsewhere`)."""
        self.chosen_here -= {"strategy", "params"}

    def changed_elsewhere(self) -> bool:
        """Whether another process renamed the session or changed its strategy, parameters
        or system prompt, or took a turn on another model, since this engine last read or
        wrote them: an engine kept open (a server's) is then opened anew, as a request
        opening the session afresh would (one naming no model resumes the session's)."""
        now, mine = self.store.sessions.session_by_id(self.session.id), self.session
        followed = [f for f in ("name", "strategy", "params", "system", "provider", "model")
                    if f not in self.chosen_here]
        return any(getattr(now, f) != getattr(mine, f) for f in followed)

    def set_strategy(self, strategy: Strategy) -> SettingsNotSaved | None:
        """The strategy from the next turn on, kept as the session's; for this engine only
        (said by the value returned) when the session is another's, shared for writing."""
        self.strategy = strategy
        self._caught_up = False
        self.configured = True
        self.pending.pop("strategy", None)
        self.pending.pop("params", None)
        return self._set("strategy", strategy=strategy.name, params=dict(strategy.params))

    def set_system(self, system: str | None) -> SettingsNotSaved | None:
        """The system prompt from the next turn on (as `set_strategy`)."""
        self.pending.pop("system", None)
        self.own_system = None
        self.configured = True
        return self._set("system prompt", system=self._without_credentials(system))

    def _without_credentials(self, system: str | None) -> str | None:
        # Stored and sent as a turn's input is: no byte of a key in the history.
        return system and without_typed_credentials(self.settings, system,
                                                     secrets=self.typed_secrets)[0][0]

    def _set(self, what: str, **fields: Any) -> SettingsNotSaved | None:
        if self.settings_owner is None:
            self.session = self.store.sessions.update_session(self.session.id, **fields)
            return None
        self.session = dataclasses.replace(self.session, **fields)
        self.chosen_here |= fields.keys()  # another's change to them is not followed either
        return SettingsNotSaved(self.address, what, self.settings_owner)

    def _keep_changes(self) -> None:
        """A turn is about to be stored: so is what opening the session changed."""
        self._stored = True
        if self.pending:
            changes, self.pending = self.pending, {}
            self.session = self.store.sessions.update_session(self.session.id, **changes)

    def settle(self) -> None:
        """Store what opening the session changed, unless the only turns tried were refused."""
        if self._refused and not self._stored:
            self.pending = {}
        elif self.pending:
            self._keep_changes()

    def finish(self) -> list[IndexingStatus]:
        """The command is done with the session (once: again is a no-op). The backlog stops
        and stores what it embedded (`close_indexing`), then `settle`, and when the only
        turns tried were refused, a session this command created is removed if it holds
        nothing (another process may have chatted in it meanwhile). Returns the backlogs
        left unfinished, for a front end to say. A session gone meanwhile (deleted by
        another process) has nothing left to store or remove."""
        if self._finished:
            return []
        self._finished = True
        try:
            left = self.close_indexing()
        except SessionGone:
            return []
        except BaseException:
            with suppress(ChatmemError):  # the error on its way out says more
                self._settle_or_discard()
            raise
        self._settle_or_discard()
        return left

    def discard_if_unused(self) -> bool:
        """Remove the session this engine's command created when no turn of it was stored
        and it holds nothing else (`chat NAME`, then /quit with nothing said: it was listed
        by `sessions list` as an empty session nobody meant to keep). Whether it was removed;
        a session opened, not created, set up (`configured`) or holding anything (another
        process's turn, a fact /remember'd), stays. Only for a chat, whose session is made to
        talk in: a client that asks for a conversation by name keeps it (MCP)."""
        # Refused turns alone: `finish` removed it already, unsaid, as before.
        if not self.created or self._stored or self.configured or self._refused:
            return False
        try:
            # As this engine left it: one another process renamed or set up meanwhile stays.
            return self.store.sessions.discard_empty_session(self.session.id,
                                                             as_seen=self.session)
        except ChatmemError:  # deleted meanwhile, say: the line that met it said so
            return False

    def _settle_or_discard(self) -> None:
        self.settle()
        if self._refused and not self._stored and self.created:
            self.store.sessions.discard_empty_session(self.session.id)

    def _note_model(self) -> None:
        # The session records the provider, model and tokenizer its latest turn really used;
        # its owner's turn only: a grantee's model is his run's, and the owner's next run
        # resumes on the model the owner last chose, not on one a grantee's turn took.
        if self.settings_owner is not None:
            return
        used = (self.provider.name, self.provider.model, self.counter.key)
        if (self.session.provider, self.session.model, self.session.tokenizer) != used:
            self.session = self.store.sessions.update_session(self.session.id, provider=used[0],
                                                              model=used[1], tokenizer=used[2])
