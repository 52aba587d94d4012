"""How work grows with its input, for the tests that a pattern stays linear: the ratio of
the CPU time of 4× the input over 1× (linear 4, quadratic 16), each the best of a few runs,
so a busy machine (other processes) slows neither side, and one slow run is not counted."""

from __future__ import annotations

import time
from collections.abc import Callable

from chatmem.text_caches import forget_texts


def best_cpu_seconds(work: Callable[[], object], runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        # Each run works anew: what is kept by a text's digest (sensitive details, anchors)
        # made every run after the first a look-up, and a quadratic pattern passed.
        forget_texts()
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return best


def assert_linear(work: Callable[[str], object], text: Callable[[int], str], size: int,
                  label: str = "") -> None:
    """`work(text(4 * size))` costs under 8× `work(text(size))`: linear, not quadratic."""
    small_text, large_text = text(size), text(4 * size)
    small = best_cpu_seconds(lambda: work(small_text))
    large = best_cpu_seconds(lambda: work(large_text))
    # (a timer's tick: a few milliseconds of CPU is below what it resolves)
    assert large < 8 * max(small, 5e-3), (label, size, small, large)
