"""Text from outside (a terminal, a pipe, argv, a server, a file) made safe to store.

Python decodes bytes that are not UTF-8 in argv and stdin as lone surrogates
(surrogateescape), and JSON can spell one ("\\ud800"). SQLite cannot store
them and a terminal cannot print them: they become U+FFFD, the replacement
character, as any UTF-8 decoder would show them.
"""

from __future__ import annotations

import re
import unicodedata

_SURROGATES = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


INVISIBLE = "\u00ad\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"
"""Characters that draw nothing between two letters (soft hyphen, zero-width space, non-joiner
and joiner, word joiner, invisible operators, byte order mark). Text pasted from web pages and
chat apps carries them inside words: 李\u200b雷 still reads as 李雷."""

FULL_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
"""Full-width ASCII (U+FF01–FF5E), what CJK input methods type (ＯＲＤ７７３１, ３月４号), as
the ASCII it stands for, one character for one (`str.translate`)."""

FULL_WIDTH_SIGNS = {code: ord(unicodedata.normalize("NFKC", chr(code)))
                    for code in range(0xFFE0, 0xFFE7)
                    if len(unicodedata.normalize("NFKC", chr(code))) == 1}
"""The full-width signs past FULL_WIDTH (￥ ￡ ￠ ￦ ￢ ￤; not ￣, which NFKC makes two
characters) as the ones they stand for, one for one: ￥5,000 is ¥5,000. Only where values
are compared (anchors): search drops the signs between words either way, and folding
them in FULL_WIDTH would change what older indexes hold."""

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
"""Han characters as regex class ranges: extension A, the unified block, the compatibility
block and extensions B–F (𠀀, 𪚥: names are written with them)."""
KANA = "\u3040-\u30ff\uff66-\uff9f"
"""Hiragana, katakana and half-width katakana."""
HANGUL = "\uac00-\ud7af"
"""Hangul syllables."""
CJK = HAN + KANA + HANGUL
"""Han, kana and Hangul syllables: the characters the search index reads in runs of
bigrams (chatmem.fts). Widening it changes the terms indexes hold (see CJK_LETTERS)."""
CJK_LETTERS = CJK + "\u31f0-\u31ff\u1100-\u11ff\u3130-\u318f"
"""CJK and the rest of its letters (katakana phonetic extensions, Hangul jamo, ㅋ as typed
alone): where a word character is told from a Latin-script one. Not in CJK: the index
holds a run of jamo (ㅋㅋㅋ) as one word, and reading it in bigrams would need a reindex."""

HALF_WIDTH_KANA = {code: ord(unicodedata.normalize("NFKC", chr(code)))
                   for code in range(0xFF61, 0xFFA0)}
"""Half-width katakana and Japanese punctuation (U+FF61–FF9F: ﾀﾅｶ, ｶﾞｯｺｳ, ｡), what old
systems and some phone keyboards type, as the full-width characters NFKC gives (ﾀﾅｶ is
タナカ); the voiced marks ﾞ ﾟ become the combining ones, which NFC then joins to the kana
before them (ｶﾞ is ガ). One character for one, as FULL_WIDTH."""


def whole_number(text: str) -> int | None:
    """`text` as a whole number when it is digits only, ASCII or full-width (３ as an input
    method types it), else None. Not str.isdigit alone: "²" is a digit int() refuses."""
    folded = text.translate(FULL_WIDTH)
    return int(folded) if folded.isascii() and folded.isdigit() else None


def is_valid(text: str) -> bool:
    """Whether `text` encodes as UTF-8 (holds no lone surrogate)."""
    # ASCII is known without a read; else encoding is a C loop five times the speed of a
    # search for a surrogate (4 against 24 us for a retrieval turn's 8 KB stored context).
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def valid_text(text: str) -> str:
    """`text` with every byte that was not UTF-8 (a lone surrogate) replaced by U+FFFD."""
    return text if is_valid(text) else _SURROGATES.sub(REPLACEMENT, text)


def profile_name(user: str) -> str:
    """A user profile's name as it is kept and compared: NFC, so `Zoë` is one profile however
    the keyboard (or macOS, which decomposes) composed its ë, as session names are."""
    return unicodedata.normalize("NFC", user)


