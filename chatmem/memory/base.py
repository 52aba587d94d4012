"""The memory core: what a strategy is given, and what it gives back.

A strategy is a pure decision: given a view of the history, its own derived
state, the new input, a budget and a token counter, it returns a `Context`
(chatmem.memory.context), an ordered list of `Part`s, each with the messages it
contributes, their token count and why it is sent (a value, chatmem.memory.reasons).
Same inputs, same context: that is what makes `inspect` and `replay` trustworthy.
The helpers every build shares are in chatmem.memory.assembly; how chatmem calls a
strategy's build and update, and checks what they return, is chatmem.memory.guards.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from chatmem.activity import QUIET, Activity
from chatmem.config.options import shown_value
from chatmem.errors import StrategyError
from chatmem.memory.context import Context, Message
from chatmem.memory.context import Part as Part  # strategies imported it from here
from chatmem.memory.history_view import HistoryView
from chatmem.memory.params import NoParams, Param, declared_params, format_params
from chatmem.notices import Notice
from chatmem.speakers import unlabelled
from chatmem.tokens import TokenCounter

if TYPE_CHECKING:
    from chatmem.config.settings import Settings
    from chatmem.embeddings import Embedder
    from chatmem.memory.state import SessionState
    from chatmem.memory.stored_search import StoredSearch
    from chatmem.providers.base import Provider


@dataclass
class ContextRequest:
    """Everything a strategy may look at to build a context."""

    history: HistoryView
    input: Message
    counter: TokenCounter
    attached: tuple[Message, ...] = ()
    """Files attached to this input, each one message quoted as data; sent before it."""
    system: str | None = None
    state: SessionState = field(kw_only=True)
    """The session's stored state: summaries, facts, recall's caches."""
    budget: int | None = None
    """The configured context budget, used when the strategy has none of its own."""
    embedder: Embedder | None = None
    """Turns text into vectors for recall by meaning; None: recall ranks by words."""
    cap: int | None = None
    """A combination's shared budget: members with a budget of their own stay within it."""
    secrets: Callable[[], Mapping[str, str]] = dict
    """The settings' credentials (Settings.credentials), masked with the environment's in
    what a build raises (a plugin's error may quote a key): worked out only then."""
    zone: tzinfo = UTC
    """The zone the user's days are read in (chatmem.timezones): the day a recalled message
    was said on, and the days an input names ("yesterday", "上周五")."""
    said_at: datetime | None = None
    """When the input is said (aware): its day is the "today" recall's day lines are counted
    from and the clock the times it names are read on (chatmem.memory.recall_days). A turn
    passes the store's clock, a replay the transcript's time, a probe or a transcript's
    input without one the newest stored message's (chatmem.engine.said): chatmem always
    sets it. None only in a request built by hand (tests): recall then reads the newest."""
    speaker: str | None = None
    """Who said the input in a group chat (a served message's `name`, a transcript's): its
    content opens with their label (chatmem.speakers.with_speaker), which `query` leaves
    out. None: nobody is named, and the input is searched as it is."""
    reply_begun: Message | None = None
    """A served client's "Continue": the reply so far, sent after the input for the model to
    go on with (chatmem.memory.context.with_reply_begun). Counted with the input
    (assembly.fixed_tokens): added after a build that filled the budget, it went over it."""

    def capped(self, cap: int | None) -> ContextRequest:
        """The same request for a member of a combination sharing `cap` tokens."""
        shared = dataclasses.replace(self, cap=cap)
        shared.__dict__["system_message"] = self.system_message  # counted once, not per member
        return shared

    @property
    def query(self) -> str:
        """What recall searches for: the input without its own speaker's label, or every
        message its speaker wrote would match a question they ask by that name."""
        return unlabelled(self.input.content, self.speaker)

    @cached_property
    def search(self) -> StoredSearch:
        """The session's word search and stored vectors over the turns `history` holds,
        read-only: what `retrieval` ranks by, for a plugin's own scoring (README, "Searching
        what is stored"). Its messages are stored ones, to send as they are."""
        from chatmem.memory.stored_search import StoredSearch

        return StoredSearch(self.history, self.state, self.counter, self.embedder)

    @cached_property
    def system_message(self) -> Message | None:
        """The system prompt as sent; counted once however many parts of a build ask."""
        if not self.system:
            return None
        return Message.counted("system", self.system, self.counter)


@runtime_checkable
class Strategy(Protocol):
    """Decides what one request sends, and keeps its own derived state."""

    @property
    def name(self) -> str: ...

    @property
    def params(self) -> Mapping[str, Any]: ...

    def build(self, request: ContextRequest) -> Context: ...

    def update(self, env: MemoryEnv) -> list[Notice]:
        """Bring derived state up to date after a committed turn; returns notices."""
        ...

    @property
    def needs_embedder(self) -> bool:
        """Whether builds use an embedder when one is configured."""
        ...

    @property
    def calls_helper(self) -> bool:
        """Whether updates ask the helper model to summarize or extract facts."""
        ...

    @property
    def keeps_state(self) -> bool:
        """Whether builds read derived state that turns build up (summaries, facts): a
        what-if must then rebuild it; otherwise the stored history is all a build needs."""
        ...

    @property
    def sends_facts(self) -> bool:
        """Whether builds send the stored facts, so `/remember` reaches the model."""
        ...

    @property
    def summarizes(self) -> bool:
        """Whether it keeps a running summary under its own name, which `/summary` shows."""
        ...

    @property
    def recalls_words(self) -> bool:
        """Whether builds recall stored messages by their words (the session's word index)."""
        ...

    @property
    def members(self) -> Sequence[BaseStrategy]:
        """The registered strategies it is made of: itself, or a combination's parts."""
        ...

    def describe_params(self, *, changed_only: bool = False) -> str: ...

    def changed_params(self) -> dict[str, Any]:
        """The parameters that differ from their defaults."""
        ...


