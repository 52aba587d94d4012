"""The nearest of known names to one typed wrong: "did you mean window?"."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from chatmem.lazy_patterns import lazy

_CJK = lazy(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def _one_edit(a: str, b: str) -> bool:
    """Whether `b` is `a` with one character changed, added or removed."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1:] == short for i in range(len(long)))


def _short_cjk(name: str, names: list[str]) -> str | None:
    """成雨 for 成语: one character off a name of two to four CJK characters.

    Similarity by ratio cannot see it (one of two characters wrong is 0.5), yet it is the
    usual slip: an input method offers the homophone. Only where the name holds CJK, and
    only one known name so near: a two-letter English typo is one edit from half the list.
    """
    if not (2 <= len(name) <= 4 and _CJK.search(name)):
        return None
    near = [k for k in names if _one_edit(name, k) and _CJK.search(k)]
    return near[0] if len(near) == 1 else None


def nearest(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to `name` (by similarity of spelling), or None if none is close.

    Case is ignored for the likeness; a prefix of exactly one name (`/strat`) is that name;
    a short CJK name one character off exactly one name (成雨) is that name.
    """
    names = [k for k in known if k != name]
    # ｔｒｉｐ typed with a Chinese input method's full-width letters is trip, told, never
    # merged: names are stored as typed, and a store that folded them would lose some.
    read_as = folded_name(name)
    folded = [k for k in names if folded_name(k) == read_as]
    if len(folded) == 1:
        return folded[0]
    starting = [k for k in names if k.lower().startswith(name.lower())] if name else []
    if len(starting) == 1:
        return starting[0]
    short = _short_cjk(name, names)
    if short is not None:
        return short
    import difflib  # only an error needs it

    lowered = {k.lower(): k for k in names}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[close[0]] if close else None


def folded_name(name: str) -> str:
    """`name` as a person reads it: NFKC (ｔｒｉｐ as a Chinese input method types it is trip),
    casefolded, traditional Chinese as simplified (雜記 is 杂记; only the characters
    simplified text never writes as themselves, as fact keys fold them: 於 stays). For
    telling look-alike names, never for storing or finding them: names are stored and
    looked up as typed."""
    said = unicodedata.normalize("NFKC", name).casefold()
    if said.isascii():
        return said
    from chatmem.chinese_variants import solely_traditional  # a large table, read once

    return said.translate(solely_traditional())


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`; did you mean 'window'?`, or nothing when no known name is close; every name read
    the same as `name` where several are (`; did you mean '杂记' or '雜記'?`)."""
    names = list(known)
    read_as = folded_name(name)
    alike = sorted(k for k in names if k != name and folded_name(k) == read_as)
    if len(alike) > 1:
        return "; did you mean " + " or ".join(repr(k) for k in alike) + "?"
    found = nearest(name, names)
    return f"; did you mean {found!r}?" if found is not None else ""
