"""One request's turn of `chatmem serve`, run on a worker thread of its own; its reply
pieces reach the event loop through a queue, as OpenAI's stream of chunks when streamed."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from chatmem.errors import (
    ChatmemError,
    NotFound,
    TurnNotReplaceable,
)
from chatmem.serve import event_stream
from chatmem.serve.answers import (
    NOT_STORED,
    Unstored,
    answered_unstored,
    chunk_json,
    replied_usage,
)

if TYPE_CHECKING:
    from starlette.requests import Request

    from chatmem.app import Workspace
    from chatmem.app.kept import Place
    from chatmem.config.settings import Settings
    from chatmem.engine import Engine, TurnResult
    from chatmem.serve.conversations import ServedConversations
    from chatmem.serve.requests import TurnAsked
    from chatmem.store import Store

TURN_HEADER = "X-Chatmem-Turn"
STORED_AS_HEADER = "X-Chatmem-Stored-As"
"""How the request's turn was stored: `new-session` (the conversation held nothing before),
`next-turn`, `replaced-last-turn` (a regenerate or an edit of the last message),
`next-turn-last-kept` (it looked like an edit of the last message, but that exchange was
not shown to be this client's, or memory holds it: it stays, the request a turn of its own),
or `branched` (the client's history left the stored one earlier: an earlier message
edited or asked again; the id now names a new session holding the client's history, and
the one it named is kept under another name, which the server's log says)."""
DISCONNECT_POLL = 0.2
"""Seconds between looks at whether the client of a reply that is not streamed is there."""


class _Branched(Exception):
    """The client's history left the session's (`leaves_history`): the session was kept
    under another name (`kept_as`) and the conversation's engine must open its new one."""

    def __init__(self, kept_as: str, again: str) -> None:
        super().__init__(kept_as)
        self.kept_as, self.again = kept_as, again  # the input, as a purge left it there


class _Adopted(Exception):
    """The client's long history took the place of the session opened for it
    (`adopt_history`): the conversation's engine must open that one."""


class Turn:
    """One request's turn, run on a worker thread; its events (reply pieces, the end, or an
    error) reach the event loop through a queue of the loop's own, handed in by the loop
    itself: a request waiting for the model holds no thread of the loop's pool (waiting on
    a thread's queue there, 40 streams of a slow model kept /v1/models waiting 57 s)."""

    def __init__(self, proxy: ServedConversations, asked: TurnAsked, model_asked: str,
                 settings: Settings) -> None:
        from chatmem.providers import typed_secrets
        from chatmem.serve.requests import without_credentials_asked

        self.proxy = proxy
        # With the key the history opened with in this server (key_command's, kept by the
        # pool after the first request): a client's history holding it is stored masked.
        self.asked = without_credentials_asked(asked, typed_secrets(
            settings, proxy.pool.history_key(settings.location)))
        self.settings = settings
        self.model_asked = model_asked
        self.events: asyncio.Queue[object] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.gone = threading.Event()
        """The client went away: the reply is cancelled, whether or not the model sends."""
        self.result: TurnResult | None = None
        """The stored turn the client is answered with, set as it is answered (`_answer`)."""
        self.turn_id = ""
        self.stored_as = "next-turn"
        self.branched = False
        """The client's history left the stored one: this turn is its new session's."""
        self._again: str | None = None
        self.adopted = False
        """The client's history took the place of the session opened for it: this turn is
        the first of that one."""
        self.completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        self.came = proxy.moment()
        """When the request came: a turn answered since is none its client had seen."""
        self._said: list[str] = []
        self._place: Place | None = None
        """Its place in its conversation's line, taken as the request was read (`start`)."""
        self._noted = False
        """The stored turn was noted (`stored`), whether or not its client was answered."""
        self._update_place = False
        """It holds one of the server's places for an update after its answer."""
        self._opening_stored: Callable[[], None] = lambda: None
        """Called once the turn is stored (ServedConversations.session_of_opening)."""
        self._opening: str | None = None
        """The name a chat no id names gets from its opening, its session's or not."""
        self.unstored: str | None = None
        """The reply the model completed (paid for), until the engine returns it stored: a
        failure meanwhile (the history's disk full) is answered with it (Unstored)."""
        self._replied: Engine[Store] | None = None  # its engine, which says its usage

    def start(self) -> None:
        """Start the turn's thread (on the event loop: its events are put on this loop).
        A request naming its conversation takes its place in that conversation's line here,
        as it was read: each request's thread raced the others' to the conversation, and a
        bot that sent a group's messages 5 ms apart on connections of their own had them
        stored out of order (u0 u2 u3 u4 u1). A chat no id names finds its session on the
        thread, and is not lined up."""
        self._loop = asyncio.get_running_loop()
        if not self.asked.fingerprinted:
            self._place = self.proxy.kept.line_up(
                (str(self.settings.location), self.asked.conversation))
        threading.Thread(target=self._run, daemon=True, name="chatmem-turn").start()

    async def next_event(self) -> object:
        # Cancelled when the client goes away: the generator's `finally` runs at once.
        return await self.events.get()

    def _put(self, event: object) -> None:
        """Hand `event` to the event loop from the turn's thread."""
        assert self._loop is not None
        with suppress(RuntimeError):  # the loop has closed (the server stopped): none waits
            self._loop.call_soon_threadsafe(self.events.put_nowait, event)

    async def watch(self, request: Request) -> None:
        """Until cancelled: mark the turn `gone` once the client has disconnected."""
        import anyio

        while not await request.is_disconnected():
            await anyio.sleep(DISCONNECT_POLL)
        self.gone.set()

    def headers(self) -> dict[str, str]:
        from urllib.parse import quote

        # A reply not stored has no turn to name.
        turn = {} if self.stored_as == NOT_STORED else {
            TURN_HEADER: quote(self.turn_id, safe="@")}
        return {**turn, "X-Chatmem-Conversation": quote(self.asked.conversation),
                STORED_AS_HEADER: self.stored_as}

    def _run(self) -> None:
        try:
            self._run_turn()
        finally:
            if self._place is not None:
                self.proxy.kept.leave(self._place)  # its job handed on, or none will be
            if self._update_place:
                self.proxy.updates_after_answer.release()

    def _run_turn(self) -> None:
        try:
            if self.asked.fingerprinted:
                with self.proxy.session_of_opening(self.asked, self.settings) as opening:
                    self._opening = self.asked.conversation
                    self.asked = replace(self.asked, conversation=opening[0])
                    self._opening_stored = opening[1]
                    self._take_turn()
            else:
                if self.asked.shared is not None:
                    self.asked = replace(self.asked, conversation=self.proxy.session_of_shared_id(
                        self.asked, self.settings))
                self._take_turn()
        except BaseException as e:  # every failure reaches the client, as OpenAI words one
            if self.result is not None:
                # Answered: what failed is memory's update after the turn (its session
                # deleted meanwhile), the turn stands; only a fault of chatmem's is logged.
                if not isinstance(e, ChatmemError | KeyboardInterrupt):
                    self.proxy.failed_unexpectedly(self.asked.conversation, e, self.settings)
                return
            if self.unstored is not None and answered_unstored(e):
                # Paid for: answered, not refused for a retry that would pay again.
                self.stored_as = NOT_STORED
                self.proxy.reply_not_stored(self.asked.conversation, e, self.settings)
                self._put(Unstored(self.unstored, e, replied_usage(self._replied, self.unstored)))
                return
            self.proxy.turn_failed(self.asked.conversation, e, self.settings)
            self._put(e)

    def _answer(self, result: TurnResult) -> None:
        """Answer the client with `result`, stored: its response ends now, whatever memory's
        update after the turn still does (the conversation's next request waits for that)."""
        if self.result is None:
            self._opening_stored()
            self.result = result
            self._put(event_stream.DONE)

    def _take_turn(self) -> None:
        from functools import partial

        from chatmem.app import Workspace
        from chatmem.app.adopted_history import (
            adopt_history,
            branch_session,
            earlier_input_kept,
            input_kept,
            leaves_history,
        )
        from chatmem.app.chat_openings import branched_from
        from chatmem.app.client_history import Replacing, replaces_last_turn
        from chatmem.app.conversations import apply_retention, use_options
        from chatmem.app.sessions import has_messages, last_completed_turn_id, turn_count
        from chatmem.engine.resend import resend_last
        from chatmem.serve.turn_opening import opened_engine, request_settings
        from chatmem.store.records import TurnStatus

        asked = self.asked
        settings = request_settings(self.settings, asked)
        proxy = self.proxy
        where = str(self.settings.location)
        opened: list[Workspace] = []
        created_here: list[bool] = []

        def open_engine(ws: Workspace) -> Engine[Store]:
            opened.append(ws)  # opening applies retention (start_conversation)
            engine = opened_engine(ws, asked, settings, server_strategy=proxy.strategy)
            # Only a session this request created may be replaced by its history's copy
            # (adopt_history): one that was there holds what a copy would not carry.
            created_here.append(engine.created)
            return engine

        def stored(ws: Workspace, engine: Engine[Store], result: TurnResult) -> None:
            """The turn is stored: its client is answered, before memory's update."""
            self.unstored = None
            self._noted = True
            try:
                self.turn_id = proxy.note_stored(where, asked, ws, engine, result)
            except Exception as e:
                # Stored and paid for: a 500 had the SDKs ask, pay and store it twice more,
                # and the client never had the reply; only this server's notes are missing.
                proxy.not_noted(asked.conversation, e, self.settings)
            if self.proxy.updates_after_answer.acquire(blocking=False):
                self._update_place = True
                self._answer(result)
            # Else every place for an update after its answer is taken: this turn is
            # answered after its own update (`take`), as its request's place is held.

        def take(ws: Workspace, engine: Engine[Store]) -> None:
            if not opened:
                # Once per server: a conversation kept open tries again until it ran.
                apply_retention(ws, in_use=engine.session.id)
            use_options(ws, engine, settings)  # seed, temperature...: this request's alone
            # The request's system messages are its own instructions, never the session's:
            # one without any runs with the configured prompt, not an earlier request's (a
            # RAG front end's documents) nor one stored by another front end. Set for each
            # request, not in the key: a front end that sends new documents every time
            # reopened the conversation every time, and pushed others out.
            engine.use_system((settings.system if asked.system is None else asked.system)
                              or None)
            with proxy.one_turn_at_a_time(str(self.settings.location), asked.conversation):
                engine.settle()  # a new session exists before the client's history goes in
                done = last_completed_turn_id(ws, engine.session)
                answered = proxy.answered(where, asked.conversation, before=self.came)
                asked_before = answered[1] if answered and answered[0] == done else None
                if asked.one_chat and asked.shared is None and leaves_history(
                        ws, asked.conversation, asked.prior, asked_with=asked_before):
                    # An edit of an earlier message: the client's history wins, in a
                    # session of its own (memory built on what it left is not its).
                    kept = branch_session(ws, asked.conversation, asked.prior)
                    raise _Branched(kept, earlier_input_kept(ws, kept, asked.prior, asked.text,
                                                             asked_with=asked_before))
                fresh = self.adopted or not has_messages(ws, engine.session)
                # A chat that left one begun alike (an edit) keeps what a purge erased there.
                left_name, left = (branched_from(ws, self._opening, asked.prior,
                                                 named_before=asked.named_before)
                                   if fresh and self._opening is not None else (None, []))
                if adopt_history(ws, asked.conversation, asked.prior, branched=left,
                                 opened=created_here[-1:] == [True]):
                    raise _Adopted
                if not asked.model:
                    # OpenAI's `model` names the model that answered: with none named, the
                    # session's own or the server's (its @STRATEGY kept after it).
                    self.model_asked = f"{engine.provider.model}{self.model_asked}"
                # The conversation's turn this one takes (a regenerate: the one it replaces)
                # unless another process writing this very conversation commits first; the
                # stream's last piece says the real one. Not the request's number: failed,
                # cancelled and replaced requests are numbered too.
                held = turn_count(ws, engine.session)
                self.turn_id = f"{asked.conversation}@{held + 1}"
                result = None
                replacing = replaces_last_turn(ws, asked.conversation, asked.prior,
                                               asked.text, asked_with=asked_before)
                self.stored_as = ("branched" if self.branched else "new-session" if fresh
                                  else "next-turn-last-kept"
                                  if replacing is Replacing.UNPROVEN else "next-turn")
                on_stored = partial(stored, ws, engine)
                # What this server answered there tells an edit from a regenerate.
                again = self._again or earlier_input_kept(
                    ws, asked.conversation, asked.prior, asked.text, left,
                    asked_with=proxy.answered_with(where, left_name, before=self.came))
                if replacing is Replacing.YES:
                    self.turn_id = f"{asked.conversation}@{held}"
                    self.stored_as = "replaced-last-turn"
                    # Not a turn it may replace (a summary's, or imported without one): one of
                    # its own, that exchange kept; as stored either way (a purge's erasures).
                    again = input_kept(ws, asked.conversation, asked.text, asked_before)
                    with suppress(TurnNotReplaceable, NotFound):
                        result = resend_last(engine, again, on_delta=self._delta,
                                             on_reply_end=partial(self._reply_end, engine),
                                             expected=done, cancel=self.gone,
                                             speaker=asked.speaker, on_stored=on_stored,
                                             on_answering=self._answering,
                                             reply_begun=asked.reply_begun)
                    if result is None:
                        self.turn_id = f"{asked.conversation}@{held + 1}"
                        self.stored_as = "next-turn-last-kept"
                if result is None:
                    result = engine.run_turn(again, on_delta=self._delta,
                                             on_reply_end=partial(self._reply_end, engine),
                                             cancel=self.gone, speaker=asked.speaker,
                                             on_stored=on_stored,
                                             on_answering=self._answering,
                                             reply_begun=asked.reply_begun)
                if not self._noted:
                    stored(ws, engine, result)  # not ok (cancelled): no update followed
                if result.status == TurnStatus.CANCELLED and proxy.log is not None:
                    # Else the one running the server never learns why a turn is missing.
                    proxy.log(f"{self.turn_id}: the client hung up before the reply was whole:"
                              " stored as cancelled, kept out of memory")
                self._answer(result)  # if no place was free for an update after its answer
                if result.status == TurnStatus.OK:  # else no update ran
                    proxy.memory_told(where, asked.conversation, result.notices, self.settings)
                # Held until here, memory's update included: the conversation's next request
                # (another model's or strategy's engine too) is built on what it made.
            engine.between_turns(idle=False)  # the process's upkeep: kept.idle's thread
            proxy.told(asked.conversation, ws.take_notices(), self.settings)

        # Whatever chooses the engine is in the key: a request that differs gets its own.
        # The model the request names, not the settings' (the config's when it names none):
        # one naming none runs on the session's own, one naming the config's on that one.
        key = (self.settings.location, asked.conversation, asked.strategy,
               settings.model if asked.model else None)
        opening = partial(Workspace, self.settings, models=proxy.pool,
                          registries=proxy.registries)
        try:
            proxy.kept.run(key, opening, open_engine, take, place=self._place)
        except _Adopted:
            # Its engine was closed with the failed job (its session is gone): this opens
            # the one holding the client's history.
            self.adopted = True
            proxy.kept.run(key, opening, open_engine, take)
        except _Branched as branched:
            # Its engine was closed with the failed job: this opens the new session's.
            proxy.branched(asked.conversation, branched.kept_as)
            self.branched, self._again = True, branched.again
            proxy.kept.run(key, opening, open_engine, take)

    def _delta(self, text: str) -> None:
        if self.gone.is_set():
            raise KeyboardInterrupt  # the engine stores the turn as cancelled
        self._said.append(text)
        self._put(("delta", text))

    def _answering(self) -> None:
        self._put(event_stream.ANSWERING)

    def _reply_end(self, engine: Engine[Store]) -> None:
        """The model's reply is complete (paid for), before the engine stores it."""
        self.unstored = "".join(self._said)
        self._replied = engine

    def sse(self, first: object) -> AsyncIterator[str]:
        """The reply as OpenAI's stream of chunks (serve.event_stream)."""
        return event_stream.sse(self, first)

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return chunk_json(self.completion_id, self.model_asked, delta, finish,
                          with_usage=self.asked.include_usage)
