"""Word entries written again as fts.index_text makes them now (p010, p011, p016, p019) and
their token counts bounded (p014), run in the order postgres_schema lists."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chatmem.store.postgres_access import unforced

Execute = Callable[..., Any]
"""Runs one statement, with its parameters (%s) if any, and returns its cursor (psycopg's
Connection.execute)."""

WORD_TABLES = ("messages", "message_words")
"""Read and written with row security unforced (postgres_access.unforced): a migrating owner
who is not a superuser reaches every person's entries, not only its own."""

REINDEXED_AT_ONCE = 500
"""Messages one step of p010 reads: an upgrade's memory stays bounded however long the
history."""


def p010_folded_words(execute: Execute) -> None:
    """SQLite's m014: index entries as fts.index_text makes them now (marks folded,
    full-width ASCII as ASCII, Thai-like runs as bigrams, each run's last character
    alone), written only for the messages whose terms change. ASCII text is passed over
    in the database (its terms are as they were)."""
    from chatmem import fts

    _index_again(execute, fts.indexed_differently)


def p011_words_folded_again(execute: Execute) -> None:
    """SQLite's m016: index entries as fts.index_text makes them now (Vietnamese and Greek
    letters without their accents, no character that draws nothing inside a word),
    written only for the messages that may hold one; ASCII text is passed over in the
    database."""
    from chatmem import fts

    _index_again(execute, fts.folded_differently_since_m016)


def p016_traditional_chinese_folded(execute: Execute) -> None:
    """SQLite's m018: index entries as fts.index_text makes them now (traditional Chinese
    characters as simplified), written only for the messages holding one."""
    from chatmem import fts

    _index_again(execute, fts.folded_differently_since_m018)


def p019_kana_arabic_and_dotless_i_folded(execute: Execute) -> None:
    """SQLite's m020: index entries as fts.index_text makes them now (half-width katakana as
    full-width, alef forms as bare alef, tatweel out, Persian ی ک as Arabic ي ك, Turkish ı
    as i), written only for the messages holding one."""
    from chatmem import fts

    _index_again(execute, fts.folded_differently_since_m020)


MOST_TOKENS = 2_147_483_647
"""The most tokens one word entry may count (BM25's length of a message). A token is at least
one character but one character, ㍿ (3 bytes), becomes four CJK tokens: a text PostgreSQL
stores (at most 1 GB) counts fewer than this. Bounded, no role's entries overflow a sum of
the others' (2^32 entries of this many tokens would be needed)."""


def p014_word_tokens_bounded(execute: Execute) -> None:
    """A word entry counts 0 to MOST_TOKENS tokens: a CHECK, so no role's entries in a session
    it shares break (bigint out of range) or skew the readers' word scores without bound.

    UPDATE of `tokens` stays granted: a purge writes a message's entry again (an upsert).
    An entry found out of bounds is counted again from its message's text."""
    from chatmem import fts
    from chatmem.store.postgres_words import token_count

    with unforced(execute, WORD_TABLES):
        rows = execute("SELECT w.message_id, m.content FROM message_words w JOIN messages m"
                       " ON m.id = w.message_id WHERE w.tokens NOT BETWEEN 0 AND %s",
                       (MOST_TOKENS,)).fetchall()
        if rows:  # one statement: its trigger corrects the word statistics once
            execute("UPDATE message_words w SET tokens = e.tokens FROM unnest(%s::bigint[],"
                    " %s::bigint[]) AS e(id, tokens) WHERE w.message_id = e.id",
                    ([int(i) for i, _ in rows],
                     [min(token_count(fts.index_text(c)), MOST_TOKENS) for _, c in rows]))
        execute("ALTER TABLE message_words ADD CONSTRAINT message_words_tokens_bounded"
                f" CHECK (tokens BETWEEN 0 AND {MOST_TOKENS})")


def _index_again(execute: Execute, differs: Callable[[str], bool]) -> None:
    """Write the word entries of the non-ASCII messages whose terms `differs` says changed,
    as fts.index_text makes them now, REINDEXED_AT_ONCE messages a step."""
    from chatmem import fts
    from chatmem.store.postgres_words import TEXT_SEARCH, fitting_terms, token_count

    with unforced(execute, WORD_TABLES):
        last = 0
        while True:
            rows = execute("SELECT id, content FROM messages WHERE id > %s"
                           " AND content ~ '[^\\x01-\\x7f]' ORDER BY id LIMIT %s",
                           (last, REINDEXED_AT_ONCE)).fetchall()
            if not rows:
                break
            changed = [(int(i), fts.index_text(c)) for i, c in rows if differs(c)]
            # One statement a step: its trigger updates the word statistics once.
            execute("UPDATE message_words w SET terms = to_tsvector("
                    f"'{TEXT_SEARCH}', e.terms), tokens = e.tokens FROM unnest(%s::bigint[],"
                    " %s::text[], %s::bigint[]) AS e(id, terms, tokens)"
                    " WHERE w.message_id = e.id",
                    ([i for i, _ in changed], [fitting_terms(t) for _, t in changed],
                     [token_count(t) for _, t in changed]))
            last = int(rows[-1][0])