def profile_forms(user: str) -> list[str]:
    """The forms a stored profile name may have: NFC, and NFD as histories written before
    names were normalized hold some (a lookup takes either, so none needs rewriting)."""
    return list(dict.fromkeys((profile_name(user), unicodedata.normalize("NFD", user))))


# Characters text from outside must never deliver raw to a reader: C0 controls but tab and
# newline, DEL, the C1 controls (\x9b is a one-byte CSI) and the bidirectional controls
# (U+202E reverses what follows it on screen, so "exe.txt" can read as "txt.exe").
_C0 = "\x00-\x08\x0b-\x1f"
_C0_BUT_CR = "\x00-\x08\x0b\x0c\x0e-\x1f"
_C1_AND_DEL = "\x7f-\x9f"
_MARKS = "\u061c\u200e\u200f"
_REORDERING = "\u202a-\u202e\u2066-\u2069"
_BIDI = _MARKS + _REORDERING
CONTROLS = re.compile(f"[{_C0}{_C1_AND_DEL}{_BIDI}]")
"""Every control character: none is taken in a name, a path or an address."""
SHOWN_ESCAPED = re.compile(f"\r(?!\n)|[{_C0_BUT_CR}{_C1_AND_DEL}{_REORDERING}]")
"""What text shown to a reader (a terminal, a pipe, a file people `cat`) has escaped: what
can drive a terminal (ESC, a one-byte CSI, BEL, backspace; a lone CR, which sends the cursor
back to overwrite the line with what follows) and the embeddings, overrides and isolates,
which reorder a whole run of text (Trojan Source). Delivered as written: a CR ending a line
before its LF (a Windows line end moves the cursor over nothing), and the left-to-right,
right-to-left and Arabic letter marks, zero-width letters without a shape that reorder
nothing a Hebrew or Arabic letter could not: what RTL keyboards type and a reply in Hebrew
or Arabic holds, which came out as `\u200f`."""
NOT_ONE_LINE = re.compile(f"[\\x00-\\x1f{_C1_AND_DEL}\u2028\u2029{_REORDERING}]")
"""What a one-line field (a speaker's name) cannot hold: every control (NEL, vertical tab
and form feed end a line too), the line and paragraph separators, and what reorders a run
of text, which could show a line break or another speaker's label that is not there. Other
format characters are taken: the zero-width non-joiner (U+200C) is ordinary Persian and
Hindi spelling, the joiner (U+200D) builds emoji sequences."""
_JSON_RAW = re.compile(f"[{_C1_AND_DEL}{_BIDI}]")
"""What json.dumps(ensure_ascii=False) leaves raw of CONTROLS (it escapes C0 itself)."""


def code_point(char: str) -> str:
    """`\\u202e`: a character written as an escape anyone can read."""
    return f"\\u{ord(char):04x}"


def escaped_controls(text: str) -> str:
    """`text` with the control characters that drive a terminal or reorder text written as
    `\\u001b` (SHOWN_ESCAPED), for a file people read."""
    return SHOWN_ESCAPED.sub(lambda m: code_point(m.group()), text)


def json_safe(document: str) -> str:
    """A JSON text from json.dumps(ensure_ascii=False) with C1 and bidi controls escaped
    too (`\\u009b`): the same JSON value, but no raw control reaches a terminal or a pager.
    Such characters can only be inside JSON strings, where the escape means the same."""
    return _JSON_RAW.sub(lambda m: code_point(m.group()), document)


_JOINERS = "\u200c\u200d"
_DIRECTION_MARKS = "\u200e\u200f\u061c"
_EMOJI_NOT_SYMBOLS = frozenset("\u203c\u2049\u2139\u2194\u25fb\u25fc\u25fd\u25fe\u2934\u2935"
                               "\u3030\u303d")
