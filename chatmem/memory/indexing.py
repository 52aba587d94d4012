"""A session's indexing as an engine drives it: its word entries checked, and one vector
backlog (chatmem.memory.vector_backlog) per embedding model let go on between turns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatmem.errors import ChatmemError
from chatmem.indexing_notices import IndexingEvent, IndexingNotice, VectorsResized
from chatmem.memory.vector_backlog import IndexingStatus, VectorBacklog, describe

if TYPE_CHECKING:
    from chatmem.embeddings import Embedder
    from chatmem.store.protocols import MemoryStore


class Indexing:
    """The backlogs of one session, one per embedding model, as an engine drives them."""

    def __init__(self, store: MemoryStore, session_id: int, *,
                 background: bool = True) -> None:
        self.store, self.session_id, self.background = store, session_id, background
        self._backlogs: dict[str, VectorBacklog] = {}
        self._words_checked = 0
        """Every message up to this id had a word entry this role trusts, or was indexed."""

    def _backlog(self, embedder: Embedder) -> VectorBacklog:
        backlog = self._backlogs.get(embedder.key)
        if backlog is None:
            backlog = self._backlogs[embedder.key] = VectorBacklog(
                self.store, self.session_id, embedder, background=self.background)
        return backlog

    def after_commit(self, embedder: Embedder | None,
                     words: bool = False) -> list[IndexingNotice | VectorsResized]:
        """After a commit: the word entries checked (`words`: the strategy recalls by them,
        or embeds), and the new messages embedded (inline), or the backlog let go on."""
        if embedder is None and not words:
            return []
        # Words first: an entry another role deleted or rewrote comes back (p027), as a
        # vector does in the backlog. Recall by words alone (mode=bm25) opens no embedder,
        # and its entries stayed gone.
        notices = self.check_words()
        if notices or embedder is None:
            return list(notices)
        try:
            return self._backlog(embedder).after_commit()
        except ChatmemError as e:
            return [IndexingNotice(IndexingEvent.RETRYING, describe(e))]

    def check_words(self) -> list[IndexingNotice]:
        """Index again the messages since the last check whose word entry this role does not
        trust (p027), as its own: no model is called, so before an engine's first build too
        (which otherwise recalled without them), where the backlog waits for the commit."""
        try:
            self._words_checked = self.store.recall.index_untrusted_words(
                self.session_id, self._words_checked)
        except ChatmemError as e:
            return [IndexingNotice(IndexingEvent.RETRYING, describe(e))]
        return []

    def pause(self) -> list[IndexingNotice]:
        """Before a build: each thread stops after its batch; what it finished is stored."""
        notices: list[IndexingNotice] = []
        for backlog in self._backlogs.values():
            try:
                notices += backlog.pause()
            except ChatmemError as e:
                notices.append(IndexingNotice(IndexingEvent.NOT_STORED, describe(e)))
        return notices

    def finish(self, embedder: Embedder | None) -> None:
        """Embed every message still without a vector now, on this thread."""
        if embedder is not None:
            self._backlog(embedder).finish()

    def abandon(self) -> None:
        """Stop every thread after its batch and drop what it did unstored: the texts it
        embedded may have changed since (a purge). The backlogs are read anew."""
        for backlog in self._backlogs.values():
            backlog.abandon()
        self._backlogs.clear()
        self._words_checked = 0

    def close(self) -> list[IndexingStatus]:
        """Stop every thread after its batch and store what it did; what is left."""
        left = [backlog.close() for backlog in self._backlogs.values()]
        self._backlogs.clear()
        return [status for status in left if status.missing or status.error]

    def status(self, embedder: Embedder | None) -> IndexingStatus | None:
        """The backlog of `embedder`, without reading the file (for a toolbar)."""
        backlog = self._backlogs.get(embedder.key) if embedder is not None else None
        return backlog.status() if backlog is not None else None
