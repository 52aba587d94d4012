"""Search terms for the full-text index, for Latin and CJK text alike.

SQLite FTS5's `unicode61` tokenizer sees an unspaced run of Chinese as one
token, so 杭州 never matches 我们五月去杭州旅行. Like Lucene's CJKAnalyzer,
CJK runs are indexed and queried as overlapping character bigrams; other
text keeps its words. The index stores these terms, not the raw text.
"""

from __future__ import annotations

import re

# Han, Hiragana, Katakana, Hangul and the CJK compatibility blocks, as regex class ranges.
CJK = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
    "\U00020000-\U0002fa1f"
)
_TOKEN = re.compile(rf"[{CJK}]+|[^\W{CJK}]+", re.UNICODE)
_CJK_RUN = re.compile(rf"[{CJK}]+")


def index_terms(text: str) -> list[str]:
    """Words of Latin text (lowercased), bigrams of CJK runs, in order."""
    terms: list[str] = []
    for token in _TOKEN.findall(text):
        if _CJK_RUN.fullmatch(token):
            if len(token) == 1:
                terms.append(token)
            else:
                terms.extend(token[i : i + 2] for i in range(len(token) - 1))
        else:
            terms.append(token.lower())
    return terms


def index_text(text: str) -> str:
    return " ".join(index_terms(text))


# Words and bigrams so common they match nearly every turn: a query made of
# them alone still searches them, but they never outvote a rarer word.
_STOP_WORDS = """
a an and are as at be but by can could did do does for from had has have how i if in is it
its me my of on or our please so that the their them then there these they this to too us
was we were what when where which who why will with would you your
我们 你们 他们 什么 怎么 这个 那个 一个 可以 是什 么时 时候 一下 的是
"""
STOP_TERMS = frozenset(_STOP_WORDS.split())

# PostgreSQL's `english` text search configuration leaves these out of its index, so
# they never score there while FTS5 scores them: what a query could score counts
# neither, so both backends scale word scores alike (the Snowball English list).
_UNSCORED = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his
himself she her hers herself it its itself they them their theirs themselves what which
who whom this that these those am is are was were be been being have has had having do
does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on
off over under again further then once here there when where why how all any both each
few more most other some such no nor not only own same so than too very s t can will just
don should now
"""
UNSCORED_WORDS = frozenset(_UNSCORED.split())


def query_terms(text: str) -> list[str]:
    """The distinct index terms of a query, without stop terms and the words PostgreSQL
    never indexes (UNSCORED_WORDS: "s" of a possessive, pronouns), unless that leaves none.

    Those words only ever added noise on SQLite (a match of "her" is no evidence), and
    leaving them out ranks alike on both backends (benchmarks/recall.py --dev, id recall
    at 1,000 / 2,000 / 4,000 tokens: 0.738 / 0.845 / 0.900 → 0.748 / 0.848 / 0.909)."""
    terms = list(dict.fromkeys(index_terms(text)))
    kept = [t for t in terms if t not in STOP_TERMS and t not in UNSCORED_WORDS]
    return kept or terms


def match_terms(terms: list[str]) -> str | None:
    """An FTS5 MATCH expression for any of `terms`, or None when there are none.

    Quoting every term makes FTS5 syntax in user text (", *, NEAR, -, :)
    plain words, so a query can never be a syntax error.
    """
    if not terms:
        return None
    return " OR ".join(quote_term(t) for t in terms)


def quote_term(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'
