"""A query of one emoji finds the messages holding it.

`logs -q 🎉` said "no turns found" beside a turn that asked "生日快乐🎉": FTS5's unicode61
and PostgreSQL's parser both read an emoji as a separator, so the index held nothing for
it and the query had no term. Now each emoji (a flag as one, skin tones and variation
selectors folded out) is indexed and searched as one word (fts.EMOJI_TERM), on both backends.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke

from chatmem import fts

ASKED = ["生日快乐🎉 party tonight", "I ❤️ tea, 👍🏽 ok", "plain text 🇨🇳", "no pictures here"]


def test_an_emoji_is_one_term_however_it_is_dressed() -> None:
    assert fts.search_terms("👍🏽") == fts.search_terms("👍")
    assert fts.search_terms("❤️") == fts.search_terms("❤") != []
    assert fts.search_terms("🇨🇳") != fts.search_terms("🇨🇦")
    assert fts.index_terms("➀ ❨x❩") == ["➀", "x"]  # a circled digit stays a word; a bracket none
    assert fts.split_spellings("🇨🇦") == []  # no code to split into 1, f, e...


def _questions(db: str, query: str) -> list[str]:
    shown = invoke("logs", "-q", query, "--json", "--db", db, code=0).stdout
    return [entry for entry in ASKED if entry in shown]


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    url = str(tmp_path / "e.db") if request.param == "sqlite" else str(
        request.getfixturevalue("pg_url"))
    for asked in ASKED:
        invoke("ask", asked, "--session", "派对", "--provider", "scripted", "--db", url, code=0)
    return url


def test_logs_finds_a_turn_by_one_emoji(db: str) -> None:
    assert _questions(db, "🎉") == [ASKED[0]]
    assert _questions(db, "👍") == [ASKED[1]]
    assert _questions(db, "❤") == [ASKED[1]]
    assert _questions(db, "🇨🇳") == [ASKED[2]]
    assert _questions(db, "🇨🇦") == []
