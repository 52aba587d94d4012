"""The nearest known name to one typed wrong, and names that read alike."""

from __future__ import annotations

from chatmem.names import did_you_mean, folded_name, nearest


def test_traditional_and_simplified_names_read_alike() -> None:
    assert folded_name("雜記") == folded_name("杂记")
    assert folded_name("ＴＲＩＰ") == folded_name("trip")
    # 於 is written in simplified text too (a surname): not taken for 于.
    assert folded_name("於梅") != folded_name("于梅")


def test_the_nearest_name_is_the_one_read_alike_before_one_a_character_off() -> None:
    assert nearest("周記", ["周记", "trip"]) == "周记"
    # 杂记 is one character off 周记, but it is 雜記 written in simplified characters.
    assert nearest("杂记", ["周记", "雜記"]) == "雜記"
    assert nearest("雜記", ["杂记"]) == "杂记"


def test_several_names_read_alike_are_all_offered() -> None:
    # With 杂记 and 雜記 both stored, 杂記 (half of each) was offered neither.
    assert did_you_mean("杂記", ["雜記", "杂记", "trip"]) == "; did you mean '杂记' or '雜記'?"
    assert did_you_mean("杂記", ["杂记", "trip"]) == "; did you mean '杂记'?"
    assert did_you_mean("windw", ["window", "buffer"]) == "; did you mean 'window'?"
