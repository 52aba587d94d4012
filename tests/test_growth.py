"""The linearity check itself: it refuses quadratic work however often it measures again,
and a slow first measurement (a busy core) does not fail linear work."""

from __future__ import annotations

import pytest
from growth import assert_linear


def _pairs(text: str) -> int:
    # Quadratic: every pair of characters.
    return sum(a == b for a in text for b in text)


def _count(text: str) -> int:
    return sum(ch == "a" for ch in text)


def test_quadratic_work_fails_every_attempt() -> None:
    with pytest.raises(AssertionError) as raised:
        assert_linear(_pairs, lambda n: "ab" * (n // 2), 600, "pairs")
    label, size, measured = raised.value.args[0]
    assert (label, size, len(measured)) == ("pairs", 600, 3)
    assert all(large >= 8 * max(small, 5e-3) for small, large in measured)


def test_linear_work_slowed_in_its_first_attempt_passes() -> None:
    calls: list[int] = []

    def slowed_once(text: str) -> int:
        calls.append(len(text))
        large_runs = [n for n in calls if n > 100_000]
        if 0 < len(large_runs) <= 3:  # the whole first attempt's larger side is slowed
            _pairs(text[:3000])
        return _count(text)

    assert assert_linear(slowed_once, lambda n: "a" * n, 50_000, "slowed") == 200_000
    assert sum(n > 100_000 for n in calls) > 1
