"""Files only their owner can read: exports, archives, reports and configs hold the
conversation (or a key in a base_url), so chatmem creates every such file 0600.

Such a file may be asked for in a folder others can write to (/tmp). Every byte goes
into a file this process creates under a name no one can guess (O_EXCL, O_NOFOLLOW,
0600), which then takes the destination's name: a file another user planted, at the
destination or at a name chatmem would have used on the way, is never written into.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from chatmem.errors import UsageError

# Folders where a hard link cannot be made (some FAT or network mounts) say one of these.
_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS}


def open_private(path: Path, *, binary: bool = False,
                 replace: bool = True) -> contextlib.AbstractContextManager[IO[Any]]:
    """A file to write in a `with` block, readable by its owner only (0600), that becomes
    `path` when the block ends without an error; on an error `path` is left as it was.

    `replace=False` refuses any existing entry at `path`, a dangling symbolic link too
    (FileExistsError). `replace=True` replaces a file of this user's. A symbolic link,
    anything but a regular file (a FIFO, a device), or a file another user owns, is refused
    either way (UsageError): the file a link points at is someone else's to lose, what reads
    a FIFO or a device would lose it, and a file another user owns is theirs.
    """
    refuse_foreign(path)
    if not replace and os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))
    return _written_then_named(path, binary=binary, replace=replace)


def refuse_foreign(path: Path) -> None:
    """UsageError when `path` is a symbolic link, not a regular file (a FIFO, a device, a
    folder), or a file another user owns."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    except OSError:
        return  # the write itself says what is wrong with the folder
    if stat.S_ISLNK(info.st_mode):
        raise UsageError(f"{path} is a symbolic link; chatmem neither writes through nor "
                         f"replaces one: remove it or choose another path")
    if not stat.S_ISREG(info.st_mode):
        # Replaced, a FIFO's reader or a device (/dev/null, as root) would be swapped for a
        # plain file of the conversation, and what waited on it would get nothing.
        raise UsageError(f"{path} is {_kind(info.st_mode)}, not a regular file; chatmem does "
                         f"not write over it: remove it or choose another path")
    if info.st_uid != os.geteuid():
        raise UsageError(f"{path} belongs to another user (uid {info.st_uid}); chatmem does "
                         f"not write over it: remove it or choose another path")


def _kind(mode: int) -> str:
    kinds = [(stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket")]
    return next((kind for test, kind in kinds if test(mode)), "a special file")


@contextlib.contextmanager
def _written_then_named(path: Path, *, binary: bool, replace: bool) -> Iterator[IO[Any]]:
    # mkstemp opens O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, under a random name, and tries
    # another name if one is taken: a planted file is never opened.
    fd, name = tempfile.mkstemp(prefix=f".{_cut(path.name, TEMP_NAME_BYTES)}.",
                                suffix=".partial", dir=path.parent)
    temp = Path(name)
    try:
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        refuse_foreign(path)  # again: one may have been planted while the file was written
        if replace:
            os.replace(temp, path)
        else:
            _name_if_free(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()


TEMP_NAME_BYTES = 64
"""Bytes of the destination's name the temporary name repeats: with the dots, mkstemp's 8
random letters and `.partial` it stays far within a name's 255 bytes, in any script."""


def _cut(name: str, most: int) -> str:
    """`name`'s first letters that fit in `most` bytes: a name's limit counts bytes, and a
    letter outside the BMP (𠀀, an emoji) takes four."""
    kept, size = [], 0
    for letter in name:
        size += len(os.fsencode(letter))
        if size > most:
            break
        kept.append(letter)
    return "".join(kept)


def _name_if_free(temp: Path, path: Path) -> None:
    """Give `temp` the name `path` unless something has it (FileExistsError).

    A hard link is made or refused in one step; where links cannot be made the check and
    the rename are two, and the file renamed is still this user's own.
    """
    try:
        os.link(temp, path, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError as e:
        if e.errno not in _NO_HARD_LINKS:
            raise
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
        os.replace(temp, path)
