"""Session names: the one rule every name a session gets follows, the form a name is stored
and looked up in, and a valid name made from free text or a client's conversation id."""

from __future__ import annotations

import re
import unicodedata

from chatmem.graphemes import grapheme_prefix

SESSION_NAME = re.compile(r"[^\W_][\w.+-]{0,63}")
"""Letters of any script or digits first, then letters, digits, `.`, `-`, `_`, `+`; 64 at most.

One rule for every name a session gets (chat, ask, /new, rename, fork, import,
replay --save-as): a name is typed as a shell word and a REPL word and becomes
an export's file name, so no spaces, no slashes, no leading dash or dot.
"""
UNFINISHED_KINDS = {"replay": "replay --save-as", "import": "sessions import"}
"""What keeps sessions under unfinished names while it writes them (store/unfinished.py):
`replay --save-as`, and `sessions import`, which writes a large transcript in short
transactions (kind → the command, named in a refusal)."""
UNFINISHED_PREFIXES = tuple(f"unfinished-{kind}." for kind in UNFINISHED_KINDS)
"""How those names begin: listings leave such sessions out and the next replay or import
deletes those left over, so a person's session may not take one."""
UNFINISHED = re.compile(r"unfinished-(?P<kind>replay|import)\.(?P<pid>\d{1,10})"
                        r"\.(?P<host>[0-9a-f]{8})\.[0-9a-f]{8}")
"""An unfinished name: `unfinished-KIND.PID.HOST.RANDOM`."""


def is_session_name(name: str) -> bool:
    """Whether `name` follows SESSION_NAME as it is stored (`normal_name`: an é typed as e
    and U+0301 is one character), a letter's combining marks counted with it (the vowel
    signs of हिंदी)."""
    name = normal_name(name)
    if not name or unicodedata.category(name[0]).startswith("M"):
        return False
    letters = "".join("a" if unicodedata.category(c).startswith("M") else c for c in name)
    return SESSION_NAME.fullmatch(letters) is not None


def normal_name(name: str) -> str:
    """A session name as it is stored and looked up: NFC, so `José` is one session however
    the keyboard composed its é."""
    return unicodedata.normalize("NFC", name)


def is_unfinished(name: str) -> bool:
    """Whether `name` is a session a replay or an import is still writing (or one a killed
    one left)."""
    return UNFINISHED.fullmatch(name) is not None


def is_reserved(name: str) -> bool:
    """Whether `name` begins as an unfinished name does (UNFINISHED_PREFIXES)."""
    return normal_name(name).startswith(UNFINISHED_PREFIXES)


def check_session_name(name: str, *, unfinished: bool = False) -> None:
    """Raise unless `name` is a name a session may get; one beginning as an unfinished name
    does only when `unfinished` (a replay's or an import's own)."""
    from chatmem.errors import UsageError

    if not name.strip():
        raise UsageError("a session name cannot be empty")
    if not is_session_name(name):
        raise UsageError(
            f"invalid session name {name!r}: use letters, digits, '-', '_', '.' or '+', starting "
            "with a letter or digit, no spaces or '/', up to 64 characters (e.g. trip-b)")
    reserved = None if unfinished else reserved_for(name)
    if reserved is not None:
        raise UsageError(f"session name {name!r} is reserved: {reserved}; pick another")


def reserved_for(name: str) -> str | None:
    """Why `name` is no name for a finished session (it begins as an unfinished name does:
    listings would hide it, the next replay or import delete it), or None. Every way a
    session gets a name asks this, an archive's manifest too."""
    kind = next((k for k in UNFINISHED_KINDS if normal_name(name).startswith(f"unfinished-{k}.")),
                None)
    if kind is None:
        return None
    return (f"names beginning 'unfinished-{kind}.' are {UNFINISHED_KINDS[kind]}'s sessions "
            "while it saves them")


def session_name_from(text: str) -> str:
    """A valid session name made from free text (a transcript's title, a file name): the
    text itself when it is one, else its letters with their combining marks (हिन्दी, not
    ह-न-द), every other run of characters a `-`."""
    text = normal_name(text.strip())
    if is_session_name(text):
        return text
    kept: list[str] = []
    after_letter = False
    for char in text:
        if unicodedata.category(char).startswith("M"):
            keep = after_letter
        else:
            after_letter = char.isalnum() or char == "_"
            keep = after_letter or char in ".+-"
        if keep:
            kept.append(char)
        elif kept[-1:] != ["-"]:
            kept.append("-")
    name = _first_characters("".join(kept).strip("-._+"), 64)
    return name or "session"


def suffixed_name(name: str, suffix: str) -> str:
    """`name` then `suffix` (`.before-edit-2`), the name cut so that both fit a session
    name's 64 characters, never between a letter and its marks."""
    return f"{_first_characters(name, 64 - len(suffix)) or 'session'}{suffix}"


def _first_characters(name: str, most: int) -> str:
    """The start of `name`, `most` code points at most, never cut between a letter and its
    marks (the name would show another letter: न without its virama), without a trailing
    separator."""
    return grapheme_prefix(name, most).rstrip("-._+")


def session_name_of(identifier: str) -> str:
    """The session of a conversation id a client gives (a server's request): the id itself
    when it is a valid session name, else one made from it and ending in a digest of the
    exact id, so two ids never share a session (`session_name_from` alone would merge
    `旅行` with `日记`, or two long ids with the same first 64 characters)."""
    import hashlib

    identifier = normal_name(identifier)
    if is_session_name(identifier) and not is_reserved(identifier):
        return identifier
    digest = hashlib.sha256(identifier.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    made = session_name_from(identifier)
    if is_reserved(made):  # an unfinished name: listings would hide it, a replay delete it
        made = made[len("unfinished-"):]
    stem = _first_characters(made, 64 - len(digest) - 1)
    return f"{stem or 'session'}-{digest}"
