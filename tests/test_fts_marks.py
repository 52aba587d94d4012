"""fts deletes combining marks by a table (`_mark_table`), not by the pattern of their 298
ranges (`_marks`, read range by range for each character): what it deletes is the same for
every code point and every text."""

from __future__ import annotations

import sys

from hypothesis import given
from hypothesis import strategies as st

from chatmem import fts
from chatmem.combining_marks import MARK_RANGES


def test_every_code_point_is_deleted_as_the_pattern_deletes_it() -> None:
    table, pattern = fts._mark_table(), fts._marks()
    deleted = [code for code in range(sys.maxunicode + 1)
               if not 0xD800 <= code <= 0xDFFF and pattern.fullmatch(chr(code))]
    assert deleted == sorted(table)
    assert len(table) == sum(last - first + 1 for first, last in MARK_RANGES)


_MARKED = st.text(st.one_of(
    st.characters(), st.sampled_from("\u0301\u0308\u0323\u064b\u3099\u309a\u0e48\u05b7"),
    st.sampled_from("eéễαά北京あがかﾞ")))


@given(_MARKED)
def test_a_text_loses_what_the_pattern_took_from_it(text: str) -> None:
    assert text.translate(fts._mark_table()) == fts._marks().sub("", text)


def test_folded_words_keep_their_forms() -> None:
    # Vietnamese and Greek accents, a kana's voicing mark kept, Hebrew points, Chinese.
    assert fts.folded("Nguyễn Café ἀρχή") == "Nguyen Cafe αρχη"
    assert fts.folded("がっこう 北京天气") == "がっこう 北京天气"
    assert fts.folded("שָׁלוֹם") == "שלום"


def _two_passes(text: str) -> str:
    """What folded did after NFC before the one table: each accented letter replaced by
    a pattern of them (as NFD without its marks gives it, alefs bare), then the marks deleted."""
    import re
    import unicodedata

    plain = {chr(code): unicodedata.normalize("NFD", chr(code)).translate(fts._mark_table())
             for first, last in fts._ACCENTED_RANGES for code in range(first, last + 1)
             if chr(code).isalpha()}
    plain = {letter: bare for letter, bare in plain.items() if bare and bare != letter}
    plain.update(fts._ALEFS)
    pattern = re.compile("[" + "".join(map(re.escape, plain)) + "]")
    return pattern.sub(lambda m: plain[m.group()], text).translate(fts._mark_table())


def test_one_table_folds_every_accented_letter_and_mark_as_two_passes_did() -> None:
    codes = [code for first, last in (*fts._ACCENTED_RANGES, *MARK_RANGES)
             for code in range(first, last + 1)] + [ord(alef) for alef in fts._ALEFS]
    for code in codes:
        assert chr(code).translate(fts._unaccented()) == _two_passes(chr(code)), hex(code)


@given(_MARKED)
def test_a_text_is_unaccented_as_two_passes_did(text: str) -> None:
    assert text.translate(fts._unaccented()) == _two_passes(text)
