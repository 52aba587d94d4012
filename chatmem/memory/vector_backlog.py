"""The messages of a session that have no vector yet, embedded between turns.

A turn never waits for them: recall ranks the messages that have a vector by
meaning and words and the rest by words (chatmem.memory.retrieval), and a
build only reads vectors. After a turn commits, the engine resumes the
backlog: one background thread embeds it a small batch at a time, and the
engine stores the finished batches on its own write path (before the next
turn's build, after its commit, when it closes): SQLite connections stay on
the thread that opened them, and a build never writes. The next turn pauses
the thread (it stops after its batch, so the reply does not share the CPU);
a process that ends stops it the same way, stores what was done and says
what is left, and the next process resumes from the file. A backlog another
live process holds the lease of (a background `chatmem index`, see
chatmem.store.leases) is left to it: recall picks up its vectors as they land,
and the backlog goes on here once the lease is given back or has expired.

Replays, evaluations and what-ifs embed inline instead (`background=False`):
each committed message before the next build, so their results do not
depend on timing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from chatmem.errors import ChatmemError, ExtensionFailed
from chatmem.indexing_notices import Failure, IndexingEvent, IndexingNotice, VectorsResized
from chatmem.memory.vector_rows import embed_pending, known_vectors, resized, save_rows

if TYPE_CHECKING:
    from chatmem.embeddings import Embedder
    from chatmem.store import LeaseHolder, PendingText, VectorRow
    from chatmem.store.protocols import MemoryStore

BATCH = 8
"""Messages per background batch: a pause, or the end of a process, waits for one at most."""
READ = 4096
"""Texts read from the file per refill: the thread can only embed what it was handed."""


@dataclass(frozen=True)
class IndexingStatus:
    """Where one session's backlog stands, for the toolbar and the end of a process."""

    session_id: int
    model: str
    missing: int
    """Messages of the session without a vector for `model`."""
    running: bool
    error: Failure | None = None
    """Why the backlog stopped before its end, if it did."""
    embedded: int = 0
    """Messages this process has embedded for the session so far (stored or about to be)."""
    elsewhere: LeaseHolder | None = None
    """The process embedding the backlog instead of this one (it holds the lease)."""


