"""A client's history is compared once a request, however often a served turn asks for its
digest (leaves_history, replaces_last_turn, AskedWith): counted, not timed."""

from __future__ import annotations

import threading

from chatmem.app.adopted_history import leaves_history
from chatmem.app.client_history import AskedWith, ClientMessage, history_digest


class Counted(str):
    """A message's text that counts how often it is compared (`comparable` splits it)."""

    splits = 0

    def split(self, *args: object, **kwargs: object) -> list[str]:  # type: ignore[override]
        Counted.splits += 1
        return super().split(*args, **kwargs)  # type: ignore[arg-type]


def _history(turns: int, tag: str) -> tuple[ClientMessage, ...]:
    return tuple(ClientMessage("user", Counted(f"第{n}句 {tag}  said   again")) for n in
                 range(2 * turns))


def test_a_requests_history_is_compared_once_for_all_its_digests() -> None:
    """Leftover: each of the four digests a resent history needed compared it anew, 110 ms
    of CPU a request at 1,000 turns (2,000 messages), 37 ms once."""
    earlier = _history(499, "旅行")
    before = AskedWith.of(earlier, "上一个")  # the previous request's, as serve keeps it
    prior = (*earlier, *_history(1, "旅行")[:2])
    Counted.splits = 0
    # As serve.turn runs them for one request that resends its whole history.
    assert not leaves_history(None, "旅行", prior, asked_with=before)  # type: ignore[arg-type]
    digest = history_digest(prior)  # replaces_last_turn's
    asked = AskedWith.of(prior, "下一个")
    assert Counted.splits == len(prior) == 1000
    # The same values as compared afresh: a list is not kept, nor is another thread's.
    assert asked.digest == digest == history_digest(list(prior))
    assert AskedWith.of(list(prior), "下一个") == asked
    assert history_digest(earlier) == before.digest != digest
    seen: list[str] = []
    thread = threading.Thread(target=lambda: seen.append(history_digest(prior)))
    thread.start()
    thread.join()
    assert seen == [digest]
