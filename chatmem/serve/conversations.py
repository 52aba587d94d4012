"""The conversations `chatmem serve` keeps between requests: the models and registries every
request shares, each conversation's one-turn-at-a-time lock, the sessions chosen for chats no
id names, and the turn last answered in each (the one a client may regenerate or edit)."""

from __future__ import annotations

import itertools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from chatmem.serve.answered_notes import ANSWERED_KEPT, AnsweredNotes

if TYPE_CHECKING:
    from chatmem.app import Workspace
    from chatmem.app.client_history import AskedWith
    from chatmem.app.model_pool import ModelPool
    from chatmem.config.settings import Settings
    from chatmem.engine import Engine, TurnResult
    from chatmem.errors import ExtensionFailed, ProviderError, StoreError
    from chatmem.notices import Notice
    from chatmem.serve.requests import TurnAsked
    from chatmem.store import Store

UPDATES_AFTER_ANSWER = 128
"""Memory updates that may run at once after their turns were answered, as many as requests
may run at once (connections.REQUESTS): past it a turn is answered after its update, holding
its request's place, so a stalled helper model under a flood of conversations no longer has
a thread waiting for each of any number of them."""


class ServedConversations:
    def __init__(self, settings: Settings, pool: ModelPool, strategy: str | None,
                 log: Callable[[str], None] | None = None) -> None:
        from chatmem.app.kept import KeptConversations
        from chatmem.plugins import load_registries
        from chatmem.serve.server_logs import upkeep_stopped_to

        self.settings = settings
        self.log = log
        """The server's own log (its owner's stderr): what a client is not told in full."""
        self.pool = pool
        self.strategy = strategy
        self.registries = load_registries()
        """One for every request's workspace: the strategies, providers and embedders."""
        self.kept = KeptConversations(upkeep_when_idle=True, upkeep_failed=upkeep_stopped_to(log))
        """The conversations requests have used, open between requests."""
        # Weak: a conversation's lock lives while a request holds or waits on it, so a
        # long-running server does not keep one for every conversation it ever served.
        self._turns: weakref.WeakValueDictionary[tuple[str, str], threading.Lock] = (
            weakref.WeakValueDictionary())
        self._turns_guard = threading.Lock()
        self._openings: set[tuple[str, str]] = set()
        """Sessions chosen for chats no id names that have no turn yet (location, name)."""
        self._openings_guard = threading.Lock()
        self._files: dict[str, tuple[int, int] | None] = {}
        """Which file each history path held at the last request (history_checked)."""
        self._answered = AnsweredNotes()
        """The stored turn (its row id) this server last answered in a conversation, what
        it keeps of the history its request sent, and when (`moment`): a client that sends
        that history again may edit it, one that sends less than the session holds then has
        left it (answered_notes: bounded by count and bytes)."""
        self.updates_after_answer = threading.BoundedSemaphore(UPDATES_AFTER_ANSWER)
        """Places for memory updates running after their turns were answered (Turn)."""
        self._moments = itertools.count()
        self._memory_failing: OrderedDict[tuple[str, str, str], None] = OrderedDict()
        """Conversations (location, name, the kind of notice) whose memory update failed
        and has not run since (at most ANSWERED_KEPT): logged once, not every turn."""
        self._windows: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()
        """Conversations no id names by the `window_key`s of the turn this server last
        answered in each and of the exchange before it (at most ANSWERED_KEPT): where a
        trimmed history may go on, or regenerate that turn."""

    def note_window(self, location: str, conversation: str, keys: tuple[str, ...]) -> None:
        """File a conversation no id names under the `window_key`s of the turn this server
        just answered in it and of the exchange before it: a client that trims its history
        finds it by the first when it goes on, by the second when it regenerates the turn
        (its window then ends one exchange before)."""
        with self._turns_guard:
            self._windows[(location, conversation)] = keys
            self._windows.move_to_end((location, conversation))
            while len(self._windows) > ANSWERED_KEPT:
                self._windows.popitem(last=False)

    def _filed_under(self, location: str, key: str) -> list[str]:
        with self._turns_guard:
            return [name for (at, name), filed in self._windows.items()
                    if at == location and key in filed]

    def moment(self) -> int:
        """A number later than every one given before: when a request came, or a turn was
        answered."""
        with self._turns_guard:
            return next(self._moments)

    def answered(self, location: str, conversation: str, *, before: int
                 ) -> tuple[int, AskedWith] | None:
        """The turn this server last answered in a conversation, and with what history;
        None when it was answered at `before` (a request's `moment`) or after: a request
        that came while it was under way was sent before its reply, and edits none of it
        (a bot that sends two members' messages at once)."""
        with self._turns_guard:
            found = self._answered.get((location, conversation))
        return None if found is None or found[2] >= before else found[:2]

    def answered_with(self, location: str, conversation: str | None, *, before: int
                      ) -> AskedWith | None:
        """The history the request this server last answered in `conversation` sent
        (`answered`), if any."""
        found = None if conversation is None else self.answered(location, conversation,
                                                               before=before)
        return None if found is None else found[1]

    def note_answered(self, location: str, conversation: str, turn_id: int,
                      asked_with: AskedWith) -> None:
        with self._turns_guard:
            self._answered.note((location, conversation),
                                (turn_id, asked_with, next(self._moments)))

    def note_stored(self, location: str, asked: TurnAsked, ws: Workspace,
                    engine: Engine[Store], result: TurnResult) -> str:
        """Note the turn `asked` just stored in `ws` (a regenerate or an edit of it finds it,
        as a trimmed window that goes on from it does), and say its id (CONVERSATION@TURN)."""
        from chatmem.app.client_history import AskedWith, ClientMessage
        from chatmem.app.sessions import recorded_turn
        from chatmem.app.trimmed_history import window_key

        record = result.record
        # The reply as the client shows it and sends it back: a Continue's whole, not only
        # what the model added (result.reply, which was its answer).
        reply = (asked.reply_begun or "") + result.reply
        # As `GET /v1/chatmem/turns/ID@N` finds it: a cancelled turn stored no history turn,
        # and is read back at the turn it was tried as.
        turn = (record.turn if record.history_turn is not None
                else recorded_turn(ws, engine.session, record.number).turn)
        if record.id is not None:
            self.note_answered(location, asked.conversation, record.id,
                               AskedWith.of(asked.prior, asked.text, reply))
        if asked.fingerprinted and record.history_turn is not None:
            # The exchange before this one too: a trimmed history that regenerates this
            # reply ends there.
            self.note_window(location, asked.conversation, (
                window_key(asked.system, [ClientMessage("user", asked.text),
                                          ClientMessage("assistant", reply)]),
                window_key(asked.system, asked.prior[-2:])))
        return f"{asked.conversation}@{turn}"

    def not_noted(self, conversation: str, error: BaseException, settings: Settings) -> None:
        """A turn stored and answered that `error` (a fault of chatmem's) kept out of this
        server's notes (`note_stored`), in its log."""
        if self.log is not None:
            self.log(self._unexpected(f"{conversation}: stored and answered, but not noted for"
                                      " a regenerate, an edit or a trimmed window", error,
                                      settings))

    def branched(self, conversation: str, kept_as: str) -> None:
        """Say in the server's log where a conversation whose client left its history is
        kept: its client hears only that it was (`X-Chatmem-Stored-As: branched`)."""
        if self.log is not None:
            self.log(f"{conversation}: the client's history left the stored one (an earlier"
                     f" message edited or asked again): {conversation} now holds the client's,"
                     f" and the one it held is kept as {kept_as}")

    def told(self, conversation: str, notices: list[Notice], settings: Settings) -> None:
        """What the history told while a turn ran (it waited for another process's write)
        in the server's log: an OpenAI client has no place for it, and no listener hears a
        server's workspace (its notices were kept, never read)."""
        from chatmem.render.client_notices import client_notice_text
        from chatmem.render.errors import Client

        if self.log is not None:
            for notice in notices:
                self.log(f"{conversation}: {client_notice_text(notice, Client.API, settings)}")

    def memory_told(self, location: str, conversation: str, notices: list[Notice],
                    settings: Settings) -> None:
        """A turn's memory update that failed (the helper model's 500 as it summarized or
        extracted facts, a plugin's bug) or was never asked (HelperTooSmall) in the server's
        log, once for each kind until that kind's update runs again: its client is answered
        all the same, and the server's owner, who alone can mend the helper, learnt nothing
        while memory stopped growing. A plugin strategy or embedder that made the turn wait
        (BuildSlow, UpdateSlow, EmbedderSlow, StateLarge) is logged as the engine says it, once
        per engine (once per process for a shared embedder): each request waited for a
        plugin's 3 s build, and the log said nothing."""
        from chatmem.notices import FactsFailed, HelperTooSmall, MemoryUpdateFailed, SummaryFailed
        from chatmem.render.client_notices import client_notice_text
        from chatmem.render.errors import Client
        from chatmem.session_notices import BuildSlow, EmbedderSlow, StateLarge, UpdateSlow

        kinds = (SummaryFailed, FactsFailed, MemoryUpdateFailed, HelperTooSmall)
        said = {kind: next((n for n in notices if isinstance(n, kind)), None) for kind in kinds}
        new: list[Notice] = []
        with self._turns_guard:
            for kind, notice in said.items():
                key = (location, conversation, kind.__name__)
                if notice is None:
                    self._memory_failing.pop(key, None)
                    continue
                if key not in self._memory_failing:
                    new.append(notice)
                self._memory_failing[key] = None
                self._memory_failing.move_to_end(key)
            while len(self._memory_failing) > ANSWERED_KEPT:
                self._memory_failing.popitem(last=False)
        new += [n for n in notices
                if isinstance(n, (BuildSlow, UpdateSlow, EmbedderSlow, StateLarge))]
        if self.log is not None:
            for failed in new:
                self.log(f"{conversation}: {client_notice_text(failed, Client.API, settings)}")

    def history_checked(self, settings: Settings) -> None:
        """A history file deleted or replaced under the running server, said once in its
        log: the next request went on, without a word, in a new empty file at that path
        (every conversation's memory begun again), or in the file put there."""
        import os

        from chatmem.config.location import LocationKind

        where = settings.location
        if self.log is None or where.kind is not LocationKind.SQLITE:
            return
        try:
            found = os.stat(where.target)
            now: tuple[int, int] | None = (found.st_dev, found.st_ino)
        except OSError:
            now = None
        with self._turns_guard:
            before = self._files.get(where.target, now)
            self._files[where.target] = now
        if before is not None and now != before:
            self.log(f"{where.shown} was deleted while serving: a new, empty history is "
                     "started at that path (every conversation's memory begins again)"
                     if now is None else
                     f"{where.shown} was replaced while serving (another file renamed over "
                     "it: a restore, an encrypt, a new key): requests go on in that one")

    def turn_failed(self, conversation: str, error: BaseException, settings: Settings) -> None:
        """A request's turn that `error` refused or failed, in the server's log when only its
        owner can mend it (the model, the history, a plugin, a fault of chatmem's); what the
        client alone may change (its request, a budget) is its client's to hear."""
        from chatmem.errors import ChatmemError, ExtensionFailed, ProviderError, StoreError

        if isinstance(error, ProviderError):
            self.model_failed(conversation, error)
        elif isinstance(error, StoreError) and error.only_owner_mends:
            self.history_failed(conversation, error)
        elif isinstance(error, ExtensionFailed):
            self.plugin_failed(conversation, error, settings)
        elif not isinstance(error, ChatmemError | KeyboardInterrupt):
            self.failed_unexpectedly(conversation, error, settings)

    def model_failed(self, conversation: str, error: ProviderError) -> None:
        """The model's failure in full in the server's log: its client is told only that
        it failed, and how (chatmem.render.errors), not the model's address or words."""
        from chatmem.render.errors import error_text

        if self.log is not None:
            self.log(f"{conversation}: the model failed: {error_text(error)}")

    def history_failed(self, conversation: str, error: StoreError) -> None:
        """A history the server cannot store in (its disk full, read-only, damaged) in the
        server's log, naming the file: its client is told only "the history", and the
        server's owner, who alone can make room, learnt nothing."""
        from chatmem.render.errors import error_text

        if self.log is not None:
            self.log(f"{conversation}: {error_text(error)}")

    def plugin_failed(self, conversation: str, error: ExtensionFailed,
                      settings: Settings) -> None:
        """A strategy (a provider, an embedder) whose code failed, in the server's log,
        naming the plugin that registered it and how to drop a state it fails on: its
        client is told, and the one who installed the plugin, who alone can mend it,
        learnt nothing while every request of the conversation failed. Masked as a
        plugin's words are: it may quote a key."""
        from chatmem.privacy.secrets import plugin_mask
        from chatmem.providers import secrets_of
        from chatmem.render.errors import error_text

        if self.log is not None:
            self.log(plugin_mask(secrets_of(settings)).mask(
                f"{conversation}: {error_text(error)}"))

    def reply_not_stored(self, conversation: str, error: BaseException,
                         settings: Settings) -> None:
        """A reply paid for and answered that `error` kept out of the history, in the
        server's log (the history's file named; a fault of chatmem's with where it was
        raised): the client has words the history lacks."""
        from chatmem.errors import StoreError
        from chatmem.render.errors import error_text

        if self.log is None:
            return
        said = f"{conversation}: the client has the reply all the same; "
        if isinstance(error, StoreError):
            self.log(f"{said}{error_text(error)}")
        else:
            self.log(self._unexpected(f"{said}chatmem could not store it", error, settings))

    def failed_unexpectedly(self, conversation: str, error: BaseException,
                            settings: Settings) -> None:
        """A failure chatmem does not know (a bug, a library's) in one line of the server's
        log, with where it was raised: its client is told only its kind, and without this
        its owner learnt nothing. Masked as a plugin's words are: it may quote a key."""
        if self.log is not None:
            self.log(self._unexpected(f"{conversation}: chatmem could not take this turn",
                                      error, settings))

    @staticmethod
    def _unexpected(said: str, error: BaseException, settings: Settings) -> str:
        """`said`, then `error` in one line with where it was raised, masked."""
        import traceback
        from pathlib import Path

        from chatmem.errors import one_line
        from chatmem.privacy.secrets import plugin_mask
        from chatmem.providers import secrets_of

        frames = traceback.extract_tb(error.__traceback__)
        at = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
        return plugin_mask(secrets_of(settings)).mask(f"{said}: {one_line(error)}{at}")

    def one_turn_at_a_time(self, location: str, conversation: str) -> threading.Lock:
        """The lock a conversation's turns take: requests of one conversation that differ in
        model, strategy or options have engines of their own, and would otherwise run at
        once (their turns interleaved, the number a response names another's)."""
        with self._turns_guard:
            lock = self._turns.get((location, conversation))
            if lock is None:
                lock = self._turns[(location, conversation)] = threading.Lock()
            return lock

    def session_of_shared_id(self, asked: TurnAsked, settings: Settings) -> str:
        """The session of a request whose id has the form `OWNER/NAME` (`asked.shared`):
        on PostgreSQL the one OWNER shares with the caller (`session_of_shared_id`), never
        one created under that form; in a file (one user), the session made of the id, as
        of any other. RequestError naming the field when no such share is seen."""
        from chatmem.app import Workspace
        from chatmem.app.client_history import session_of_shared_id
        from chatmem.config.location import LocationKind
        from chatmem.errors import RequestError

        shared = asked.shared
        assert shared is not None
        if settings.location.kind is LocationKind.SQLITE:
            return asked.conversation
        with Workspace(settings, models=self.pool, registries=self.registries) as ws:
            found = session_of_shared_id(ws, shared.address, asked.conversation)
        if found is None:
            raise RequestError(
                f"{shared.field}: no session {shared.address!r} is shared with you (OWNER/NAME"
                " names a session another role shares with you; an id without a '/' names"
                " one of your own)", shared.field)
        return found

    @contextmanager
    def session_of_opening(self, asked: TurnAsked,
                           settings: Settings) -> Iterator[tuple[str, Callable[[], None]]]:
        """The session of a chat no id names (`chat_openings.session_of_opening`), else of
        a trimmed history the end of one this server answered (`session_of_window`), kept
        from other requests until the turn is stored (the function given with its name is
        called then) or over: two chats that began alike at once get a session each. Not
        until memory's update after it is over: the chat's next message, sent once it is
        answered, would not find the session it goes on, and begin `NAME-2`."""
        from chatmem.app import Workspace
        from chatmem.app.chat_openings import session_of_opening
        from chatmem.app.trimmed_history import session_of_window, window_key

        where = str(settings.location)
        with Workspace(settings, models=self.pool, registries=self.registries) as ws:
            # Opened (a key derived) before, not while, other chats wait on the guard.
            ws.open_history()
            with self._openings_guard:
                taken = {n for at, n in self._openings if at == where}
                name, new = session_of_opening(
                    ws, asked.conversation, asked.prior, asked.text, taken=taken,
                    named_before=asked.named_before)
                if new and asked.prior:
                    # A client that trims its history sends another opening once its
                    # window slides: it goes on the session whose end its window is.
                    filed = self._filed_under(where, window_key(asked.system,
                                                                asked.prior[-2:]))
                    went_on = session_of_window(ws, [n for n in filed if n not in taken],
                                                asked.prior, asked.text)
                    if went_on is not None:
                        name, new = went_on, False
                if new:
                    self._openings.add((where, name))
        released: list[bool] = []

        def stored() -> None:
            # Stored, its history tells the chat that goes on from one that only began alike.
            if new and not released:
                released.append(True)
                with self._openings_guard:
                    self._openings.discard((where, name))

        try:
            yield name, stored
        finally:
            stored()
