"""An extractor retraction forgets a key in every form it is stored in (second reading,
finding 2: a key stored composed and not, as a history from before keys were normalized
holds it, lost only its newest form, and the older, replaced value came back)."""

from __future__ import annotations

import sqlite3
import unicodedata
from pathlib import Path

from chatmem.memory.extraction_answer import Extraction, FactRetraction
from chatmem.memory.fact_writes import apply_extraction
from chatmem.memory.state import SessionState
from chatmem.store import FactScope, Store


def test_retracting_a_key_stored_in_two_forms_forgets_both(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    with Store(db) as store:
        sid = store.sessions.create_session("咖啡", "facts", {}).id
        for key, value in [("café", "双叟"), ("도시", "부산"), ("城市", "北京")]:
            store.facts.upsert_fact(key, value, scope=FactScope.SESSION, session_id=sid)
    with sqlite3.connect(db) as raw:  # the older values, as stored before normalizing
        raw.executemany(
            "INSERT INTO facts (scope, session_id, key, value, created_at, updated_at)"
            " VALUES ('session', ?, ?, ?, '2025-01-01', '2025-01-01')",
            [(sid, unicodedata.normalize("NFD", "café"), "花神"),
             (sid, unicodedata.normalize("NFD", "도시"), "서울")])
    with Store(db) as store:
        state = SessionState(store, sid)
        assert {f.value for f in state.live_facts()} == {"双叟", "부산", "北京"}
        apply_extraction(state, Extraction(retract=[FactRetraction("CAFÉ", 3),
                                                    FactRetraction("도시", 3)]), {})
        assert [(f.key, f.value) for f in state.live_facts()] == [("城市", "北京")]
        assert [f.key for f in store.facts.facts(session_id=sid)] == ["城市"]
