"""What retention, a purge and the export archive need of the store (chatmem.privacy): the
stored text a purge finds and rewrites, and `PrivacyStore`, the repositories they read and
erase. The others are in chatmem.store.protocols; `Store` implements every one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from chatmem.store.protocols import ImageRepository, RetentionRepository, SessionStore
from chatmem.store.records import MessageRecord
from chatmem.store.redaction import Rewrite
from chatmem.store.redaction_plan import Redaction, RewritePlan


class RedactionRepository(Protocol):
    """The stored text a purge finds and rewrites (`store.redactions`)."""

    def profile_session_ids(self, user: str | None) -> list[int]: ...

    def others_profile_sessions(self, user: str | None) -> dict[int, str]: ...

    def user_facts_from(self, session_id: int) -> list[str]: ...

    def messages_containing(self, session_ids: Sequence[int], needles: Sequence[str], *,
                            beyond_ascii: bool = False) -> list[MessageRecord]: ...

    def rewrite_stored_text(self, session_ids: Sequence[int], user: str | None,
                            needles: Sequence[str], rewrite: Rewrite, *,
                            beyond_ascii: bool = False) -> Redaction: ...

    def plan_rewrite(self, session_ids: Sequence[int], user: str | None,
                     needles: Sequence[str], rewrite: Rewrite, *, beyond_ascii: bool = False,
                     without_fact: int | None = None,
                     emptied: Callable[[str], bool] | None = None) -> RewritePlan: ...

    def apply_rewrite(self, planned: RewritePlan) -> Redaction: ...


class PrivacyStore(SessionStore, Protocol):
    """What retention, a purge and the export archive read and erase."""

    def vacuum(self) -> None: ...

    @property
    def retention(self) -> RetentionRepository: ...

    @property
    def redactions(self) -> RedactionRepository: ...

    @property
    def images(self) -> ImageRepository: ...