@dataclass
class MemoryEnv:
    """What a strategy may use to update its derived state after a turn."""

    history: HistoryView
    counter: TokenCounter
    state: SessionState
    model: Provider | None = None
    """Provider for summaries and fact extraction; None when none can do them (the engine
    says why, once): strategies then skip those calls and store nothing."""
    settings: Settings | None = None
    """chatmem Settings, for options from the config (e.g. [summary] prompt, drift_guard)."""
    system: str | None = None
    """The session's system prompt, as the next request will send it."""
    embedder: Embedder | None = None
    """For recall: messages are embedded after the turn commits."""
    activity: Activity = QUIET
    """Where a model call says what it is doing (`with env.activity.doing(...)`)."""
    zone: tzinfo = UTC
    """The zone the user's days are read in, as `ContextRequest.zone` (the engine's: the
    `timezone` setting's, else the system's), on every path (`settings` is None in a
    replay, an eval and a what-if)."""
    catch_up: bool = False
    """Bring the state fully up to date in bounded batches (an imported or long-unseen
    history), each call shown by `activity`; otherwise one bounded step, as after a turn."""

    @cached_property
    def search(self) -> StoredSearch:
        """As `ContextRequest.search`, over the turns `history` holds."""
        from chatmem.memory.stored_search import StoredSearch

        return StoredSearch(self.history, self.state, self.counter, self.embedder)


@dataclass
class Opening:
    """What a strategy may look at to prepare, when a front end opens its engine ahead of the
    first message (`prepare`): the history as stored, its state, and the embedder."""

    history: HistoryView
    counter: TokenCounter
    state: SessionState
    embedder: Embedder | None = None


def catching_up(env: MemoryEnv, total: int) -> int | None:
    """The turns in all, for an activity step during a catch-up; None after a turn."""
    return total if env.catch_up else None


Options = TypeVar("Options")
"""A strategy's parameters: a frozen dataclass whose fields are declared with `param()`."""


class BaseStrategy(Generic[Options]):
    """Shared plumbing: parameter parsing, system and input parts, no derived state.

    A strategy declares its parameters once, as the dataclass `OPTIONS`; `PARAMS` (for
    help and parsing) is read from it, and `self.options` holds the parsed values typed.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    OPTIONS: ClassVar[type[Any]] = NoParams
    PARAMS: ClassVar[tuple[Param, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.PARAMS = declared_params(cls.OPTIONS)

    def __init__(self, **params: Any) -> None:
        self.params: Mapping[str, Any] = self.parse_params(params)
        self.options: Options = self.OPTIONS(**self.params)

    @classmethod
    def parse_params(cls, raw: Mapping[str, Any]) -> dict[str, Any]:
        known = {p.name: p for p in cls.PARAMS}
        for key in raw:
            if key not in known:
                valid = "valid: " + (", ".join(known) or "none")
                owner, sign, bare = key.rpartition(":") if ":" in key else key.rpartition(".")
                if sign and owner.strip() == cls.name and bare.strip() in known:
                    # `--param jiyi:k=2`: the strategy comes from -s, the parameter alone.
                    valid = f"name it alone: {bare.strip()}={raw[key]}"
                raise StrategyError(
                    f"unknown parameter {shown_value(key)} for strategy {cls.name!r} ({valid})"
                )
        return {
            name: p.parse(cls.name, raw[name]) if name in raw else p.default
            for name, p in known.items()
        }

    def build(self, request: ContextRequest) -> Context:
        raise NotImplementedError

    def update(self, env: MemoryEnv) -> list[Notice]:
        return []

    def budget(self, request: ContextRequest) -> int | None:
        return request.budget

    def prepare(self, opening: Opening) -> None:
        """Read ahead what the first build would (recall's stored vectors), when a front end
        opens the engine before the first message; optional (a strategy without it is
        called as it is). It must change nothing a build sends or stores: only caches on
        `opening.state`. Default: nothing."""

    @property
    def needs_embedder(self) -> bool:
        """Whether builds use an embedder when one is configured (the engine opens it lazily)."""
        return False

    # Capabilities: what the rest of chatmem may rely on, declared by each strategy class.
    keeps_state: ClassVar[bool] = False
    calls_helper: ClassVar[bool] = False
    sends_facts: ClassVar[bool] = False
    summarizes: ClassVar[bool] = False
    recalls_words: ClassVar[bool] = False
    in_default_eval: ClassVar[bool] = False
    """`chatmem eval` without --strategy compares it (one of each kind of memory)."""

    @property
    def members(self) -> tuple[BaseStrategy]:
        return (self,)

    def describe_params(self, *, changed_only: bool = False) -> str:
        """`k=3 max_tokens=600`, as a user would type the parameters.

        With `changed_only`, only those that differ from their defaults: the
        short form for the line printed after every turn.
        """
        return format_params(self.changed_params() if changed_only else self.params)

    def changed_params(self) -> dict[str, Any]:
        defaults = {p.name: p.default for p in self.PARAMS}
        return {k: v for k, v in self.params.items() if defaults.get(k) != v}
