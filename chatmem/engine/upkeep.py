"""An engine's memory upkeep: the strategy's derived memory (summaries, facts) brought up to
date after each turn and before an engine's first, the vector backlog after commit, and the
store's tidying between turns. A base of `chatmem.engine.turns.Engine`."""

from __future__ import annotations

import gc
from contextlib import suppress
from typing import TYPE_CHECKING

from chatmem.errors import (
    ChatmemError,
    ExtensionFailed,
    SessionGone,
    StateRefused,
    StrategyFailed,
)
from chatmem.lazy_patterns import compile_pending
from chatmem.memory.base import MemoryEnv, Opening
from chatmem.memory.guards import (
    PLUGIN_PREPARES,
    PLUGIN_UPDATES,
    prepare_guarded,
    update_guarded,
)
from chatmem.notices import HelperTooSmall, MemoryUpdateCancelled, MemoryUpdateFailed, Notice
from chatmem.providers.base import innermost
from chatmem.session_notices import (
    LARGE_STATE,
    SLOW_BUILD,
    SLOW_UPDATE,
    EmbedderSlow,
    StateLarge,
    UpdateSlow,
    Waited,
    built_slowly,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import tzinfo

    from chatmem.activity import Activity
    from chatmem.config.settings import Settings
    from chatmem.embeddings import Embedder
    from chatmem.history import StoredHistory
    from chatmem.memory.base import Strategy
    from chatmem.memory.indexing import Indexing
    from chatmem.memory.state import SessionState
    from chatmem.memory.vector_backlog import IndexingStatus
    from chatmem.providers.base import Provider
    from chatmem.store import SessionRecord
    from chatmem.store.protocols import TurnStore
    from chatmem.tokens import TokenCounter

FOLD_EVERY = 8
"""Turns between two folds of the store's log (`Engine.between_turns`): about 300 pages
written, well short of the 1,000 at which SQLite would fold it inside a turn's commit."""

COMPILE_BETWEEN_S = 0.1
"""CPU time `Engine.between_turns` may spend compiling the regular expressions no turn has used
yet (chatmem.lazy_patterns.compile_pending, the longest first): all of chatmem's, ~0.35-0.5 s
of CPU, over the first five upkeeps or so. A budget of 15 ms a call compiled one or two a
turn, and the second turn still waited ~35 ms for the five its Chinese input needed; one of
0.5 s did all in the first upkeep, which a client chaining its requests to `chatmem serve`
or `chatmem mcp` waited for (its second request 0.9 s, once a process; fin69)."""

_collected = False
"""Whether this process's first upkeep ran Python's full collection (`Engine.between_turns`)."""
_collect_due = False
"""A server's turn was taken since it started and the collection has not run yet: the next
`idle_upkeep` runs it."""


def _collect_once() -> None:
    global _collected
    if not _collected:
        _collected = True
        gc.collect()


def idle_upkeep(seconds: float) -> bool:
    """One step of the process's upkeep that `Engine.between_turns(idle=False)` left, for a
    server to run while no call is under way: the patterns no use has compiled yet, until
    `seconds` of this thread's CPU are spent (at least one pattern); once none is left and
    a turn has been taken, the process's full collection, once. Returns whether any is left
    (False: until the next turn, nothing is)."""
    if compile_pending(seconds):
        return True
    if _collect_due and not _collected:
        _collect_once()
    return False


class MemoryUpkeep:
    """The memory half of an engine (the attributes are set by `Engine.__init__`)."""

    store: TurnStore
    session: SessionRecord
    strategy: Strategy
    helper: Provider
    settings: Settings | None
    zone: tzinfo
    activity: Activity
    counter: TokenCounter
    state: SessionState
    indexing: Indexing
    background_indexing: bool
    interrupt_ends: bool
    settings_owner: str | None
    drops_own_state: bool = False
    """Whether this engine is over a session of the user's own, read only, whose states she
    may drop (`inspect --next`, which opens it with no settings, as a replay does its copy)."""
    notices: list[Notice]
    """What opening the session told, for the front end to say (`take_opening_notices`)."""
    _caught_up: bool
    _said_helper_too_small: bool
    _turns_unfolded: int

    if TYPE_CHECKING:
        @property
        def embedder(self) -> Embedder | None: ...

        @property
        def address(self) -> str: ...

        @property
        def system_prompt(self) -> str | None: ...

        def history(self, turns: int | None = None) -> StoredHistory: ...

        def follow_erasures(self) -> None: ...

    def state_held_in(self, strategy: str) -> str | None:
        """The session's name when it holds a state of `strategy` (a member's, in a
        combination) that this user may drop, for the way on from a plugin's new version
        failing on what its old one stored, every turn; else None."""
        if not self.drops_own_state and (self.settings is None
                                         or self.settings_owner is not None):
            # A replay's or an eval's scratch history is no session of the user's; another's
            # session only its owner drops the state of.
            return None
        try:
            held = bool(self.state.get(strategy))
        except ChatmemError:  # that state unreadable: the failure is the one to tell
            return None
        return self.address if held else None

    def slow_build(self, took: Mapping[str, float], *,
                   waited: Waited = Waited.TURN) -> list[Notice]:
        """A build in which plugins' strategies took SLOW_BUILD seconds or more (`took`: each
        one's own time by name, memory.guards.PLUGIN_BUILDS), said once per chat: a plugin taking
        5 s to build made each turn wait 5 s, and the turn's line showed the reply's time
        alone (0.0 s). Its own time: chatmem's members of its combination may take long (a
        local embedder's first load), which is no plugin's doing."""
        said: set[str] = self.state.caches.setdefault("slow_builds_said", set())
        slow = built_slowly(self.address, took, waited=waited, at_least=SLOW_BUILD)
        if not slow or said.issuperset(took):
            return []
        said.update(took)
        return list(slow)

    def slow_embedder(self) -> list[Notice]:
        """A plugin embedder whose calls since it was last asked took its SLOW_EMBED seconds
        (embeddings.guarded.GuardedEmbedder.took_slowly), said once."""
        from chatmem.embeddings.guarded import GuardedEmbedder

        embedder = self.embedder
        if not isinstance(embedder, GuardedEmbedder):
            return []
        took = embedder.took_slowly()
        if took is None:
            return []
        return [EmbedderSlow(self.address, embedder.registered_name, *took)]

    def _slow_updates(self) -> list[Notice]:
        """The plugin strategies whose update after this turn took SLOW_UPDATE seconds or more
        (memory.guards.PLUGIN_UPDATES), said once per chat: the next prompt waited for them
        with nothing shown (a plugin's update of 5 s looked like a chat that hung)."""
        took: dict[str, float] | None = self.state.caches.pop(PLUGIN_UPDATES, None)
        if not took:
            return []
        seconds = sum(took.values())
        said: set[str] = self.state.caches.setdefault("slow_updates_said", set())
        if seconds < SLOW_UPDATE or said.issuperset(took):
            return []
        said.update(took)
        return [UpdateSlow(self.address, "+".join(took), seconds)]

    def _large_states(self) -> list[Notice]:
        """Each plugin member's state over LARGE_STATE bytes, said once per chat (an
        engine's state object): a turn reads it whole, so a plugin keeping 60 MB made each
        turn take 10-15 s and nothing said why. chatmem's own keep theirs small."""
        said: set[str] = self.state.caches.setdefault("large_states_said", set())
        large: list[Notice] = []
        for member in self.strategy.members:
            if (member.name in said or type(member).__module__.startswith("chatmem.")
                    or not member.keeps_state):
                continue
            size = self.state.store.memory.strategy_state_size(self.session.id, member.name)
            if size > LARGE_STATE:
                said.add(member.name)
                large.append(StateLarge(self.address, member.name, size))
        return large

    def between_turns(self, *, idle: bool = True) -> None:
        """Upkeep nobody waits for, for a front end to call once a turn is shown and
        before it reads the next input: the word index merges a little, and every
        FOLD_EVERY turns the store's log is folded into the history file, so no turn's
        own commit has to do either.

        `idle`: the front end waits for its user now (a chat at its prompt): the process's
        upkeep runs here too. The patterns no turn has used yet are compiled, so that no
        later turn waits for that (the first with Chinese in it took ~100 ms more, for its
        time words'); and the process's first upkeep runs Python's full collection: what
        opening a history made (rows, vectors, patterns) had it run inside the second turn
        (75-85 ms CPU at 1,000 and 10,000 stored turns, a turn taking 10-20), after it, the
        next waits for a quarter as many again to outlive the younger passes. A server's
        client chaining its requests waits for whatever runs here (its requests 2-4 took
        0.1-0.3 s, 11-29 ms without): a server passes False and runs that upkeep while no
        call is under way (`idle_upkeep`, on chatmem.app.idle_upkeep's thread)."""
        global _collect_due
        if idle:
            compile_pending(COMPILE_BETWEEN_S)
        self._turns_unfolded += 1
        fold_log = self._turns_unfolded >= FOLD_EVERY
        if fold_log:
            self._turns_unfolded = 0
        self.store.tidy(fold_log=fold_log)
        if idle:
            _collect_once()
        else:
            _collect_due = True

    def close_indexing(self) -> list[IndexingStatus]:
        """Stop the backlog's threads after their batch and store what they embedded; the
        backlogs left unfinished (messages still without a vector, a failure, another
        process embedding them). What a purge meanwhile made stale is dropped first, not
        stored. A program that opened engines one after another and never stopped their
        threads piled them up, and no vector they computed was ever stored.

        Raises SessionGone when the session is gone (nothing of it is stored)."""
        try:
            self.follow_erasures()
        except SessionGone:
            self.indexing.abandon()
            raise
        return self.indexing.close()

    def prepare(self) -> None:
        """Let the strategy read ahead what its first build would (Strategy `prepare`: recall's
        stored vectors), and open the embedder, when a front end opens the engine before the
        first message (the REPL before its prompt): the first reply waits on less. Nothing
        sent or stored changes. A failure is left for the first build to meet and say;
        Ctrl-C ends the opening, with the state's caches as they were (empty)."""
        # A failure: the first turn's build meets it again, and says it where it belongs.
        with suppress(ChatmemError):
            prepare_guarded(self.strategy, Opening(self.history(), self.counter, self.state,
                                                   self.embedder))
        # A plugin's slow prepare delayed the first prompt unsaid: said with the opening's.
        self.notices += built_slowly(self.address, self.state.caches.pop(PLUGIN_PREPARES, None),
                                     waited=Waited.OPENING, at_least=SLOW_BUILD)

    @property
    def memory_behind(self) -> bool:
        """Whether the next turn first brings the strategy's derived memory up to date (a
        strategy switched to mid-chat, an imported history): what it has not made yet."""
        return (not self._caught_up and self.strategy.keeps_state
                and self.history().turn_count() > 0)

    def catch_up(self, *, backlog_after_turn: bool = False) -> list[Notice]:
        """Bring the strategy's state up to date before this engine's first turn.

        A strategy switched to mid-session, a fork, an imported history or a
        session written by another process may have turns its state does not
        cover yet; without this the first context would miss their summary or
        facts. The strategy works through them in bounded batches, one model
        call each, each shown by the engine's activity ("summarizing turns
        41–80 of 5,000"). A no-op when the state is current.

        `backlog_after_turn`: the vector backlog waits for the turn's own update, which
        follows at once (one embedding attempt a turn, as the backoff from a dead endpoint
        counts them).
        """
        if self._caught_up:
            return []
        self._caught_up = True
        try:
            if not self.history().turn_count():
                return []
            notices = self.update_memory(catch_up=True, backlog_after_turn=backlog_after_turn)
            if self.strategy.keeps_state:
                # Minutes of the helper model, maybe: a purge meanwhile left recall's kept
                # candidate rows (read before it, the turn having followed the erasures)
                # holding the erased text, which the build after this would send.
                self.follow_erasures()
            return notices
        except KeyboardInterrupt:
            self._caught_up = False  # (interrupt_ends) a server's kept engine tries again
            raise

    def update_memory(self, *, catch_up: bool = False, turns: int | None = None,
                      erasures: int | None = None,
                      backlog_after_turn: bool = False) -> list[Notice]:
        """`turns`: the history's turn count as a commit just left it; `erasures`: the
        session's erasures count that commit found unchanged under the write lock. Known,
        neither is read again (an older erasures count only makes the update's own check
        the more careful: SessionState.updating)."""
        if catch_up:
            # One task for the whole catch-up, the work between its model calls included.
            with self.activity.series():
                notices = self._update_strategy(catch_up)
        else:
            notices = self._update_strategy(catch_up, turns, erasures)
        # Not the embedder itself: opened here, it would load before the first build.
        words = self.strategy.recalls_words or self.strategy.needs_embedder
        if catch_up and (self.background_indexing or backlog_after_turn):
            # The backlog waits until the turn has committed; the words do not.
            return notices + (self.indexing.check_words() if words else [])
        if self.embedder is not None and (erasures is None or self.indexing.background):
            # The reply took a while: a purge meanwhile makes what the backlog holds stale.
            # Not after a commit that checked the count under its lock with the backlog
            # inline: that holds nothing computed before, what it embeds it reads now, and
            # the next turn's check follows a later erasure (one statement of each turn).
            self.follow_erasures()
        notices += self.indexing.after_commit(self.embedder, words)
        return notices + self.slow_embedder()

    def _update_strategy(self, catch_up: bool, turns: int | None = None,
                         erasures: int | None = None) -> list[Notice]:
        # The embedded model cannot summarize or extract: its summary or facts would be junk
        # that later contexts send as memory. Nothing is asked of it, and the user is told
        # once which model to name instead. Only a strategy that calls the helper has it
        # looked at: replay's helper is opened on first use, which a window never makes.
        helper = self.helper
        too_small = (helper is not None and self.strategy.calls_helper
                     and is_embedded_model(helper))
        env = MemoryEnv(self.history(turns), self.counter, self.state,
                        None if too_small else helper,
                        settings=self.settings, system=self.system_prompt,
                        embedder=self.embedder, activity=self.activity, zone=self.zone,
                        catch_up=catch_up)
        said: list[Notice] = []
        if too_small and not self._said_helper_too_small:
            self._said_helper_too_small = True
            # The model inside replay's and eval's wrappers: theirs is the transcript's model,
            # "local" when it names none.
            said.append(HelperTooSmall(self.strategy.name, innermost(helper).model))
        try:
            return said + update_guarded(self.strategy, env, erasures=erasures) + \
                self._large_states() + self._slow_updates()
        except SessionGone:
            # Not a failure to retry: there is no next turn. Said as a deletion while the
            # reply came is, by the name the user knows (the store knows only its id).
            raise SessionGone(self.address, "nothing was sent" if catch_up
                              else "the turn was deleted with it") from None
        except ChatmemError as e:
            # The turn stands; the strategy catches up on a later turn.
            culprit = (e.kind, e.name) if isinstance(e, ExtensionFailed) else None
            held = (self.state_held_in(e.name) if isinstance(e, StrategyFailed)
                    and not isinstance(e, StateRefused) else None)
            return [*said, MemoryUpdateFailed(str(e), culprit, held_in=held)]
        except KeyboardInterrupt:
            if self.interrupt_ends:
                raise
            # Derived state is written only after a helper call succeeds, so nothing
            # half-done is kept; the committed turn stands.
            return [*said, MemoryUpdateCancelled()]


def is_embedded_model(provider: Provider) -> bool:
    """The SmolLM2-135M shipped for trying chatmem: it answers, but cannot summarize.

    Replay, eval and what-ifs count the calls of the model they are given, and open it on
    first use: the model is the one inside those wrappers.
    """
    from chatmem.providers.local import SMOLLM2_FILE

    if provider.name != "local":
        return False  # every wrapper gives the name of what it wraps, unopened
    model = innermost(provider)
    return model.name == "local" and str(getattr(model, "model_path", "")).endswith(
        SMOLLM2_FILE)
