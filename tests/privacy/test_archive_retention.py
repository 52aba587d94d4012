"""A restored archive's sessions keep when they were last used: an import says which are
past their retention already (the next chat elsewhere or a prune would erase them), and
a time the manifest puts after the export is no later than it."""

from __future__ import annotations

import json
import sqlite3
import zipfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from archive_edits import with_member_changed
from cli_runner import chat, invoke, run

from chatmem.timestamps import parse_time, stamp, utc_now

LAST_YEAR = "2025-02-01T00:00:00.000+00:00"


def exported(tmp_path: Path, dated: dict[str, str], *, forever: tuple[str, ...] = ()) -> Path:
    """An --all archive of a session per name in `dated`, each last used then."""
    a, zipped = tmp_path / "a.db", tmp_path / "all.zip"
    for name in (*dated, *forever):
        chat(a, name, ["my cat is Tom"], code=0)
    for name in forever:
        run(a, "sessions", "retention", name, "forever", code=0)
    with sqlite3.connect(a) as con:
        for name, when in dated.items():
            con.execute("UPDATE sessions SET created_at = ?, updated_at = ? WHERE name = ?",
                        [when, when, name])
        for name in forever:
            con.execute("UPDATE sessions SET updated_at = ? WHERE name = ?", [LAST_YEAR, name])
    run(a, "sessions", "export", "--all", "-o", str(zipped), code=0)
    return zipped


def imported(tmp_path: Path, zipped: Path, retention: str = "retention_days = 90\n") -> str:
    config = tmp_path / "config.toml"
    config.write_text(retention)
    done = invoke("sessions", "import", str(zipped), "--db", str(tmp_path / "b.db"),
                  "--config", str(config), code=0)
    return done.stderr


def test_an_import_says_which_restored_session_is_past_its_retention(tmp_path: Path) -> None:
    said = imported(tmp_path, exported(tmp_path, {"旧的": LAST_YEAR}, forever=("keep",)))
    line = next(x for x in said.splitlines() if "past its retention" in x)
    assert line.startswith("session 旧的 (idle ")
    assert line.endswith(", retention 90 days) is past its retention already: a chat started"
                         " in another session, or `chatmem sessions prune`, erases it;"
                         " `chatmem sessions retention 旧的 forever` keeps it")
    # One session named: keep is kept for good, whenever it was used.
    assert [x for x in said.splitlines() if "retention already" in x] == [line]


def test_several_past_their_retention_are_one_line(tmp_path: Path) -> None:
    zipped = exported(tmp_path, {"old": LAST_YEAR, "my-cat": LAST_YEAR})
    lines = [x for x in imported(tmp_path, zipped).splitlines() if "past their retention" in x]
    assert len(lines) == 1
    assert lines[0].startswith("2 sessions are past their retention already: ")
    assert "my-cat (idle " in lines[0] and "old (idle " in lines[0]
    assert lines[0].endswith("`chatmem sessions retention NAME forever` keeps one"
                             " (`chatmem sessions prune --dry-run` lists what a prune erases)")


def test_without_retention_or_within_it_nothing_is_said(tmp_path: Path) -> None:
    zipped = exported(tmp_path, {"old": LAST_YEAR})
    assert "retention already" not in imported(tmp_path, zipped, "")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    recent = stamp(utc_now() - timedelta(days=80))
    assert "retention already" not in imported(fresh, exported(fresh, {"recent": recent}))


def manifest_times(archive: Path, to: Path, **times: str) -> Path:
    """`archive` with every session's times (and, given, exported_at) set to `times`."""
    def change(manifest: dict[str, Any]) -> None:
        if "exported_at" in times:
            manifest["exported_at"] = times["exported_at"]
        for listed in manifest["sessions"]:
            listed.update({k: v for k, v in times.items() if k != "exported_at"})

    return with_member_changed(archive, to, "manifest.json", change)


def restored_times(tmp_path: Path, archive: Path) -> dict[str, tuple[str, str]]:
    b = tmp_path / "b.db"
    run(b, "sessions", "import", str(archive), code=0)
    with sqlite3.connect(b) as con:
        return {name: (created, updated) for name, created, updated
                in con.execute("SELECT name, created_at, updated_at FROM sessions")}


def test_a_time_after_the_export_is_the_exports(tmp_path: Path) -> None:
    zipped = exported(tmp_path, {"old": LAST_YEAR, "新的": LAST_YEAR})
    with zipfile.ZipFile(zipped) as zf:
        at = stamp(parse_time(json.loads(zf.read("manifest.json"))["exported_at"]))
    future = manifest_times(zipped, tmp_path / "f.zip", created_at="9000-01-01T00:00:00Z",
                            updated_at="9000-01-01T00:00:00Z")
    assert restored_times(tmp_path, future) == {"old": (at, at), "新的": (at, at)}
    # Not the most recent for ever: a session used after the import comes first.
    chat(tmp_path / "b.db", "now", ["hi"], code=0)
    listed = json.loads(run(tmp_path / "b.db", "sessions", "list", "--json", code=0).stdout)
    assert listed[0]["name"] == "now"


def test_a_clock_ahead_restores_no_later_than_now(tmp_path: Path) -> None:
    """A machine's clock minutes ahead (or a forged exported_at): restored, dated now."""
    zipped = exported(tmp_path, {"old": LAST_YEAR})
    ahead = stamp(utc_now() + timedelta(minutes=5))
    skewed = manifest_times(zipped, tmp_path / "s.zip", exported_at=ahead, updated_at=ahead)
    before = stamp(utc_now())
    created, updated = restored_times(tmp_path, skewed)["old"]
    assert (created, before <= updated <= stamp(utc_now())) == (LAST_YEAR, True)


def test_import_json_names_each_session_past_its_retention(tmp_path: Path) -> None:
    """What the import said of sessions past retention was on stderr only: a script reading
    `--json` could not tell which restored sessions the next chat elsewhere would erase."""
    zipped = exported(tmp_path, {"旧的": LAST_YEAR}, forever=("keep",))
    config = tmp_path / "config.toml"
    config.write_text("retention_days = 90\n")
    done = invoke("sessions", "import", str(zipped), "--db", str(tmp_path / "b.db"),
                  "--config", str(config), "--json", code=0)
    by_name = {one["session"]: one["past_retention"] for one in json.loads(done.stdout)["sessions"]}
    assert by_name["keep"] is None
    assert by_name["旧的"]["retention_days"] == 90
    idle = (utc_now() - parse_time(LAST_YEAR)).total_seconds() / 86400
    assert abs(by_name["旧的"]["idle_days"] - idle) < 1
