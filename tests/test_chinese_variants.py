"""The table of traditional Chinese characters the word index, recall scoring and time words
fold to simplified ones (written by tests/chinese_variants_table.py)."""

from __future__ import annotations

import unicodedata

from chatmem.chinese_variants import PAIRS, simplified


def test_each_character_folds_to_one_that_folds_no_further() -> None:
    table = simplified()
    assert len(PAIRS) == 2 * len(table)
    # str.maketrans builds what a dict of the pairs' code points held, astral ones too.
    assert table == dict(zip(map(ord, PAIRS[::2]), map(ord, PAIRS[1::2]), strict=True))
    assert all(key != value and table.get(value, value) == value
               for key, value in table.items())


def test_the_traditional_forms_of_the_three_standards_fold_and_simplified_ones_stay() -> None:
    def fold(text: str) -> str:
        return text.translate(simplified())

    assert fold("臺北 禮金 兩萬 號 個 週 後 裡 裏 著 為 爲 麼 髮 發") == \
        "台北 礼金 两万 号 个 周 后 里 里 着 为 为 么 发 发"
    # Simplified characters that a standard also writes otherwise are kept (台 is 臺 in
    # Hong Kong, 才 纔, 么 幺 in Taiwan): a fold to those would split simplified text.
    kept = "台北才来什么群里于后干周个号礼两我们"
    assert fold(kept) == kept
    # A compatibility ideograph folds as the character NFC makes it.
    assert unicodedata.normalize("NFC", "\uf902") == "車"
    assert fold("\uf902") == fold("車") == "车"
