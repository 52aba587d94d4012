"""The nearest of known names to one typed wrong: "did you mean window?"."""

from __future__ import annotations

from collections.abc import Iterable


def nearest(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to `name` (by similarity of spelling), or None if none is close.

    Case is ignored for the likeness; a prefix of exactly one name (`/strat`) is that name.
    """
    names = [k for k in known if k != name]
    starting = [k for k in names if k.lower().startswith(name.lower())] if name else []
    if len(starting) == 1:
        return starting[0]
    import difflib  # only an error needs it

    lowered = {k.lower(): k for k in names}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[close[0]] if close else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`; did you mean 'window'?`, or nothing when no known name is close."""
    found = nearest(name, known)
    return f"; did you mean {found!r}?" if found is not None else ""