class VectorBacklog:
    """One session's messages without a vector for one embedder."""

    def __init__(self, store: MemoryStore, session_id: int, embedder: Embedder, *,
                 background: bool = True) -> None:
        self.store, self.session_id, self.embedder = store, session_id, embedder
        self.background = background
        self._read_upto = 0
        """Every message up to this id was handed to the thread, embedded or found done."""
        self._read_size: int | None = 0
        """The embedder's size (`dimensions`) when those messages were found done; None if
        it changed meanwhile (a vector done in size 0, any, may be of another size)."""
        self._missing: int | None = None
        self._last_position = 0
        self._queue: list[PendingText] = []
        self._known: dict[str, bytes] = {}
        """Stored vectors of the queued texts, by digest; replaced, never changed, so the
        thread reads a batch's without a lock."""
        self._done: list[VectorRow] = []
        self._carried: dict[str, bytes] = {}
        """The last vector a thread computed: the next batch's first message needs it as its
        previous one, and it may be neither stored nor in `_known` yet, even when the thread
        that computed it has ended and a new one takes the next batch."""
        self._embedded = 0
        self._error: BaseException | None = None
        self._told_error = False
        self._told_resized = False
        self._elsewhere: LeaseHolder | None = None
        self._running = False
        self._stop = False
        self._busy = False
        self._took = False
        """The thread has taken a batch in this process (see `close`)."""
        self._thread: threading.Thread | None = None
        self._cond = threading.Condition()
        self._failed_in_a_row = 0
        self._commits_to_skip = 0

    @property
    def model(self) -> str:
        return self.embedder.key

    @property
    def dimensions(self) -> int:
        """The embedder's size now (0: not known yet): a vector of another is missing."""
        return self.embedder.dimensions

    # -- the engine's side (main thread) --------------------------------------------

    def after_commit(self) -> list[IndexingNotice | VectorsResized]:
        """Store what was done, then go on: inline, every new message now; in the
        background, the thread resumes. Returns a notice if the thread failed, and the
        first time, one if the embedder's vectors changed size (they are embedded again)."""
        said: list[IndexingNotice | VectorsResized] = [*self._resized()]
        if not self.background:
            self._finish_backing_off()
            return said
        notices = [*said, *self.collect()]
        if self._error is not None:
            return notices
        lease = self.store.leases.index_lease(self.session_id, self.model)
        self._elsewhere = None if lease is None else lease.holder
        if lease is not None:
            # Its holder embeds these messages (and this chat's new ones): embedding them
            # here too would do the work twice. Counted again when this process goes on.
            self._halt()
            notices += self.collect()
            self._missing = None
            return notices
        with self._cond:
            room = len(self._queue) < READ // 2
        start = self._read_upto
        pending = self._read(READ) if room else []
        # A first read from the start that found less than it may hold found all of the
        # backlog: its length is the count, and the file is not read twice.
        self._count_new(len(pending) if room and start == 0 and len(pending) < READ else None)
        known = known_vectors(self.store, self.model, pending,
                              self.dimensions) if pending else {}
        with self._cond:
            self._known = {**self._known, **known} if self._queue else known
            self._queue.extend(pending)
            self._running = True
            self._cond.notify_all()
            if self._thread is None and self._queue:
                self._thread = threading.Thread(target=self._work, daemon=True,
                                                name=f"chatmem-embed-{self.session_id}")
                self._thread.start()
        return notices

    def _resized(self) -> list[VectorsResized]:
        """Once per backlog (once the embedder's size is known): its vectors stored in
        another size, if any."""
        if self._told_resized or not self.dimensions:
            return []
        self._told_resized = True
        found = resized(self.store, self.embedder, self.session_id)
        return [found] if found is not None else []

    def _finish_backing_off(self) -> None:
        """`finish`; after it failed N times in a row, only at every 2^N-th commit: a
        replay or an eval whose embedder is down would otherwise wait on it at every turn
        (a refused connection is retried by the client, ~1.3 s a turn), and recall ranks
        the messages without a vector by words meanwhile. Once it works again, the
        messages missing are all embedded at once."""
        if self._commits_to_skip:
            self._commits_to_skip -= 1
            return
        try:
            self.finish()
        except ChatmemError:
            self._failed_in_a_row += 1
            self._commits_to_skip = 2 ** min(self._failed_in_a_row, 10) - 1
            raise
        self._failed_in_a_row = 0

    def pause(self) -> list[IndexingNotice]:
        """Before a turn: the thread stops after its batch; finished batches are stored."""
        with self._cond:
            self._running = False
        return self.collect()

    def collect(self) -> list[IndexingNotice]:
        """Store the finished batches; a failure of the thread becomes one notice."""
        with self._cond:
            rows, self._done = self._done, []
            error = self._error
        save_rows(self.store, self.model, rows)
        if self._missing is not None:
            self._missing = max(self._missing - len(rows), 0)
        if error is None or self._told_error:
            return []
        self._told_error = True
        return [IndexingNotice(IndexingEvent.STOPPED, describe(error))]

    def finish(self) -> None:
        """Embed everything still missing now, on this thread (tests, inline runs)."""
        self._halt()
        self.collect()
        pending = self._read(READ)
        while pending:
            try:
                known = known_vectors(self.store, self.model, pending, self.dimensions)
                save_rows(self.store, self.model,
                          embed_pending(self.embedder, pending, known=known))
            except BaseException:
                # Read again next time: the run retries these too, not only newer ones.
                self._read_upto = pending[0].message_id - 1
                raise
            self._embedded += len(pending)
            # A short read held all that was missing: another would find nothing, and an
            # inline run (a turn's two messages) would pay a second read every turn.
            pending = self._read(READ) if len(pending) == READ else []
        self._missing = 0 if self._error is None else self._missing

    def abandon(self) -> None:
        """Stop the thread after its batch; what it computed is dropped, not stored."""
        self._halt()
        with self._cond:
            self._done, self._carried = [], {}

    def close(self) -> IndexingStatus:
        """Stop the thread after its batch, store what it did, and say what is left:
        counted past the messages this process read and found done (all of the session's,
        usually), not over the whole session again (2 s of CPU at 100,000 messages). A
        vector another process dropped meanwhile (a purge) is found by the next process's
        first look, which reads the session from its start.

        A thread that has taken no batch yet takes its first before it stops: whether a
        process ending right after its turn (`ask`) embedded one or none was a race, and
        lost, a broken embedder (a plugin's) went unnamed at every such turn."""
        self._first_batch()
        self._halt()
        self.collect()
        checked = self._read_upto if self._read_size == self.dimensions else 0
        missing = self.store.vectors.count_without_vectors(
            self.model, self.session_id, dimensions=self.dimensions, after_id=checked)
        self._missing = missing
        lease = self.store.leases.index_lease(self.session_id, self.model) if missing else None
        return IndexingStatus(self.session_id, self.model, missing, running=False,
                              error=None if self._error is None else describe(self._error),
                              elsewhere=None if lease is None else lease.holder)

    def _first_batch(self) -> None:
        with self._cond:
            while (not self._took and self._running and self._queue
                   and self._thread is not None):
                self._cond.wait()

    def status(self) -> IndexingStatus:
        """What is left, without reading the file (the toolbar asks on every keystroke, and
        every second while idle): batches the thread finished count as done before the
        engine stores them."""
        with self._cond:
            running = self._running and (self._busy or bool(self._queue))
            error = None if self._error is None else describe(self._error)
            missing = max((self._missing or 0) - len(self._done), 0)
            embedded = self._embedded
        return IndexingStatus(self.session_id, self.model, missing, running=running,
                              error=error, embedded=embedded, elsewhere=self._elsewhere)

    def _count_new(self, whole: int | None = None) -> None:
        """Messages committed since the last look are missing too (the first look counts
        the session's whole backlog, once; `whole`: the backlog, as a read just found it)."""
        last = self.store.recall.last_position(self.session_id)
        if self._missing is None:
            self._missing = whole if whole is not None else (
                self.store.vectors.count_without_vectors(self.model, self.session_id,
                                                         dimensions=self.dimensions))
        else:
            self._missing += max(last - self._last_position, 0)
        self._last_position = last

    def _read(self, limit: int) -> list[PendingText]:
        """Up to `limit` messages without a vector past `_read_upto`, which moves past
        them: every message up to it has its vector, or is handed to the thread (whose
        failure, or a halt that drops what it was handed, moves it back). A read that
        found fewer checked the whole session: it moves past its last message."""
        if not self._read_upto:
            self._read_size = self.dimensions
        elif self._read_size != self.dimensions:
            self._read_size = None
        # Read before or with them: a message committed during the read (by another
        # process) is past it.
        pending, last = self.store.vectors.pending_and_last(
            self.model, self.session_id, limit=limit, after_id=self._read_upto,
            dimensions=self.dimensions)
        if pending:
            self._read_upto = pending[-1].message_id
        if len(pending) < limit:
            self._read_upto = max(self._read_upto, last)
        return pending

    def _halt(self) -> None:
        with self._cond:
            self._stop, self._running = True, False
            dropped, self._queue = self._queue, []
            self._cond.notify_all()
        with self._cond:
            thread = self._thread
        if thread is not None:
            thread.join()  # its batch at hand ends in `_done` (or in `_error`)
        with self._cond:
            self._stop = False
        # What was handed over but not embedded is read again from the file when needed;
        # otherwise reads go on after what was read (an inline run reads only new messages).
        if self._error is not None:
            self._read_upto = 0
        elif dropped:
            self._read_upto = dropped[0].message_id - 1

    # -- the thread ---------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._stop and self._queue and not self._running:
                    self._cond.wait()  # paused while a turn runs
                if self._stop or not self._queue:
                    self._thread = None  # done: the next commit starts another
                    return
                batch = self._queue[:BATCH]
                del self._queue[:BATCH]
                known = {**self._known, **self._carried}
                self._busy = self._took = True
                self._cond.notify_all()
            try:
                # The batch's first context vector needs the vector of the message before
                # it, which the previous batch computed and may not have stored yet.
                rows = embed_pending(self.embedder, batch, BATCH, known)
            except BaseException as e:  # any failure: stored, told once by `collect`
                with self._cond:
                    self._error, self._busy, self._running = e, False, False
                    self._queue.clear()
                    self._thread = None
                return
            with self._cond:
                self._done.extend(rows)
                self._carried = {r.digest: r.vector for r in rows[-1:] if r.digest}
                self._embedded += len(rows)
                self._busy = False


def describe(error: BaseException) -> Failure:
    failure = Failure.of(error, ChatmemError)
    if isinstance(error, ExtensionFailed):
        return replace(failure, culprit=(error.kind, error.name))
    return failure
