"""How work grows with its input, for the tests that a pattern stays linear: the ratio of
the CPU time of 4× the input over 1× (linear 4, quadratic 16), each the best of a few runs,
so a busy machine (other processes) slows neither side, and one slow run is not counted."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

from chatmem.text_caches import forget_texts


def best_cpu_seconds(work: Callable[[], object], runs: int = 3,
                     enough: float = 0.0) -> float:
    """The least CPU time of `runs` runs of `work`; it stops at a run under `enough` (the
    least is then under it too: a caller asking only that loses nothing)."""
    best = float("inf")
    for _ in range(runs):
        # Each run works anew: what is kept by a text's digest (sensitive details, anchors)
        # made every run after the first a look-up, and a quadratic pattern passed.
        forget_texts()
        # A collection walks the whole process: in a worker that ran thousands of tests
        # first, one landing in the larger run was counted as the work's (CI: 9.6x at 4x).
        # So none runs meanwhile; none is run here either: one before each run was most of
        # a linear test's time in such a worker (tests/memory/test_time_words.py's: 1.9 s of
        # its 2.3 s of CPU after 300 other tests, 30 s after 1,300), and changed no verdict.
        gc.disable()
        try:
            started = time.process_time()
            work()
            best = min(best, time.process_time() - started)
        finally:
            gc.enable()
        if best < enough:
            break
    return best


def assert_linear(work: Callable[[str], object], text: Callable[[int], str], size: int,
                  label: str = "", attempts: int = 3) -> object:
    """`work(text(4 * size))` costs under 8× `work(text(size))`: linear, not quadratic.
    Returns what the last run of `work(text(4 * size))` gave, for a test to check it too.

    A verdict over the bound is measured again, both sides, up to `attempts` times: on a
    two-core machine whose other core is busy (the suite's other worker, another job), a
    core's sibling slowed every run of the larger side while the smaller had run alone (CI:
    8.3× at 4×, 4.0× on the same machine quiet). Work that is quadratic is 16× each time.
    """
    small_text, large_text = text(size), text(4 * size)
    measured: list[tuple[float, float]] = []
    given: list[object] = []
    for _ in range(attempts):
        small = best_cpu_seconds(lambda: work(small_text))
        # (a timer's tick: a few milliseconds of CPU is below what it resolves)
        bound = 8 * max(small, 5e-3)
        # The large side's best of three is under the bound as soon as one run is: the runs
        # after it (two thirds of a linear test's time) could not change the verdict.
        large = best_cpu_seconds(lambda: given.append(work(large_text)), enough=bound)
        measured.append((small, large))
        if large < bound:
            return given[-1]
    raise AssertionError((label, size, measured))
