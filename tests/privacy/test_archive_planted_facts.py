"""An archive cannot plant a fact that belongs to nobody.

Review: an archive holding session `inj` and, in facts.json, a session fact of `s1`, which
it does not hold, imported that fact with no session and no profile: live, listed by
`facts list`, and out of reach of `forget-me`. A real `sessions export --all` could write
such an archive (a session it passed over, a replay's unfinished one, kept its facts).
"""

from __future__ import annotations

import json
import sqlite3
import zipfile
from pathlib import Path

from cli_runner import chat, run

from chatmem.store import FactScope, Store

UNFINISHED = "unfinished-replay.4242.00000000.0123abcd"


def _facts(db: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as con:
        return con.execute('SELECT scope, "user", session_id, key, value FROM facts'
                           " ORDER BY id").fetchall()


def _planted(source: Path, target: Path, session: str) -> None:
    """`source` with one more session fact in facts.json, of `session`."""
    with zipfile.ZipFile(source) as zf, zipfile.ZipFile(target, "w") as out:
        for item in zf.infolist():
            data = zf.read(item)
            if item.filename == "facts.json":
                facts = json.loads(data)
                facts.append({"key": "note", "value": "planted 植入", "scope": "session",
                              "session": session, "user": None,
                              "created_at": "2025-01-01T00:00:00+00:00",
                              "updated_at": "2025-01-01T00:00:00+00:00"})
                data = json.dumps(facts, ensure_ascii=False).encode()
            out.writestr(item.filename, data)


def test_a_fact_of_a_session_the_archive_does_not_hold_imports_nothing(tmp_path: Path) -> None:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    chat(a, "inj", ["/remember --user 城市: 杭州", "hi"], code=0)
    exported, planted = tmp_path / "all.zip", tmp_path / "inj.zip"
    run(a, "sessions", "export", "--all", "-o", str(exported), code=0)
    _planted(exported, planted, "s1")
    run(b, "ask", "s1", "hi", "--provider", "scripted", "--no-stdin", code=0)
    result = run(b, "sessions", "import", str(planted), code=None)
    assert result.exit_code != 0 and result.stderr.count("\n") == 1, result.stderr
    assert f"{planted}: facts.json: fact 2: its session 's1' is not in the archive" \
        in result.stderr
    assert _facts(b) == []
    with Store(b) as store:
        assert [s.name for s in store.sessions.list_sessions()] == ["s1"]
    # The archive as exported imports whole.
    run(b, "sessions", "import", str(exported), code=0)
    assert [f[3:] for f in _facts(b)] == [("城市", "杭州")]


def test_export_leaves_out_the_facts_of_a_session_it_leaves_out(tmp_path: Path) -> None:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    chat(a, "trip", ["hi"], code=0)
    with Store(a) as store:
        half = store.sessions.create_session(UNFINISHED, "buffer", unfinished=True)
        store.facts.upsert_fact("半截", "replay's", scope=FactScope.SESSION, session_id=half.id)
        trip = store.sessions.session("trip").id
        store.facts.upsert_fact("lang", "de", scope=FactScope.SESSION, session_id=trip,
                                source_session_id=half.id)
    archive = tmp_path / "all.zip"
    run(a, "sessions", "export", "--all", "-o", str(archive), code=0)
    with zipfile.ZipFile(archive) as zf:
        facts = json.loads(zf.read("facts.json"))
        assert json.loads(zf.read("manifest.json"))["facts"] == 1
    assert [(f["key"], f["session"], f["stated_in"]) for f in facts] == [("lang", "trip", None)]
    run(b, "sessions", "import", str(archive), code=0)
    assert [f[3:] for f in _facts(b)] == [("lang", "de")]


def test_forget_me_erases_a_fact_nobody_owns(tmp_path: Path) -> None:
    """One an import before the check left behind: no other erasure reaches it."""
    db = tmp_path / "h.db"
    chat(db, "mine", ["/remember --user name: Ann", "hi"], code=0)
    with sqlite3.connect(db) as con:
        con.execute("INSERT INTO facts (scope, \"user\", session_id, key, value, created_at,"
                    " updated_at) VALUES ('session', NULL, NULL, 'note', 'planted',"
                    " '2025-01-01T00:00:00+00:00', '2025-01-01T00:00:00+00:00')")
    dry = run(db, "forget-me", "--dry-run", code=0).stderr
    assert "note (session): no session or profile owns it" in dry
    run(db, "forget-me", "--yes", code=0)
    assert _facts(db) == []


def test_import_names_the_profile_facts_it_adds(tmp_path: Path) -> None:
    """Review: bob's archive added name=Bob to the importer's profile, said only as
    'restored 1 session and 2 facts'; every fact-using session then sent it."""
    bob, mine = tmp_path / "bob.db", tmp_path / "mine.db"
    chat(bob, "b", ["/remember --user name: Bob", "/remember --user 城市: 杭州", "hi"], code=0)
    chat(mine, "m", ["/remember --user 城市: 杭州", "hi"], code=0)
    archive = tmp_path / "bob.zip"
    run(bob, "sessions", "export", "--all", "-o", str(archive), code=0)
    said = run(mine, "sessions", "import", str(archive), code=0).stderr
    # 城市 it held already, with that value: not added.
    assert ("added to user default's profile, sent by every fact-using session of it: 1 fact"
            " (name); chatmem facts forget KEY --user default takes one out") in said
