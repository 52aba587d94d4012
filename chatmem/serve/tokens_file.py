"""A tokens file a running server reads again when it changes: taking a person's line out
takes their access away at their next request, without a restart."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from chatmem.config.trust import replaceable_by_others
from chatmem.errors import ConfigError
from chatmem.text_files import NotUtf8, utf8_text

Signature = tuple[int, int, int, int, int]


def _signature(path: Path) -> Signature | None:
    """What changes when the file is written, replaced (an editor's rename) or chmod-ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def load_tokens(path: Path) -> dict[str, str]:
    """A tokens file: `[tokens]` mapping each person's bearer token to the history they use,
    e.g. a PostgreSQL URL with their own role (its password in ~/.pgpass, not here), so row
    security holds per person. One line naming the file and key for anything else."""
    import tomllib

    try:
        with open(path, "rb") as f:
            # The file read is the file checked: fstat, not a stat an instant before.
            st = os.fstat(f.fileno())
            if st.st_uid != os.geteuid():
                # Whoever owns it chooses who gets in, and as which database role.
                raise ConfigError(f"{path}: this tokens file belongs to another account (uid "
                                  f"{st.st_uid}), not the one this server runs as (uid "
                                  f"{os.geteuid()}); only your own file is read")
            if st.st_mode & 0o077:
                # Every person's token: as libpq refuses a ~/.pgpass others can read.
                raise ConfigError(f"{path}: other users can read this tokens file (mode "
                                  f"{st.st_mode & 0o777:04o}); make it yours alone: "
                                  f"chmod 600 {path}")
            why = replaceable_by_others(path)
            if why is not None:
                raise ConfigError(f"{path}: {why.problem()}, choosing who gets in; "
                                  f"{why.fix('the tokens file')}")
            text = utf8_text(f.read())
        if isinstance(text, NotUtf8):
            raise ConfigError(text.said(str(path), "tokens file"))
        data = tomllib.loads(text)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the tokens file: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, RecursionError) as e:
        raise ConfigError(f"{path}: not a TOML tokens file ({e})") from None
    table = data.get("tokens")
    if not isinstance(table, dict) or set(data) - {"tokens"}:
        raise ConfigError(f"{path}: a tokens file holds one [tokens] table, TOKEN = \"HISTORY\"")
    from chatmem.config.location import parse_location

    for token, history in table.items():
        if not isinstance(history, str) or not history.strip() or len(token) < 16:
            raise ConfigError(f"{path}: tokens: each token must be 16 characters or more and "
                              "name a history (a file or a postgresql:// URL)")
        # Each history is parsed now, once, not at its first request; the token is never shown.
        parse_location(history, f"{path}: tokens")
    return dict(table)


class TokensFile:
    """The tokens of `path` as they are now: read at start (a bad file is refused then, as
    before), then again whenever a request finds the file changed (one stat per request).

    A file that becomes unreadable, invalid, readable by others, another account's (or
    replaceable by one) or is removed gives no tokens at all, so every request is refused
    until it is fixed, and `log` hears one line for it. Keeping the last good tokens instead
    would keep letting in whomever the administrator was taking out when the edit went wrong
    (a half-saved file, a typo); a refusal is seen and fixed at once, a token let in is not."""

    def __init__(self, path: Path, log: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.log = log
        self._seen = _signature(path)
        self._tokens: Mapping[str, str] | None = load_tokens(path)

    def __bool__(self) -> bool:
        return bool(self._tokens)

    def current(self) -> Mapping[str, str] | None:
        """The tokens now; None while the file cannot be used (every request refused)."""
        seen = _signature(self.path)
        if seen != self._seen:
            self._seen = seen
            self._tokens = self._read()
        return self._tokens

    def _read(self) -> Mapping[str, str] | None:
        try:
            tokens = load_tokens(self.path)
        except ConfigError as e:
            self._say(f"{e}; every request is refused until the tokens file is fixed")
            return None
        self._say(f"{self.path}: read again ({len(tokens)} token"
                  f"{'' if len(tokens) == 1 else 's'})")
        return tokens

    def _say(self, line: str) -> None:
        if self.log is not None:
            self.log(line)
