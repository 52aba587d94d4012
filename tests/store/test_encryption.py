"""Encrypted history files (SQLCipher): no plaintext at rest, keys checked, files converted whole.

Every test that uses the `store` fixture runs on an encrypted file as well (see
conftest.history_key); these are the tests about encryption itself.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest
from conftest import HISTORY_KEY, needs_sqlcipher
from matches import matches
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.errors import ExitCode, HistoryLocked, NotChatmemDatabase, StoreError, StoreFailure
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store, cipher
from chatmem.store.sqlite_files import connect

pytestmark = needs_sqlcipher

PASSPHRASE = "it's a \"passphrase\" with ümlauts, 钥匙 and x'00'"
TALK = [
    "Hello, my name is Mirela Quastbeck and I live in Zagreb.",
    "My order is QX-48213 and it was a velvet armchair.",
    "我们五月去杭州旅行，预算是五千元，住在西湖边的琉璃客栈。",
    "The courier is called Tobiasz Wrenfield.",
]
PHRASES = ["Mirela Quastbeck", "QX-48213", "velvet armchair", "琉璃客栈", "Tobiasz Wrenfield",
           "mirela", "quastbeck"]


def raw_bytes(db: Path) -> dict[str, bytes]:
    """The file and whatever -wal, -shm or -journal lies beside it."""
    return {p.name: p.read_bytes() for p in sorted(db.parent.glob(db.name + "*"))}


def plaintext_in(db: Path) -> list[tuple[str, str]]:
    return [(name, phrase) for name, data in raw_bytes(db).items() for phrase in PHRASES
            if phrase.encode() in data]


@pytest.mark.parametrize("strategy", ["window", "summary-buffer", "entity"])
def test_chats_leave_no_plaintext_in_the_file_wal_or_shm(tmp_path: Path, strategy: str) -> None:
    db = tmp_path / "h.db"
    with Store(db, key=PASSPHRASE) as store:
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "trip",
                              strategy=strategy, params={"max_tokens": "150"}
                              if strategy == "summary-buffer" else {})
        for line in TALK * 3:
            engine.run_turn(line)
        assert store.memory.summaries(engine.session.id) or strategy != "summary-buffer"
        assert store.facts.facts() or strategy != "entity"
        live = raw_bytes(db)
        assert {"h.db-wal", "h.db-shm"} <= set(live) and len(live["h.db-wal"]) > 0
        assert plaintext_in(db) == []
    assert plaintext_in(db) == []
    with Store(db, key=PASSPHRASE) as store:
        trip = store.sessions.session("trip")
        assert [m.content for m in store.history.messages(trip.id)][:1] == TALK[:1]


@pytest.mark.parametrize("key", [None, "wrong key", HISTORY_KEY])
def test_without_the_right_key_nothing_is_opened_created_or_changed(tmp_path: Path,
                                                                    key: str | None) -> None:
    db = tmp_path / "h.db"
    with Store(db, key=PASSPHRASE) as store:
        store.sessions.create_session("s", "buffer")
    before = raw_bytes(db)
    with pytest.raises(HistoryLocked) as caught:
        Store(db, key=key)
    assert caught.value.exit_code == ExitCode.KEY == 3
    assert caught.value.missing is (key is None)
    assert str(caught.value) == (
        f"{db} is encrypted: set CHATMEM_KEY, or key_command in the config" if key is None
        else f"{db}: wrong key: SQLCipher cannot decrypt it with the key given")
    assert raw_bytes(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.db"]


def test_sqlcipher_logs_nothing_on_a_wrong_key(tmp_path: Path,
                                               capfd: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "h.db"
    Store(db, key=PASSPHRASE).close()
    capfd.readouterr()
    with pytest.raises(HistoryLocked):
        Store(db, key="nope")
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_passphrases_and_raw_keys_open_what_they_created(tmp_path: Path) -> None:
    for name, key in (("a.db", PASSPHRASE), ("b.db", HISTORY_KEY), ("c.db", "x")):
        with Store(tmp_path / name, key=key) as store:
            store.sessions.create_session("s", "buffer")
        with Store(tmp_path / name, key=key) as store:
            assert store.encrypted and store.sessions.find_session("s") is not None
        assert cipher.file_kind(tmp_path / name) == "encrypted"
    # The raw key is a key of its own, not the passphrase "x'5a5a…'".
    with pytest.raises(HistoryLocked):
        Store(tmp_path / "b.db", key=HISTORY_KEY + " ")
    with pytest.raises(StoreError):
        cipher.key_pragma("")


def test_a_plain_file_with_a_key_is_refused_untouched(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    Store(db).close()
    before = raw_bytes(db)
    with pytest.raises(StoreError, match=r"is not encrypted, but a key is set: `chatmem encrypt`"):
        Store(db, key=PASSPHRASE)
    assert raw_bytes(db) == before


def test_file_kinds(tmp_path: Path) -> None:
    plain, encrypted, text, empty = (tmp_path / n for n in ("p.db", "e.db", "t.txt", "z.db"))
    Store(plain).close()
    Store(encrypted, key="k").close()
    text.write_text("just some notes\n" * 64)
    empty.touch()
    assert [cipher.file_kind(p) for p in (plain, encrypted, text, empty, tmp_path / "none")] \
        == ["plain", "encrypted", "other", "missing", "missing"]
    with pytest.raises(NotChatmemDatabase):
        Store(text, key="k")


def test_sqlcipher_errors_arrive_as_sqlite3_errors(tmp_path: Path) -> None:
    conn = connect(tmp_path / "h.db", "k")
    conn.execute("CREATE TABLE t (x UNIQUE)")
    conn.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE constraint failed"):
        conn.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        list(conn.execute("SELECT * FROM missing"))
    assert [tuple(r) for r in conn.cursor().execute("SELECT x FROM t")] == [(1,)]
    conn.close()


def test_without_sqlcipher_a_key_is_one_clear_error_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cipher, "_driver", None)
    monkeypatch.setitem(sys.modules, "sqlcipher3", None)
    with pytest.raises(StoreError) as caught:
        Store(tmp_path / "new.db", key="k")
    assert str(caught.value) == ("encrypted history files need SQLCipher: "
                                 "pip install -e '.[encrypt]' in the chatmem checkout")
    assert list(tmp_path.iterdir()) == []
    encrypted = tmp_path / "e.db"
    encrypted.write_bytes(bytes(range(256)) * 16)
    with pytest.raises(HistoryLocked, match=r"is encrypted: install SQLCipher support "
                                            r"\(pip install -e '\.\[encrypt\]' in the chatmem "
                                            r"checkout\) and set"):
        Store(encrypted)


# -- converting files ----------------------------------------------------------------------


def _fill(store: Store) -> None:
    engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "trip",
                          strategy="summary-buffer", params={"max_tokens": "150"})
    for line in TALK * 2:
        engine.run_turn(line)


def _contents(store: Store) -> tuple[object, ...]:
    session = store.sessions.session("trip")
    return ([m.content for m in store.history.messages(session.id)],
            [s.text for s in store.memory.summaries(session.id)],
            [t.context for t in store.turns.turns(session.id)],
            [m.id for m, _ in matches(store, session.id, "杭州")])


def test_encrypt_rekey_decrypt_keep_every_row(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with Store(db) as store:
        _fill(store)
        original = _contents(store)
    assert plaintext_in(db)
    cipher.convert(db, None, PASSPHRASE)
    assert plaintext_in(db) == [] and cipher.file_kind(db) == "encrypted"
    with Store(db, key=PASSPHRASE) as store:
        assert _contents(store) == original
    cipher.convert(db, PASSPHRASE, HISTORY_KEY)
    with pytest.raises(HistoryLocked):
        Store(db, key=PASSPHRASE)
    with Store(db, key=HISTORY_KEY) as store:
        assert _contents(store) == original
    cipher.convert(db, HISTORY_KEY, None)
    with Store(db) as store:
        assert _contents(store) == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.db"]
    assert (db.stat().st_mode & 0o777) == 0o600


def test_a_failed_conversion_leaves_the_file_as_it_was(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "h.db"
    with Store(db) as store:
        _fill(store)
    before = raw_bytes(db)

    def fail(*args: object) -> None:
        raise StoreError("the converted copy does not hold every row")

    monkeypatch.setattr(cipher, "_verify", fail)
    with pytest.raises(StoreError, match="does not hold every row"):
        cipher.convert(db, None, PASSPHRASE)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.db"]
    # Byte for byte: its WAL was once folded and its header rewritten before the copy was
    # made, whether the copy turned out good or not.
    assert raw_bytes(db) == before
    monkeypatch.undo()
    with Store(db) as store:
        assert len(store.history.messages(store.sessions.session("trip").id)) == 2 * len(TALK) * 2


def test_a_file_open_elsewhere_is_not_converted(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with Store(db, key=PASSPHRASE) as other:
        other.sessions.create_session("s", "buffer")
        before = db.read_bytes()
        with pytest.raises(StoreError) as refused:  # chatmem's error, not SQLite's "locked"
            cipher.convert(db, PASSPHRASE, None)
        assert refused.value.kind is StoreFailure.BUSY
        assert db.read_bytes() == before
        assert other.sessions.find_session("s") is not None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.db"]


def test_converting_with_a_wrong_key_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    Store(db, key=PASSPHRASE).close()
    before = db.read_bytes()
    with pytest.raises(HistoryLocked) as refused:
        cipher.convert(db, "wrong", None)
    assert refused.value.missing is False  # a key was given, and it is wrong
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.db"]
