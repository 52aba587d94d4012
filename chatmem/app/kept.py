"""Conversations a server keeps open between requests.

A request that opened the history and the session anew paid, every time, what a chat pays
once: opening the file, the engine, and recall's first reads (every vector, the backlog's
first look, the token counts). A kept conversation is a workspace and an engine on a thread
of its own (a SQLite connection stays on the thread that opened it): its requests run there,
one at a time, as the turns of a chat do. The engine notices what other processes take out
of the session's memory (`Engine.follow_erasures`); a session deleted, renamed or
reconfigured meanwhile is opened anew, as a fresh request would.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext, suppress
from typing import TYPE_CHECKING, TypeVar

from chatmem.errors import ChatmemError, ConversationBusy, NotFound

if TYPE_CHECKING:
    from chatmem.app.idle_upkeep import IdleUpkeep
    from chatmem.app.workspace import Workspace
    from chatmem.engine import Engine
    from chatmem.store import Store

T = TypeVar("T")
Opened = tuple["Workspace", "Engine[Store]"]
Job = Callable[["Workspace", "Engine[Store]"], T]

KEPT = 8
"""Conversations kept open at most; the one used least recently is closed first. Each holds
its conversation's vectors (float32: about 46 MB at 10,000 turns of 384 dimensions; on SQLite
one copy for all the engines of a session: memory.recall_vectors) and, on SQLite, up to 32
MiB of the file's pages (store/sqlite_opening.CACHE_KIB) as they are read."""


class _Closed(Exception):
    """The conversation was closed (evicted, or the server stops) before the job got in."""


class KeptConversation:
    """One conversation's workspace and engine, opened on first use on a thread of its own."""

    def __init__(self, open_workspace: Callable[[], Workspace],
                 open_engine: Callable[[Workspace], Engine[Store]],
                 idle: IdleUpkeep | None = None) -> None:
        self._open_workspace, self._open_engine = open_workspace, open_engine
        self._idle = idle  # told of each job (the process's upkeep waits for none)
        self._thread = ThreadPoolExecutor(max_workers=1,
                                          thread_name_prefix="chatmem-conversation")
        self._lock = threading.Lock()
        self._closed = False
        self._closing: Future[None] | None = None
        """Its close, given its thread after the jobs already given (`close`)."""
        self._opened: Opened | None = None

    @property
    def is_open(self) -> bool:
        """Its workspace and engine are open (a failure, or not opened yet: not)."""
        return self._opened is not None

    def submit(self, job: Job[T]) -> Future[T]:
        with self._lock:
            if self._closed:
                raise _Closed
            return self._thread.submit(self._run, job)

    def close(self, *, wait: bool = True) -> None:
        """Close the engine and the workspace after the jobs already given, on its thread;
        `wait` False: return at once (another conversation's request evicts this one)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._closing = self._thread.submit(self._close)
        self._thread.shutdown(wait=wait)

    @property
    def closing(self) -> bool:
        """Closed without waiting, and its jobs or its close still run on its thread."""
        return self._closing is not None and not self._closing.done()

    def wait_closed(self) -> None:
        """Until its jobs given and its close have run (once `close` was called)."""
        self._thread.shutdown(wait=True)

    def _run(self, job: Job[T]) -> T:
        with nullcontext() if self._idle is None else self._idle.busy():
            workspace, engine = self._current()
            try:
                return job(workspace, engine)
            except BaseException:
                # What the failure left (a refused turn in a session just created, a model
                # that broke off) is settled as a request of its own would settle it; the
                # failure is what the caller hears, not a second one while closing.
                with suppress(ChatmemError):
                    self._close()
                raise

    def _current(self) -> Opened:
        if self._opened is not None and self._opened[0].store.moved():
            # The history file was deleted or replaced: read and write the one there now.
            self._close()
        if self._opened is not None:
            try:
                self._opened[1].follow_erasures()
                if self._opened[1].changed_elsewhere():
                    # Renamed, or reconfigured (/strategy, /system in a chat): the request
                    # goes where, and runs as, a request opening it afresh would.
                    self._close()
            except NotFound:
                self._close()  # deleted by another process: opened anew, as new
        if self._opened is None:
            workspace = self._open_workspace()
            try:
                self._opened = workspace, self._open_engine(workspace)
            except BaseException:
                workspace.close()
                raise
        return self._opened

    def _close(self) -> None:
        opened, self._opened = self._opened, None
        if opened is None:
            return
        workspace, engine = opened
        try:
            if workspace.store.moved():
                # Its history file left its path and the connection was let go: nothing of
                # the conversation can be stored any more.
                engine.indexing.abandon()
                return
            engine.finish()  # a session gone meanwhile: nothing of it is stored
        finally:
            workspace.close()


class Place:
    """A call's place in the line of one kept conversation (KeptConversations.line_up)."""

    def __init__(self, key: Hashable, owner: Hashable) -> None:
        self.key, self.owner = key, owner
        self.counted = True
        """It counts as waiting (towards `queued` and the rest): until its job starts."""
        self.idle: IdleUpkeep | None = None
        """Told the call came (`begin`), until it is told it ended (`leave`)."""


