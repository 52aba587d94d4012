"""The table of combining marks the word index folds out, against Unicode itself."""

from __future__ import annotations

import unicodedata

import pytest
from combining_marks_table import scanned_mark_ranges

from chatmem import fts


def test_the_table_is_this_pythons_scan_of_unicode() -> None:
    from chatmem.combining_marks import MARK_RANGES, UNICODE_VERSION

    # Fails on a Python whose Unicode differs: run tests/combining_marks_table.py again.
    assert scanned_mark_ranges() == MARK_RANGES, (
        f"chatmem/combining_marks.py is from Unicode {UNICODE_VERSION}, this Python's is "
        f"{unicodedata.unidata_version}: run `python tests/combining_marks_table.py`")


def test_the_first_folded_text_reads_the_table_not_all_of_unicode(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    category = unicodedata.category

    def counted(character: str) -> str:
        asked.append(character)
        return category(character)

    monkeypatch.setattr(unicodedata, "category", counted)
    fts._marks.cache_clear()
    try:
        assert fts.folded("राहुल مَرْحَبًا が café") == "रहल مرحبا が cafe"
        assert fts.index_terms("मैं राहुल हूँ，去杭州") == ["म", "रहल", "ह", "去杭", "杭州"]
    finally:
        fts._marks.cache_clear()
    assert len(asked) < 100  # the scan asked 197,104 characters
