"""The process's upkeep a server runs while no call is under way (chatmem.app.idle_upkeep):
the patterns no call has used yet, compiled once a call has ended and none has come since,
never while one runs, nor before the server's first (whose imports it slowed twofold)."""

from __future__ import annotations

import time

from waiting import wait_until

from chatmem.app.idle_upkeep import IdleUpkeep
from chatmem.lazy_patterns import lazy

LOOKED = 0.3
"""Seconds in which the thread, told it may, would have compiled a pattern (it does within
its quiet of 0.01 s): what it must not do is looked for this long."""


def pattern(tag: str) -> object:
    # Longer than chatmem's own: the first the thread compiles.
    return lazy("(?:" + "|".join(f"{tag}{i}号" for i in range(600)) + ")")


def compiled(made: object) -> bool:
    return getattr(made, "_compiled", None) is not None


def test_patterns_are_compiled_after_a_call_and_never_while_one_runs() -> None:
    first = pattern("首次之前")
    idle = IdleUpkeep(quiet=0.01)
    try:
        time.sleep(LOOKED)
        assert not compiled(first)  # no call yet: a fresh server's first is not slowed
        idle.begin()
        idle.end()
        wait_until(lambda: compiled(first), "compiled once the call ended")
        idle.begin()  # a call under way
        during = pattern("调用之中")
        time.sleep(LOOKED)
        assert not compiled(during)
        idle.begin()  # a second, ending first
        idle.end()
        time.sleep(LOOKED)
        assert not compiled(during)
        idle.end()
        wait_until(lambda: compiled(during), "compiled once every call ended")
    finally:
        idle.stop()
    after = pattern("停止之后")
    idle.begin()  # told after it stopped: nothing runs any more
    idle.end()
    time.sleep(LOOKED)
    assert not compiled(after)