class KeptConversations:
    """The conversations a server keeps open, by key (the history, the conversation, and
    whatever else chooses its engine), at most `size` of them."""

    def __init__(self, size: int = KEPT, queued: int | None = None,
                 queued_by_owner: int | None = None,
                 queued_in_all: int | None = None, *, upkeep_when_idle: bool = False,
                 upkeep_failed: Callable[[Exception], None] | None = None) -> None:
        """`upkeep_when_idle`: the server's process runs its upkeep (chatmem.app.idle_upkeep)
        while none of these conversations has a job under way, until `close`; its engines'
        own upkeep between turns leaves it (`Engine.between_turns(idle=False)`).
        `upkeep_failed`: told of the error that stopped that upkeep."""
        from chatmem.app.idle_upkeep import IdleUpkeep

        self.size = size
        self.idle = IdleUpkeep(failed=upkeep_failed) if upkeep_when_idle else None
        self.queued = queued
        """Calls that may wait for one conversation's call under way; one more is refused
        (ConversationBusy). None: any number (a server whose calls each have a thread)."""
        self.queued_by_owner = queued_by_owner
        """The same, over all conversations of one owner (`run`'s `owner`: a history)."""
        self.queued_in_all = queued_in_all
        """The same, over all conversations together."""
        self._kept: OrderedDict[Hashable, KeptConversation] = OrderedDict()
        self._lock = threading.Lock()
        self._waiting: Counter[Hashable] = Counter()
        self._owners_waiting: Counter[Hashable] = Counter()
        self._lines: dict[Hashable, deque[Place]] = {}
        self._under_way: Counter[Hashable] = Counter()
        """The jobs running now, by key."""
        self._turns = threading.Condition(self._lock)
        """Told when a place leaves its line."""
        self._closing: list[KeptConversation] = []
        """Those closed without waiting (evicted, or failed to open) whose jobs may still run:
        a server stopping waits for them too (a memory update under way, say)."""

    def line_up(self, key: Hashable, owner: Hashable = None) -> Place:
        """A place in `key`'s line for a call as it comes, or ConversationBusy when the
        calls already waiting fill what `queued`, `queued_by_owner` (`owner`: the history
        the conversation is in) or `queued_in_all` allow. Calls taken in order (a server's
        event loop, as each request is read) run in that order: each call's worker thread
        raced the others' to the conversation, and a client's turns sent without waiting
        for each answer were stored out of order (u0 u1 u3 u2 u4). Its call gives the place
        to `run`, and `leave`s it whatever happens."""
        with self._lock:
            self._take_place(key, owner)
            place = Place(key, owner)
            self._lines.setdefault(key, deque()).append(place)
            if self.idle is not None:
                place.idle = self.idle
                self.idle.begin()  # from when it comes: the process's upkeep stops
        return place

    def leave(self, place: Place) -> None:
        """`place` no longer waits (its job started, or its call ended without one): its
        count freed, and the next place in its line may hand its job on. Idempotent."""
        with self._turns:
            self._uncount(place)
            self._out_of_line(place)
            idle, place.idle = place.idle, None
        if idle is not None:
            idle.end()

    def _handed_on(self, place: Place) -> None:
        """`place`'s job is given to its conversation's thread, which runs jobs in the
        order given: the next place may hand its on (this one counts until it starts)."""
        with self._turns:
            self._out_of_line(place)

    def _out_of_line(self, place: Place) -> None:
        line = self._lines.get(place.key)
        if line is not None and place in line:
            line.remove(place)
            if not line:
                del self._lines[place.key]
            self._turns.notify_all()

    def run(self, key: Hashable, open_workspace: Callable[[], Workspace],
            open_engine: Callable[[Workspace], Engine[Store]], job: Job[T],
            waiting: Callable[[], None] | None = None, owner: Hashable = None,
            place: Place | None = None) -> T:
        """Run `job` on the kept conversation `key` (when it is not open: `open_workspace`,
        then `open_engine` in it), after any job of that conversation running now; returns
        what it returns. `waiting` is called every WATCHED seconds until it is done (a
        server's call looks there whether its client has cancelled it). `owner` (the
        history the conversation is in) counts towards `queued_by_owner`. `place`: the one
        `line_up` gave the call as it came; its job is handed on after those of every place
        before it in the line (without one, a place is taken now)."""
        if place is None:
            if (self.queued is None and self.queued_by_owner is None
                    and self.queued_in_all is None):
                return self._run(key, open_workspace, open_engine, job, waiting)
            place = self.line_up(key, owner)

        def started(ws: Workspace, engine: Engine[Store]) -> T:
            with self._lock:
                self._uncount(place)
                self._under_way[key] += 1
            try:
                return job(ws, engine)
            finally:
                with self._lock:
                    self._under_way[key] -= 1
                    if not self._under_way[key]:
                        del self._under_way[key]

        try:
            self._wait_in_line(place, waiting)
            return self._run(key, open_workspace, open_engine, started, waiting,
                             submitted=lambda: self._handed_on(place))
        finally:
            self.leave(place)

    def after(self, key: Hashable, job: Job[object]) -> None:
        """Give `job` to the kept conversation `key`'s thread, after the jobs given it, and
        return at once: upkeep its caller is not to wait for (`Engine.between_turns`; an MCP
        client waited for the process's first, up to 0.5 s). Nothing when `key` is not kept
        (evicted, closed): a conversation opened anew starts without it. What it raises is
        what a failed job does: the conversation is opened anew by the next call."""
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None:
            with suppress(_Closed):
                kept.submit(job)

    def _wait_in_line(self, place: Place, waiting: Callable[[], None] | None) -> None:
        """Until `place` is first in its line (every call before it has handed on its job
        or ended), `waiting` called every WATCHED seconds meanwhile."""
        while True:
            with self._turns:
                if self._first(place) or self._turns.wait_for(lambda: self._first(place),
                                                              WATCHED):
                    return
            if waiting is not None:
                waiting()

    def _first(self, place: Place) -> bool:
        line = self._lines.get(place.key)
        return not line or line[0] is place

    def _uncount(self, place: Place) -> None:
        """`place` no longer counts as waiting (under the lock); once only."""
        if not place.counted:
            return
        place.counted = False
        for counter, counted in ((self._waiting, place.key), (self._owners_waiting, place.owner)):
            counter[counted] -= 1
            if not counter[counted]:
                del counter[counted]

    def _take_place(self, key: Hashable, owner: Hashable) -> None:
        """Count one more call waiting for `key`, or refuse it (under the lock)."""
        # Counted from when it comes, the first of calls sent at once has not started yet:
        # it is the one under way, not one waiting for it.
        behind = self._waiting[key] - (0 if self._under_way[key] else 1)
        if self.queued is not None and behind >= self.queued:
            # What to do is the point: a client that sends its turns without waiting and
            # sends a refused one again later has it stored after the ones sent after it.
            raise ConversationBusy(
                f"this conversation is busy: {behind} calls already wait for the one under "
                "way, and nothing of this call was done; send it again, with any sent after "
                f"it, once they are answered (to keep the order sent, have at most {self.queued}"
                " waiting)")
        if (self.queued_by_owner is not None
                and self._owners_waiting[owner] >= self.queued_by_owner):
            # Before the server's count: whoever fills their share hears it is theirs,
            # and the rest of the server's places stay for everyone else.
            raise ConversationBusy(
                f"your conversations are busy: {self._owners_waiting[owner]} calls already "
                "wait for the ones under way, and nothing of this call was done; "
                "send it again once they are answered")
        if self.queued_in_all is not None and self._waiting.total() >= self.queued_in_all:
            raise ConversationBusy(
                f"the server is busy: {self._waiting.total()} calls already wait for their "
                "conversations, and nothing of this call was done; "
                "send it again once they are answered")
        self._waiting[key] += 1
        self._owners_waiting[owner] += 1

    def _run(self, key: Hashable, open_workspace: Callable[[], Workspace],
             open_engine: Callable[[Workspace], Engine[Store]], job: Job[T],
             waiting: Callable[[], None] | None,
             submitted: Callable[[], None] | None = None) -> T:
        while True:
            evicted: list[KeptConversation] = []
            with self._lock:
                kept = (self._kept.pop(key, None)
                        or KeptConversation(open_workspace, open_engine, self.idle))
                self._kept[key] = kept
                while len(self._kept) > self.size:
                    evicted.append(self._kept.popitem(last=False)[1])
            for old in evicted:
                self._close_later(old)
            try:
                future = kept.submit(job)
            except _Closed:
                continue  # closed by another request between the two steps: open anew
            if submitted is not None:
                submitted()  # its conversation's thread runs the jobs in the order given
            try:
                return _result(future, waiting)
            except BaseException:
                if not kept.is_open:
                    self._forget(key, kept)  # a conversation that could not open keeps no place
                raise

    def _forget(self, key: Hashable, kept: KeptConversation) -> None:
        with self._lock:
            if self._kept.get(key) is kept:
                del self._kept[key]
        self._close_later(kept)

    def _close_later(self, kept: KeptConversation) -> None:
        """Close `kept` without waiting for its job under way, but where `close` finds it:
        a conversation evicted while its memory update ran was forgotten, and a server
        stopped then exited mid-update (the summary never stored)."""
        kept.close(wait=False)
        with self._lock:
            self._closing = [c for c in self._closing if c.closing]
            if kept.closing:
                self._closing.append(kept)

    def close(self) -> None:
        """Close every kept conversation (the server stops), after the jobs they were given,
        those of the ones closed earlier without waiting included."""
        with self._lock:
            kept, self._kept = list(self._kept.values()), OrderedDict()
            closing, self._closing = self._closing, []
        for conversation in kept:
            conversation.close()
        for conversation in closing:
            conversation.wait_closed()
        if self.idle is not None:
            self.idle.stop()

    def __len__(self) -> int:
        return len(self._kept)


WATCHED = 0.05
"""Seconds between two looks of a waiting caller (`KeptConversations.run`)."""


def _result(future: Future[T], waiting: Callable[[], None] | None) -> T:
    if waiting is None:
        return future.result()
    while True:
        try:
            return future.result(timeout=WATCHED)
        except TimeoutError:
            waiting()
