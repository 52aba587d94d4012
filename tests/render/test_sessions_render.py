"""How a length of time is said: exactly, in the largest unit that says it."""
import pytest

from chatmem.render.sessions import days_text


@pytest.mark.parametrize(("days", "said"), [
    (1, "1 day"),
    (2, "2 days"),
    (36 / 24, "1.5 days"),
    (30 / 24, "30 hours"),          # not "1.2 days"
    (90 / (24 * 60), "1.5 hours"),  # --older-than 90min is not "2 hours"
    (100 / (24 * 60), "100 minutes"),
    (2 / (24 * 60), "2 minutes"),
    (0.5, "12 hours"),
    (1 / 86400, "under a minute"),
    (1.3, "1.3 days"),          # --older-than 1.3d is not "1872 minutes"
    (2.6, "2.6 days"),
    (1000, "1,000 days"),
])
def test_a_length_of_time_is_said_exactly(days: float, said: str) -> None:
    assert days_text(days) == said


def test_a_length_no_unit_says_exactly_is_rounded_in_the_largest() -> None:
    assert days_text(1.2345) == "1.2 days"


@pytest.mark.parametrize(("days", "said"), [
    (12.1 / 24, "12 hours"),
    (90 / (24 * 60), "2 hours"),
    (30 / 24, "1.2 days"),
    (1.5 / (24 * 60), "2 minutes"),
])
def test_a_measured_length_is_rounded_in_the_largest_unit(days: float, said: str) -> None:
    # How long a session sat idle is measured to the second: '12 hours', not '726 minutes'.
    assert days_text(days, measured=True) == said
