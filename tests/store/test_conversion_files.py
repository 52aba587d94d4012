"""Converting a history file (encrypt, decrypt, rekey) writes its copy under a name no one
can guess: a file, folder or link another local user planted at the name chatmem once used
(`.NAME.converting-PID`) is neither opened, written nor removed, and a history that is a
symbolic link is refused, the file it points at left as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import needs_sqlcipher

from chatmem.errors import UsageError
from chatmem.store import Store, cipher

pytestmark = needs_sqlcipher
KEY = "钥匙 key 2291"


def history(db: Path) -> bytes:
    with Store(db) as store:
        store.history.import_messages(store.sessions.create_session("旅行", "window").id, [
            {"role": "user", "content": "我们五月去杭州"},
            {"role": "assistant", "content": "好的"}])
    return db.read_bytes()


def said(db: Path, key: str | None) -> list[str]:
    with Store(db, key=key) as store:
        return [m.content for m in store.history.messages(store.sessions.session("旅行").id)]


@pytest.mark.parametrize("planted", ["link", "folder", "file"])
def test_what_was_planted_at_the_old_conversion_name_does_not_matter(
        tmp_path: Path, planted: str) -> None:
    db = tmp_path / "h.db"
    history(db)
    victim = tmp_path / "victim.txt"
    victim.write_bytes("别人的文件".encode())
    old_name = cipher.conversion_file(db, os.getpid())
    if planted == "link":
        old_name.symlink_to(victim)
    elif planted == "folder":
        old_name.mkdir()
    else:
        old_name.write_bytes(b"planted")

    cipher.convert(db, None, KEY)
    assert cipher.file_kind(db) == "encrypted" and said(db, KEY) == ["我们五月去杭州", "好的"]
    cipher.convert(db, KEY, None)
    assert said(db, None) == ["我们五月去杭州", "好的"]
    # Left as it was planted, and what a link points at untouched.
    assert victim.read_bytes() == "别人的文件".encode()
    if planted == "link":
        assert old_name.is_symlink() and os.readlink(old_name) == str(victim)
    elif planted == "folder":
        assert old_name.is_dir()
    else:
        assert old_name.read_bytes() == b"planted"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["h.db", "victim.txt",
                                                                 old_name.name])


def test_a_history_that_is_a_symbolic_link_is_refused_and_its_file_left_as_it_was(
        tmp_path: Path) -> None:
    """Renamed over, the link became the encrypted copy and the file it pointed at stayed
    where it was, plaintext."""
    real = tmp_path / "真的.db"
    before = history(real)
    link = tmp_path / "h.db"
    link.symlink_to(real)
    with pytest.raises(UsageError, match="is a symbolic link"):
        cipher.convert(link, None, KEY)
    assert real.read_bytes() == before and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.db", "真的.db"]
