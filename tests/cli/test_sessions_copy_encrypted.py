"""`sessions copy` between an encrypted history file and a plain one, both ways.

A key set (CHATMEM_KEY or key_command) is the encrypted file's, and the plain file refused
it: `sessions copy --from plain.db --to enc.db` and `--from enc.db --to plain.db` both
failed with "plain.db is not encrypted, but a key is set", so a session could not move in
or out of an encrypted history but into a new file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke
from conftest import needs_sqlcipher

from chatmem.store import Store, cipher

pytestmark = needs_sqlcipher

KEY = "Kf7 ZQX ключ 钥匙 9931"


def _with_session(db: Path, name: str, said: str, key: str | None) -> None:
    with Store(db, key=key) as store:
        session = store.sessions.create_session(name, "buffer")
        store.history.import_messages(session.id, [{"role": "user", "content": said},
                                                   {"role": "assistant", "content": "ok"}])


def _said(db: Path, name: str, key: str | None) -> list[str]:
    with Store(db, key=key) as store:
        return [m.content for m in store.history.messages(store.sessions.session(name).id)]


@pytest.mark.parametrize("way", ["into-encrypted", "out-of-encrypted"])
def test_a_session_is_copied_between_an_encrypted_file_and_a_plain_one(
        tmp_path: Path, way: str) -> None:
    encrypted, plain = tmp_path / "enc.db", tmp_path / "plain.db"
    _with_session(encrypted, "secret", "我的卡号不在这里 and nothing else", KEY)
    _with_session(plain, "open", "hello, 你好", None)
    source, target = (plain, encrypted) if way == "into-encrypted" else (encrypted, plain)
    done = invoke("sessions", "copy", "--from", str(source), "--to", str(target),
                  env={"CHATMEM_KEY": KEY})
    assert done.exit_code == 0, done.stderr
    assert cipher.file_kind(encrypted) == "encrypted" and cipher.file_kind(plain) == "plain"
    moved, key = ("open", KEY) if way == "into-encrypted" else ("secret", None)
    assert _said(target, moved, key) == _said(source, moved,
                                              None if key else KEY)


def test_into_a_new_file_the_copy_is_encrypted_with_the_key(tmp_path: Path) -> None:
    encrypted, new = tmp_path / "enc.db", tmp_path / "new.db"
    _with_session(encrypted, "secret", "钥匙 and key", KEY)
    done = invoke("sessions", "copy", "--from", str(encrypted), "--to", str(new),
                  env={"CHATMEM_KEY": KEY})
    assert done.exit_code == 0, done.stderr
    assert cipher.file_kind(new) == "encrypted"
    assert _said(new, "secret", KEY) == ["钥匙 and key", "ok"]


@pytest.mark.parametrize("key_from", ["env", "key_command"])
def test_a_key_between_two_plain_files_is_refused(tmp_path: Path, key_from: str) -> None:
    """Both files plain, the key set was nobody's: the copy went on in the clear, exit 0,
    and its user believed it encrypted (as `chat` with a key on a plain file is refused)."""
    source, target = tmp_path / "a.db", tmp_path / "b.db"
    _with_session(source, "trip", "我的护照号 E1234 and more", None)
    _with_session(target, "other", "hello", None)
    env, args = {"CHATMEM_KEY": KEY}, []
    if key_from == "key_command":
        config = tmp_path / "c.toml"
        config.write_text("key_command = \"echo nope\"\n", encoding="utf-8")
        env, args = {"CHATMEM_KEY": None}, ["--config", str(config)]
    done = invoke("sessions", "copy", "--from", str(source), "--to", str(target), *args,
                  env=env)
    assert done.exit_code == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "a.db" in done.stderr and "b.db" in done.stderr
    assert ("$CHATMEM_KEY" if key_from == "env" else "key_command") in done.stderr
    assert cipher.file_kind(target) == "plain"
    with Store(target) as store:
        assert [s.name for s in store.sessions.list_sessions()] == ["other"]
