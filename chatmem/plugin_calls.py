"""Calling code chatmem does not own (a plugin's): whatever it raises comes back as one
of chatmem's errors (`chatmem.errors`), its text masked where it may quote a secret."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from chatmem.errors import ChatmemError

T = TypeVar("T")


def guarded(make: Callable[[BaseException], ChatmemError], call: Callable[[], T],
            mask: Callable[[str], str] | None = None) -> T:
    """`call()`; an exception other than chatmem's raised as `make(it)`: where chatmem calls
    code it does not own (a plugin's), whatever that raises is one line. SystemExit too (a
    plugin's argparse or click): it ended a chat or a server without a word; and any other
    BaseException (asyncio's CancelledError, a library's own), a traceback. Not Ctrl-C.

    With `mask`, every text of what is raised (chatmem's own errors a plugin raises, as
    README tells it to, included) is passed through it: a plugin's error may quote a key."""
    try:
        return call()
    except KeyboardInterrupt:
        raise
    except ChatmemError as e:
        if mask is None:
            raise
        raise masked(e, mask) from None
    except BaseException as e:  # a plugin's code may raise anything (asyncio's CancelledError)
        if mask is None:
            raise make(e) from e
        # The original, its text unmasked, is not chained: a traceback would show it.
        raise masked(make(e), mask) from None


E = TypeVar("E", bound=BaseException)


def masked(error: E, mask: Callable[[str], str]) -> E:
    """`error`, changed in place: every text it carries (its message, args and attributes,
    such as ExtensionFailed's cause) passed through `mask`; its class and kind kept."""
    error.args = tuple(mask(a) if isinstance(a, str) else a for a in error.args)
    for attribute, value in list(vars(error).items()):
        if isinstance(value, str):
            setattr(error, attribute, mask(value))
    error.__cause__ = None
    error.__suppress_context__ = True
    return error


def kind_of(value: object) -> str:
    """`None`, `int`, `generator`: what a plugin returned instead, for one line saying so."""
    return "None" if value is None else type(value).__name__


def kinds_of(value: object) -> str:
    """`a list holding dict, int`: what a plugin returned instead of a list of names."""
    if isinstance(value, list):
        wrong = sorted({kind_of(v) for v in value if not isinstance(v, str)})
        return f"a list holding {', '.join(wrong)}"
    return kind_of(value)
