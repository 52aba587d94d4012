"""What both backends' word search (sqlite_words, postgres_words) is given and gives beside
its matches: a conversation's counts of some words, the terms it scores, the conditions of a
match in either dialect, and scores best first."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SessionWords:
    """How often one conversation says each of some words (`Backend.session_word_counts`)."""

    counts: tuple[int, ...]
    """Per term, the conversation's index entries that match it, counted up to the
    caller's `most` + 1."""
    entries: int
    """How many messages the conversation holds."""


@dataclass(frozen=True)
class WeightedTerm:
    """A word a conversation's search scores (`Backend.session_word_scores`)."""

    term: str
    weight: float
    """What a message saying it once, of average length, scores: its IDF in the
    conversation."""
    index_count: int | None
    """Its entries in the whole index, as `count_words_matches` counted them: a term
    rare there scores by how often a message says it, for its length (its BM25
    without the index's IDF). None: too common to read all its entries: each
    message saying it scores `weight`."""


def best_first(sums: Mapping[int, float], limit: int) -> list[tuple[int, float]]:
    """A conversation's word scores (position → summed score) as
    `Backend.session_word_scores` gives them: rounded to 9 decimals, so both backends give
    the same values, best first (the later message first among equals), `limit` of them."""
    scored = ((position, round(score, 9)) for position, score in sums.items())
    return sorted(scored, key=lambda item: (-item[1], -item[0]))[:limit]


def match_conditions(session_column: str, session_id: int | None,
                     before_turn: int | None) -> tuple[str, list[Any]]:
    """What `Backend.word_scores` adds to its match, as SQL and its parameters, in both
    dialects: a replaced turn's messages (`m`) are left out, as redaction rewrites their
    entries but they match nothing; `session_id` (in `session_column`) and `before_turn`
    narrow the search when given."""
    where, params = "m.superseded = 0", []
    if session_id is not None:
        where += f" AND {session_column} = ?"
        params.append(session_id)
    if before_turn is not None:
        where += " AND m.turn < ?"
        params.append(before_turn)
    return where, params
