"""Whether a text says an expected string, as recall scoring reads it: whole words and
numbers, CJK anywhere, thousands and the Chinese comma as they are written."""

from __future__ import annotations

import pytest

from chatmem import fts
from chatmem.expected_text import compared, mentions


@pytest.mark.parametrize(("text", "expected", "said"), [
    ("Tomorrow", "Tom", False), ("with Tom.", "Tom", True), ("9500 yen", "950", False),
    ("$950.", "950", True), ("950.5", "950", False), ("19.5", "9.5", False),
    ("1,950", "950", False), ("ORD-77310", "ORD-7731", False),
    ("订单ＯＲＤ７７３１号", "ORD7731", True), ("航班是MU5412，12号出发", "MU5412", True),
    ("1,950 yen", "1", False), ("pay 950,5 pens", "950", True), ("3.14", "3", False),
    ("我们去杭州旅行", "杭州", True), ("Ann的猫", "ann", True), ("Zürich!", "zurich", True),
    ("Dr. Who", "dr.", True), ("a cat", "cat", True), ("scatter", "cat", False),
])
def test_a_mention_is_a_whole_word_or_number_and_cjk_is_found_anywhere(
        text: str, expected: str, said: bool) -> None:
    assert mentions(compared(text), compared(expected)) is said


@pytest.mark.parametrize(("text", "expected", "said"), [
    # A Chinese comma is a list's, never a number's thousands (it was folded to ",").
    ("航班MU5412，120人登机", "MU5412", True), ("我们订了房间305，306", "306", True),
    ("我们订了房间305，306", "305", True),
    # ",ddd" goes on a number only after its first 1-3 digits, not after a word or a
    # longer number; CJK before them has no word end, so 价格1,950 is one number.
    ("MU5412,120", "MU5412", True), ("MU5412,120", "120", True), ("20250,120", "120", True),
    ("价格1,950元", "950", False), ("价格1,950元", "1", False), ("1,950,000", "1,950", False),
    ("1,950,000", "000", False), ("1,950,000", "950,000", False), ("1,950,000", "1,950,000", True),
    # Zero decimals are the same number; others are not.
    ("The rent is 950.00", "950", True), ("950.0 yen", "950", True), ("950.05", "950", False),
    ("1,950.00", "950", False), ("950.00", "950.00", True),
])
def test_a_chinese_comma_and_a_number_after_a_word_are_no_thousands_and_zero_decimals_are_none(
        text: str, expected: str, said: bool) -> None:
    assert mentions(compared(text), compared(expected)) is said


@pytest.mark.parametrize(("text", "expected", "said"), [
    # After 1-2 digits starting a number a Chinese comma can only be thousands.
    ("价格１，９５０元", "1,950", True), ("共1，200人", "1,200", True),
    ("价格1，950元", "950", False), ("1，950", "950", False), ("12，500元", "12,500", True),
    ("1，950，000", "1,950,000", True), ("1，950，000", "950,000", False),
    # After a word, a longer number or three digits it parts a list.
    ("航班MU5412，120人", "120", True), ("房间305，306", "306", True),
    ("305，306", "305,306", False), ("1，2，3", "2", True), ("1，9500", "9500", True),
])
def test_a_chinese_comma_after_one_or_two_digits_is_a_numbers_thousands(
        text: str, expected: str, said: bool) -> None:
    assert mentions(compared(text), compared(expected)) is said


def test_the_chinese_comma_alone_keeps_its_form_in_the_compared_text() -> None:
    assert compared("ＭＵ５４１２，Ｚürich，１２０") == "mu5412，zurich，120"
    assert compared("共１，２００人，MU5412，120") == "共1,200人，mu5412，120"
    # What the index reads is unchanged: both commas part words alike.
    assert fts.index_terms("MU5412，120") == fts.index_terms("MU5412,120") == ["mu5412", "120"]


@pytest.mark.parametrize(("text", "expected", "said"), [
    # A space beside a CJK character is how it was typed, not a word's end: 12 楼 is 12楼.
    ("王丽的工位在 12 楼，靠窗。", "12楼", True), ("工位在12楼", "12 楼", True),
    ("生日是 2025 年 12 月 31 日。", "2025年12月31日", True),
    ("生日是2025年12月31日", "2025 年 12 月 31 日", True), ("在12　楼", "12楼", True),
    ("我叫王 丽", "王丽", True), ("买了 iPhone 15 手机", "iPhone 15手机", True),
    ("2025년 12월", "2025년12월", True), ("12 楼", "2楼", False),
    # Spaces between Latin words and between Hangul words still count.
    ("a cat", "acat", False), ("acat", "a cat", False), ("서울 여행", "서울여행", False),
])
def test_a_space_beside_a_cjk_character_is_none_when_compared(
        text: str, expected: str, said: bool) -> None:
    assert mentions(compared(text), compared(expected)) is said