"""The emoji that are not "other symbols" (‼ ⁉ ℹ ↔ ◻ ◼ ◽ ◾ ⤴ ⤵ 〰 〽): with U+FE0F after them
they end a joiner's emoji sequence (🙂‍↔️, Emoji 15.1); "+" and U+FE0F is still a plus."""
_FLAG, _TAGS, _CANCEL_TAG = "\U0001f3f4", ("\U000e0020", "\U000e007e"), "\U000e007f"
BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5")
"""Letters, symbols and marks that draw nothing (the Hangul fillers, the braille blank, the
combining grapheme joiner, Khmer's inherent vowels): "Ana\u3164" looks like "Ana", and
"\u3164" alone like no name at all, though each counts as a letter or a symbol."""
_JOINING_SCRIPTS = ((0x0600, 0x08FF), (0x0900, 0x0DFF), (0x0F00, 0x109F), (0x1780, 0x18AF),
                    (0xA8E0, 0xA8FF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF))
"""The scripts whose words are spelled with the joiners (U+200C, U+200D): Arabic, Syriac,
Thaana and N'Ko; the Indic scripts Devanagari to Sinhala; Tibetan and Myanmar; Khmer and
Mongolian; Arabic's presentation forms (محمد‌رضا, क्‌ष)."""


def hidden_character(text: str) -> str | None:
    """The first character of `text` that shows nothing and spells nothing, or None: a
    zero-width space, a word joiner, a BOM, a tag outside an emoji flag's sequence, a blank
    letter (BLANK_LETTERS), a joiner after no letter of a script spelled with it (a non-joiner
    also before none) and outside an emoji sequence, a direction mark in a text with no
    right-to-left letter. In a one-line label (a speaker's name) "Ana" and "Ana\u200b" would
    be two speakers who look the same, and tags can spell hidden text."""
    right_to_left = any(unicodedata.bidirectional(c) in ("R", "AL")
                        for c in text if c not in _DIRECTION_MARKS)  # RLM and ALM are R, AL
    in_flag = False
    for i, c in enumerate(text):
        if c == _FLAG:
            in_flag = True  # 🏴 + tag letters + CANCEL TAG: a subdivision's flag
            continue
        if in_flag and (_TAGS[0] <= c <= _TAGS[1] or c == _CANCEL_TAG):
            in_flag = c != _CANCEL_TAG
            continue
        in_flag = False
        before, after = text[i - 1 : i], text[i + 1 : i + 3]
        if c in BLANK_LETTERS:
            return c
        if c in _JOINERS:
            if not (_joins(c, before, after[:1])
                    or (c == "\u200d" and _in_emoji(before, after))):
                return c
        elif c in _DIRECTION_MARKS:
            # A mark sets where neutrals go ("(דוד)\u200f" after its parenthesis): beside
            # punctuation too, but only in a text that has right-to-left letters to order.
            if not right_to_left:
                return c
        elif unicodedata.category(c) == "Cf":
            return c
    return None


def _joins(joiner: str, before: str, after: str) -> bool:
    """Whether `joiner` between `before` and `after` spells a word of a script that uses it.
    A zero-width joiner shapes the letter before it even where nothing follows (Malayalam's
    chillu in its old encoding, അര്‍ജുന്‍; an Arabic letter's joining form); a non-joiner
    only parts two letters, and after a word's last one it would change nothing."""
    return _joining(before) and (joiner == "\u200d" or _joining(after))


def _joining(char: str) -> bool:
    return bool(char) and any(low <= ord(char) <= high for low, high in _JOINING_SCRIPTS)


def _in_emoji(before: str, after: str) -> bool:
    """Whether a zero-width joiner between `before` and the one or two characters `after`
    builds an emoji sequence (👩‍💻; 🏳️‍🌈 after its variation selector, 👨🏽‍💻 after a skin
    tone; 🙂‍↔️ before an arrow its variation selector makes an emoji)."""
    if not before or not (unicodedata.category(before) in ("So", "Sk") or before == "\ufe0f"):
        return False
    return bool(after) and (unicodedata.category(after[0]) == "So"
                            or (after[0] in _EMOJI_NOT_SYMBOLS and after[1:] == "\ufe0f"))


def shows_something(text: str) -> bool:
    """Whether `text` holds a letter, digit, symbol or punctuation mark: not only marks,
    joiners, spaces and letters that draw nothing (BLANK_LETTERS)."""
    return any(unicodedata.category(c)[0] in "LNSP" and c not in BLANK_LETTERS for c in text)
