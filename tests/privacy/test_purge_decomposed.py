"""`facts forget --purge` over text stored decomposed (NFD), as macOS file names and some
input methods send it: Hangul as jamo, accents as combining marks.

Review of text in every script, finding 1: 저는 서울에 살아요 typed in NFD kept 서울
after the purge, and `logs -q 서울` still found it.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from cli_runner import chat, invoke
from conftest import History
from file_hash import file_bytes

from chatmem.privacy.mentions import MARKER
from chatmem.store import FactScope, Store


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def test_a_purge_erases_korean_typed_as_jamo_and_search_no_longer_finds_it(
        tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    chat(db, "korea", ["/remember 도시: 서울", _nfd("저는 서울에 살아요"), "我住在서울，서울很好",
                       _nfd("김민준님, Renée는 서울사람")], code=0)
    dry = invoke("facts", "forget", "korea", "도시", "--purge", "--dry-run", "--db", str(db),
                 code=0)
    assert "would erase fact 1 (도시) and 8 mentions in 6 messages of 1 session" in dry.stderr
    invoke("facts", "forget", "korea", "도시", "--purge", "--yes", "--db", str(db), code=0)
    with Store(db) as store:
        said = [m.content for m in store.history.messages(store.sessions.session("korea").id)]
    assert said[::2] == [f"{_nfd('저는 ')}{MARKER}{_nfd('에 살아요')}",
                         f"我住在{MARKER}，{MARKER}很好",
                         f"{_nfd('김민준님, Renée는 ')}{MARKER}{_nfd('사람')}"]
    assert not any(form in text for text in said for form in ("서울", _nfd("서울")))
    left = file_bytes(db)
    for form in ("서울", _nfd("서울")):
        assert form.encode() not in left, form
    assert "no turns found" in invoke("logs", "-q", "서울", "--db", str(db), code=0).output


def test_a_purge_finds_sessions_and_facts_whose_profile_name_is_stored_decomposed(
        history: History) -> None:
    """Second reading of 833e41c, finding 1: a history written before profile names were
    normalized holds Zoë as NFD in some rows; the purge looked for the NFC form only, and
    that session's message and that profile fact kept Zorblax."""
    location = str(history.location)
    with Store(location, key=history.key) as store:
        old = store.sessions.create_session("oldone", "buffer", user="Zoë").id
        store.history.import_messages(old, [{"role": "user", "content": "my friend Zorblax"}])
        new = store.sessions.create_session("newone", "buffer", user="Zoë").id
        store.history.import_messages(new, [{"role": "user", "content": "Zorblax again"}])
        store.facts.upsert_fact("friend", "Zorblax", scope=FactScope.USER, user="Zoë")
        store.facts.upsert_fact("note", "Zorblax likes tea", scope=FactScope.USER, user="Zoë")
        with store.db.write():
            store.db.execute('UPDATE sessions SET "user" = ? WHERE id = ?', [_nfd("Zoë"), old])
            store.db.execute('UPDATE facts SET "user" = ? WHERE key = ?', [_nfd("Zoë"), "note"])
    invoke("facts", "forget", "friend", "--purge", "--yes", "--db", location,
           env={"CHATMEM_USER": "Zoë"}, code=0)
    with Store(location, key=history.key) as store:
        said = [m.content for sid in (old, new) for m in store.history.messages(sid)]
        notes = [f.value for f in store.facts.facts(user="Zoë") if f.key == "note"]
    assert said == [f"my friend {MARKER}", f"{MARKER} again"]
    assert notes == [f"{MARKER} likes tea"]
    assert "no turns found" in invoke("logs", "-q", "Zorblax", "--db", location, code=0).output
