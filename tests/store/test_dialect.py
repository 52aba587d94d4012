"""SQLite's own SQL stays in the SQLite backend: every other module speaks portable SQL."""

from __future__ import annotations

import re
from pathlib import Path

import chatmem

PACKAGE = Path(chatmem.__file__).parent
SQLITE_SIDE = {"store/sqlite_backend.py", "store/sqlite_words.py", "store/sqlite_files.py",
               "store/sqlite_opening.py", "store/sqlite_failures.py", "store/cipher.py",
               "store/schema.py", "store/upgrading.py", "store/sqlite_tables.py",
               "store/sqlite_upgrades.py", "store/sqlite_rewrites.py", "store/vector_cache.py"}
"""The SQLite backend (its full-text index in sqlite_words.py, its file on disk in
sqlite_files.py, opening and upgrading it in sqlite_opening.py and upgrading.py, its errors in
sqlite_failures.py), SQLCipher's file conversions,
SQLite's migration history (its first tables in sqlite_tables.py, its upgrades in
sqlite_upgrades.py, the rows they rewrite in sqlite_rewrites.py), and the eval's vector
cache file (a local SQLite file whatever backend the history uses)."""
ALLOWED = {
    ("fts.py", "MATCH"): "it builds FTS5 query expressions for the SQLite backend",
    ("store/meter.py", ".conn"): "it counts SQLite's own work (its trace and progress hooks)",
}
SQLITE_ONLY = {
    "PRAGMA": r"\bPRAGMA\b",
    "messages_fts": r"\bmessages_fts\b",
    "bm25(": r"(?<!\.)\bbm25\((?!self|query)",  # FTS5's function, not a method called
    "MATCH": r"\bMATCH\b",
    # SQLite's conflict clause, not a PostgreSQL trigger's BEFORE INSERT OR UPDATE.
    "INSERT OR": r"\bINSERT\s+OR\s+(?:REPLACE|IGNORE|ABORT|FAIL|ROLLBACK)\b",
    "rowid": r"\browid\b",
    "lastrowid": r"\blastrowid\b",
    ".conn": r"\bdb\.conn\b",
}


def test_sqlite_only_sql_lives_in_the_sqlite_backend() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name in SQLITE_SIDE:
            continue
        text = path.read_text(encoding="utf-8")
        for word, pattern in SQLITE_ONLY.items():
            if (name, word) not in ALLOWED and re.search(pattern, text):
                found.append((name, word))
    assert found == []


def test_the_check_sees_what_it_looks_for() -> None:
    statements = ["PRAGMA table_info(x)", "DELETE FROM messages_fts", "bm25(messages_fts)",
                  "WHERE t MATCH ?", "INSERT OR REPLACE INTO t", "WHERE rowid = ?",
                  "cursor.lastrowid", "store.db.conn.execute"]
    assert [w for w, p in SQLITE_ONLY.items() if any(re.search(p, s) for s in statements)] \
        == list(SQLITE_ONLY)
    assert not re.search(SQLITE_ONLY["INSERT OR"], "BEFORE INSERT OR UPDATE ON facts")
    assert not re.search(SQLITE_ONLY["bm25("], "source.bm25(query, first)")
    assert not re.search(SQLITE_ONLY["bm25("], "source.bm25(searched, first)")
