"""Search terms for the full-text index, for Latin and CJK text alike.

SQLite FTS5's `unicode61` tokenizer sees an unspaced run of Chinese as one
token, so 杭州 never matches 我们五月去杭州旅行. Like Lucene's CJKAnalyzer,
CJK runs are indexed and queried as overlapping character bigrams; so are runs
of Thai, Lao, Khmer and Myanmar, written without spaces between words too.
Other text keeps its words. The index stores these terms, not the raw text.

Both FTS5's unicode61 and this module's word pattern end a word at a combining
mark (a Hindi vowel sign, a Thai tone mark, Arabic harakat), which shreds राहुल
into letters that match any message holding them. So marks left after NFC are
folded out of terms, as unicode61's remove_diacritics folds Latin accents: a
word is one term on both backends, and the plain Arabic or Hebrew spelling
finds the pointed one. Full-width ASCII, what CJK input methods type, is folded
to ASCII (as NFKC does for that block), so ＯＲＤ７７３１ finds ORD7731, and half-width
katakana to full-width (ﾀﾅｶ is タナカ). Alef with hamza or madda is bare alef, Persian ی ک
are Arabic ي ك, the tatweel folds out, Turkish ı is i (people type the spelling their
keyboard has). Characters that draw nothing (text.INVISIBLE) fold out, as the purge's
matcher takes them out: 李\u200b雷 is the word 李雷, not 李 and 雷. Traditional Chinese
characters fold to simplified ones (chatmem.chinese_variants), so 臺北 and 台北, 禮金 and
礼金 are one word to the index, its queries and recall scoring.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from chatmem.lazy_patterns import lazy
from chatmem.reasoning import sent_reply
from chatmem.text import CJK, FULL_WIDTH, HALF_WIDTH_KANA, INVISIBLE

UNSPACED_SCRIPTS = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u19e0-\u19ff\ua9e0-\ua9ff\uaa60-\uaa7f"
"""Thai, Lao, Myanmar and Khmer (with their extensions): words are not spaced apart."""
RUNS = CJK + UNSPACED_SCRIPTS
_FLAG = "[\U0001f1e6-\U0001f1ff]{2}"
"""A flag: two regional indicator letters (🇨🇳 is C N), one picture, one term."""
_EMOJI = "\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001f3fa\U0001f400-\U0001faff"
"""The blocks emoji are drawn from (misc technical ⌚, misc symbols ☀, dingbats ❤ ✅, arrows ⭐,
and the supplementary planes' pictographs 🎉 👍), less the skin tones that only colour the
one before (👍🏽 is 👍). Only their symbols (category So) are terms: not a bracket of
dingbats (❨)."""
EMOJI_TERM = "emoji"
"""What an emoji's term starts with, its code points in hex after it (🎉 is emoji1f389): a
word both FTS5's unicode61 and PostgreSQL's parser keep, where the picture itself is a
separator to both, so a query of one emoji found nothing. `logs -q 🎉`, search and recall
find a message holding it (as stored from this version on: one stored before holds no such
term until a migration indexes it again)."""
_TOKEN = lazy(rf"[{CJK}]+|(?:(?=[{UNSPACED_SCRIPTS}])\w)+|[^\W{RUNS}]+|(?P<pic>{_FLAG}|[{_EMOJI}])",
              re.UNICODE)
_RUN = lazy(rf"[{RUNS}]+")
_FULL_WIDTH = FULL_WIDTH | {0x3000: 0x20}  # and the ideographic space as a space
_DRAWN_NOTHING: dict[int, None] = dict.fromkeys(map(ord, INVISIBLE))
_TATWEEL = "\u0640"
_SPELLED_ALIKE: dict[int, int | None] = {
    0x06CC: 0x064A, 0x06A9: 0x0643, 0x0131: ord("i"), ord(_TATWEEL): None}
"""Letters one word is written with or without, as the keyboard has them: Persian ی and ک
for Arabic ي and ك (علی is علي), the tatweel that only stretches a word (محـــمد), Turkish
dotless ı for i (Işık is IŞIK: İ loses its dot as an accent). See _ALEFS too."""
_ALEFS = {"\u0622": "\u0627", "\u0623": "\u0627", "\u0625": "\u0627", "\u0671": "\u0627"}
"""Alef with hamza or madda (أحمد, إبراهيم, آمنة) as the bare alef (احمد) most people type
for it; composed by NFC, so folded after it, with the accented letters."""


@cache
def _compatible(exact: bool = False) -> dict[int, int | None]:
    """Full-width ASCII and katakana, what draws nothing, letters spelled alike
    (_SPELLED_ALIKE) and traditional Chinese in one table: a second
    pass over every non-ASCII text would cost as much again. `exact`: only the traditional
    characters simplified text never writes as themselves (a purge's fold)."""
    from chatmem.chinese_variants import simplified, solely_traditional

    return {**_FULL_WIDTH, **HALF_WIDTH_KANA, **_DRAWN_NOTHING, **_SPELLED_ALIKE,
            **(solely_traditional() if exact else simplified())}


@cache
def _mark_table() -> dict[int, None]:
    """Every combining mark outside the CJK blocks (a kana's voicing mark stays its own), to
    delete by str.translate: _marks' class of 298 ranges is read range by range for each
    character (9.6 us a 19-character question, 9 ms 10,000 characters, against 2.7 us and
    1.1 ms by this table)."""
    from itertools import chain

    from chatmem.combining_marks import MARK_RANGES

    # Ranges chained in C: a generator's 2,406 steps were a first turn's most Python calls.
    firsts, lasts = zip(*MARK_RANGES, strict=True)
    return dict.fromkeys(chain.from_iterable(map(range, firsts, map((1).__add__, lasts))))


@cache
def _marks() -> re.Pattern[str]:
    """_mark_table as a pattern, for a search (`indexed_differently`)."""
    from chatmem.combining_marks import MARK_RANGES

    return re.compile("[" + "".join(
        re.escape(chr(first)) + ("" if last == first else "-" + re.escape(chr(last)))
        for first, last in MARK_RANGES) + "]+")


_LATIN_ACCENTED = lazy("[\u00c0-\u024f]")
"""Latin letters with accents (Latin-1 Supplement to Latin Extended-B): FTS5's
remove_diacritics folds them on SQLite; PostgreSQL's english config keeps them, so
`cafe` found Café on one backend and not the other. Folded here, for both."""
_ACCENTED_SINCE_M016 = "\u0386-\u03ce\u1e00-\u1fff"
"""Vietnamese (Latin Extended Additional: ễ, ộ, ố) and Greek with tonos or polytonic
accents (ί, ἀ): accented letters as much as é is. FTS5's remove_diacritics=1 leaves a
letter with two marks (ễ) and Greek alone, so nguyen never found Nguyễn on either
backend. Folded from m016/p011 on."""
_ACCENTED_RANGES = ((0x00C0, 0x024F), (0x0386, 0x03CE), (0x1E00, 0x1FFF))


@cache
def _unaccented() -> dict[int, str | None]:
    """The accented letters of _ACCENTED_RANGES, each as itself without its marks (as NFD
    and the marks' removal give it), and every combining mark deleted (_mark_table), as one
    str.translate table: a letter without marks (α, Ø) is not one of them, so plain Greek
    text is not rewritten letter by letter. A table, not a pattern of the ~700 letters
    (compiled in a process's first turn not in ASCII: ~1.2 ms), then a second pass for the
    marks; the letters' bare forms hold no marks, so one pass deletes the same."""
    marks = _mark_table()
    table: dict[int, str | None] = dict(marks)
    for first, last in _ACCENTED_RANGES:
        for code in range(first, last + 1):
            letter = chr(code)
            if not letter.isalpha():  # a Unicode letter (L*), as category() would say
                continue
            bare = unicodedata.normalize("NFD", letter).translate(marks)
            if bare and bare != letter:
                table[code] = bare
    table.update((ord(alef), bare) for alef, bare in _ALEFS.items())
    return table


def folded(text: str, exact: bool = False) -> str:
    """`text` as the index reads it: full-width ASCII as ASCII, without the characters
    that draw nothing, traditional Chinese as simplified, NFC, combining marks out, Latin
    and Greek letters without their accents. `exact`: as a purge reads it, folding only the
    traditional characters simplified text never writes as themselves (臺, not 乾 or 於)."""
    if text.isascii():
        return text
    text = unicodedata.normalize("NFC", text.translate(_compatible(exact)))
    return text.translate(_unaccented())


_ASCII_TOKEN = lazy(r"[0-9A-Za-z_]+")
"""_TOKEN over ASCII text, which holds no run: its words (`\\w` there) alone."""


def _terms(text: str, *, run_ends: bool = False, prefixes: bool = False) -> list[str]:
    folded_text = folded(text)
    if folded_text.isascii():
        # _TOKEN's classes, tried at each character, took 2-3 us a word (45 us for a
        # question of 17 words, tokenized for search, index and vectors 7 times a turn).
        return _ASCII_TOKEN.findall(folded_text.lower())
    return _tokens(folded_text, run_ends=run_ends, prefixes=prefixes)


def _tokens(folded_text: str, *, run_ends: bool, prefixes: bool) -> list[str]:
    """`_terms` of text already folded, whatever it holds."""
    terms: list[str] = []
    for found in _TOKEN.finditer(folded_text):
        token = found.group()
        if found.lastgroup:  # an emoji or a flag (_EMOJI, _FLAG)
            if len(token) == 2 or unicodedata.category(token) == "So":
                terms.append(EMOJI_TERM + "".join(f"{ord(ch):x}" for ch in token))
        elif not _RUN.fullmatch(token):
            terms.append(token.lower())
        elif len(token) > 1:
            # Each character joined to the next, in C: a generator's step a bigram was most
            # of a Chinese question's calls.
            terms.extend(map(str.__add__, token, token[1:]))
            if run_ends:
                terms.append(token[-1])
        elif prefixes and not _beside_word(folded_text, found.start(), found.end()):
            terms.append(token + PREFIX)
        else:
            terms.append(token)
    return terms


def _beside_word(text: str, start: int, end: int) -> bool:
    """Whether a letter or digit touches text[start:end] (the 月 of 3月, the 的 of Ada的)."""
    return (start > 0 and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum())


def index_terms(text: str) -> list[str]:
    """Words of Latin text (lowercased), bigrams of CJK and Thai-like runs, in order."""
    return _terms(text)


def index_text(text: str) -> str:
    """What the index stores for `text`: its terms, and each run's last character alone.

    A one-character word (猫, 茶) is searched as a prefix (`search_terms`): the bigrams
    starting with it hold every place it has in a run but the last one, which the
    run's last character, indexed alone, holds."""
    return " ".join(_terms(text, run_ends=True))


def message_index_text(role: str, content: str) -> str:
    """What the index stores for a stored message: a reply's terms without the reasoning it
    opens with, as a context sends it (reasoning.sent_reply). Indexed whole,
    retrieval by words found a reply by what the model only thought."""
    return index_text(sent_reply(content) if role == "assistant" else content)


PREFIX = "*"
"""Marks a search term matching every indexed term it starts (never in a term: `\\w`)."""


def is_prefix_term(term: str) -> bool:
    """Whether a search term is one character of a run standing alone, a prefix."""
    return len(term) == 2 and term[1] == PREFIX and _RUN.fullmatch(term[0]) is not None


def indexed_differently(text: str) -> bool:
    """Whether `text`'s index entry from before folding and run ends (migrations m014,
    p010) differs from today's: it holds a mark, a run or full-width ASCII."""
    if text.isascii():
        return False
    return bool(_RUN.search(text) or _marks().search(text) or _LATIN_ACCENTED.search(text)
                or text.translate(_FULL_WIDTH) != text
                or not unicodedata.is_normalized("NFC", text))


_FOLDED_SINCE_M016 = lazy(f"[{_ACCENTED_SINCE_M016}{INVISIBLE}]")


def folded_differently_since_m016(text: str) -> bool:
    """Whether `text`'s index entry from before m016/p011 may differ from today's: it
    holds, once composed, a Vietnamese or Greek letter (accents folded since) or a
    character that draws nothing (folded out since)."""
    if text.isascii():
        return False
    return _FOLDED_SINCE_M016.search(unicodedata.normalize("NFC", text)) is not None


def folded_differently_since_m018(text: str) -> bool:
    """Whether `text`'s index entry from before m018/p016 differs from today's: it holds a
    traditional Chinese character (folded to simplified since)."""
    if text.isascii():
        return False
    from chatmem.chinese_variants import simplified

    return text.translate(simplified()) != text


_FOLDED_SINCE_M020 = lazy("[\uff61-\uff9f\u0622\u0623\u0625\u0671\u0640\u06a9\u06cc\u0131]")


def folded_differently_since_m020(text: str) -> bool:
    """Whether `text`'s index entry from before m020/p019 differs from today's: it holds,
    once composed, half-width katakana (as full-width since), an alef with hamza or madda, a
    tatweel, Persian ی or ک, or Turkish ı (_SPELLED_ALIKE, _ALEFS)."""
    if text.isascii():
        return False
    return _FOLDED_SINCE_M020.search(unicodedata.normalize("NFC", text)) is not None


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
    return _kept(_terms(text))


def search_terms(text: str) -> list[str]:
    """`query_terms` as the index is searched: a one-character word standing alone (猫,
    茶) is a prefix (`is_prefix_term`), as it is indexed only inside bigrams and at a
    run's end. One touching a letter or digit (the 月 of 3月) stays exact: as a prefix
    it would match every 月… bigram and outvote the date (benchmarks/recall.py)."""
    return _kept(_terms(text, prefixes=True))


_EMOJI_TERMS = lazy(EMOJI_TERM + "[0-9a-f]+")
_JOINED = lazy(r"[0-9A-Za-z]+(?:[^\w\s][0-9A-Za-z]+)+")
_PARTS = lazy(r"[a-z]+|[0-9]+")


def joined_spellings(text: str) -> list[str]:
    """The codes of `text` written with hyphens or dots (ORD-7731-QX, ORD‑7731‑QX) as the
    one word the index holds for them written with soft hyphens (ord7731qx): a search for
    the code finds it however it was joined. Never in `search_terms(text)`."""
    typed = set(search_terms(text))
    return [term for term in dict.fromkeys(
        re.sub(r"[^0-9A-Za-z]", "", m.group()).lower() for m in _JOINED.finditer(folded(text)))
        if term not in typed]


def split_spellings(text: str) -> list[str]:
    """The words of `text` of letters and digits (ORD7731QX) as the parts the index holds
    for them written with hyphens (ord, 7731, qx): for a search that found nothing as
    typed (as alternatives, gpt4's parts would find every message saying 4)."""
    typed, found = set(search_terms(text)), list[str]()
    for term in _terms(text):
        # An emoji's term (emoji1f1e6) is no code: its parts (1, f) would find every message.
        parts = _PARTS.findall(term) if term.isascii() and not _EMOJI_TERMS.fullmatch(
            term) else []
        found += parts if len(parts) > 1 else []
    return [term for term in dict.fromkeys(found) if term not in typed]


def _kept(terms: list[str]) -> list[str]:
    terms = list(dict.fromkeys(terms))
    kept = [t for t in terms if t not in STOP_TERMS and t not in UNSCORED_WORDS]
    return kept or terms
