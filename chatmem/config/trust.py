"""Whether a file chatmem takes orders from (the config file, serve's tokens file) could
have been written by someone else: as ssh's StrictModes, the file and every directory
above it must belong to this account or root and be writable by no one else.

Group write counts only for a group someone else is in: with a private group per user
(Debian's and Ubuntu's USERGROUPS_ENAB, umask 002) every file a user saves is group-
writable, and refusing those would refuse every config they write (Debian's ssh allows
them the same way)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from chatmem.errors import ConfigError


def writable_by_others(st: os.stat_result) -> bool:
    """Whether someone other than this account (and root) may write what `st` describes."""
    if st.st_mode & 0o002:
        return True
    return bool(st.st_mode & 0o020) and not _private_group(st.st_gid)


def _private_group(gid: int) -> bool:
    """Whether group `gid` is this account's own: its primary group, with no other member
    and no other account's primary group."""
    import grp
    import pwd

    me = os.geteuid()
    try:
        mine = pwd.getpwuid(me)
        members = set(grp.getgrgid(gid).gr_mem)
    except KeyError:
        return False
    if mine.pw_gid != gid or members - {mine.pw_name}:
        return False
    return not any(p.pw_gid == gid and p.pw_uid != me for p in pwd.getpwall())


@dataclass(frozen=True)
class Replaceable:
    """A directory above a file through which someone else could put their own file in its
    place: it belongs to another account (`owner`), or others may write it (`mode`)."""

    directory: str
    owner: int | None = None
    mode: int | None = None

    def problem(self) -> str:
        if self.owner is not None:
            return (f"its directory {self.directory} belongs to another account (uid "
                    f"{self.owner}), who could put a file of theirs in its place")
        return (f"other users can write its directory {self.directory} (mode "
                f"{self.mode or 0:04o}) and put a file of theirs in its place")

    def fix(self, what: str) -> str:
        """What the user does about it, for `what` ("the config file")."""
        if self.owner is not None:
            return f"keep {what} in a directory only you can write"
        return f"chmod go-w {self.directory}"


def replaceable_by_others(path: Path) -> Replaceable | None:
    """Where someone else could put their own file in place of this one, or None.

    Every directory the name is looked up through (as named, and each link's own directory
    as the links lead, one after another) must belong to this account or root and be
    writable by no one else unless sticky; an attacker who may rename an entry anywhere on
    the way can swap in a file of their own."""
    me = os.geteuid()
    seen: set[str] = set()
    for start in (os.path.dirname(os.path.abspath(path)), *_lookup_directories(path)):
        directory = start
        while directory not in seen:
            seen.add(directory)
            try:
                st = os.stat(directory)
            except OSError:
                break  # the file's own open says what is wrong
            if st.st_uid not in (me, 0):
                return Replaceable(directory, owner=st.st_uid)
            if writable_by_others(st) and not st.st_mode & stat.S_ISVTX:
                return Replaceable(directory, mode=st.st_mode & 0o7777)
            directory = os.path.dirname(directory)
    return None


def _lookup_directories(path: Path) -> list[str]:
    """The directories the kernel looks a name up in to open `path`, in order, following
    every link on the way as it does: a link in the middle of a chain (~/cfg ->
    /theirs/link -> ~/real.toml) is looked up in a directory that is neither the path's
    nor the real file's. Resolution stops where a name is missing (its open says so)."""
    pending = list(reversed(os.fspath(path).split("/")))
    resolved = "/" if os.fspath(path).startswith("/") else os.getcwd()
    found: list[str] = []
    links = 0
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            resolved = os.path.dirname(resolved)
            continue
        found.append(resolved)
        here = os.path.join(resolved, name)
        try:
            target = os.readlink(here)
        except OSError:  # not a link (or not there)
            resolved = here
            continue
        links += 1
        if links > 40:  # a loop: the open fails with ELOOP and says so
            break
        if target.startswith("/"):
            resolved = "/"
        pending.extend(reversed(target.split("/")))
    return found


WHY = "a config file can name commands chatmem runs and where your API key is sent"
"""Why a config file someone else could write is not read: said once in each refusal."""


def check_config_owner(path: Path, st: os.stat_result) -> None:
    """Refuse a config file (`st`: the open file's status) someone else wrote or could
    write: it may name commands chatmem runs (key_command, clipboard_command), where the
    API key is sent (base_url) and where the history is kept (db). Each refusal is one
    sentence: what is wrong, why that matters, what to do."""
    if not hasattr(os, "geteuid"):
        return  # no owners to compare (Windows)
    # Whatever was opened is checked, a FIFO or a device as a file: another account's FIFO
    # says what they write to it. A pipe of the user's own (--config /dev/stdin, <(...)) is
    # theirs (a pipe belongs to the account that made it, mode 0600).
    if st.st_uid not in (os.geteuid(), 0):
        raise ConfigError(f"{path}: this config file belongs to another account (uid"
                          f" {st.st_uid}); {WHY}, so only your own is read: copy it to a"
                          " file of yours")
    if writable_by_others(st) and not stat.S_ISCHR(st.st_mode):
        # Not a terminal's 0620 (group tty): what others write to it is shown, not read.
        raise ConfigError(f"{path}: other users can write this config file (mode"
                          f" {st.st_mode & 0o777:04o}); {WHY}, so it is not read until you"
                          f" chmod go-w {path}")
    replaceable = replaceable_by_others(path)
    if replaceable is not None:
        raise ConfigError(f"{path}: {replaceable.problem()}; {WHY}, so it is not read until"
                          f" you {replaceable.fix('it')}")
