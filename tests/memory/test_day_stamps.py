"""A message opening with the day it was said, written out whole, is a stamp of that day."""

from __future__ import annotations

from datetime import date

import pytest

from chatmem.memory.day_stamps import opens_with_day, stamped_day

MAY_8 = date(2023, 5, 8)


@pytest.mark.parametrize("text", [
    "(8 May 2023) Caroline: Hey Mel!", "2023-05-08 13:56 bob: hi", "May 8, 2023 — notes",
    "[Monday, 8th May 2023] alice: hi", "8 may 2023: x", "Mon May 8 2023 ok",
    "2023年5月8日 小明：你好", "（2023 年 5 月 8 号）小红：在吗", "(08 May 2023) x",
])
def test_a_whole_date_opening_a_message_is_its_stamp(text: str) -> None:
    assert stamped_day(text) == MAY_8
    assert opens_with_day(text, MAY_8)
    assert not opens_with_day(text, date(2023, 5, 9))


@pytest.mark.parametrize("text", [
    "(18 May 2023) x", "(8 May) Caroline: no year", "08/05/2023 reads two ways",
    "yesterday at noon", "5月8日 没有年份", "2023-05-080 x", "(31 February 2023) x",
    "I told you about it on 8 May 2023 at the office, the day we met", None,
])
def test_anything_else_is_no_stamp_of_the_day(text: str | None) -> None:
    assert not opens_with_day(text, MAY_8)
