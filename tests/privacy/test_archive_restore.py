"""`sessions import ARCHIVE.zip`: an archive of `sessions export --all` restores every
session in its user profile with its retention, and every fact, all or nothing."""

from __future__ import annotations

import json
import shlex
import sqlite3
import zipfile
from pathlib import Path
from typing import Any

import pytest
from archive_edits import with_member_changed
from cli_runner import chat, invoke, run
from conftest import History
from documents import png

from chatmem.images import read_image
from chatmem.store import Store

ZOE = "Zoë"


def rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as con:
        return sorted(con.execute(sql).fetchall(), key=repr)


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    a = tmp_path / "a.db"
    chat(a, "z", ["/remember --user city: Paris", "/remember --user city: Zürich",
                  "/remember lang: de", "hi"], env={"CHATMEM_USER": ZOE}, code=0)
    chat(a, "旅行", ["/remember --user 城市: 杭州", "/remember --user 旧: 忘", "我们五月去杭州。"],
         env={"CHATMEM_USER": "李雷"}, code=0)
    run(a, "facts", "forget", "旧", code=0)
    chat(a, "keep", ["hi"], code=0)
    run(a, "sessions", "retention", "keep", "forever", code=0)
    run(a, "sessions", "retention", "旅行", "30d", code=0)
    zipped = tmp_path / "all.zip"
    run(a, "sessions", "export", "--all", "-o", str(zipped), code=0)
    return zipped


SESSIONS = 'SELECT name, "user", retention_days FROM sessions'
FACTS = ('SELECT f.scope, f."user", s.name, f.key, f.value, f.deleted_at IS NOT NULL,'
         ' f.created_at, (SELECT group_concat(value) FROM fact_history WHERE fact_id = f.id)'
         ' FROM facts f LEFT JOIN sessions s ON s.id = f.session_id')
MESSAGES = ('SELECT s.name, m.position, m.role, m.content, m.created_at FROM messages m'
            ' JOIN sessions s ON s.id = m.session_id')


def test_an_archive_restores_sessions_users_retention_facts_and_messages(
        archive: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    result = run(b, "sessions", "import", str(archive), code=0)
    assert result.stderr.splitlines()[-1] == f"restored 3 sessions and 4 facts from {archive}"
    assert "into session keep (user default, kept for good)" in result.stderr
    assert rows(b, SESSIONS) == rows(a, SESSIONS) == sorted(
        [("z", ZOE, None), ("旅行", "李雷", 30), ("keep", "default", 0)], key=repr)
    assert rows(b, FACTS) == rows(a, FACTS)
    assert ("user", ZOE, None, "city", "Zürich", 0) in [r[:6] for r in rows(b, FACTS)]
    assert ("user", "李雷", None, "旧", "忘", 1) in [r[:6] for r in rows(b, FACTS)]
    assert rows(b, MESSAGES) == rows(a, MESSAGES)
    # The profile is one: forget-me reaches the restored session and its profile's facts.
    dry = run(b, "forget-me", "--user", ZOE, "--dry-run", code=0).stderr
    assert "would erase 1 session (2 messages) and 1 fact of user Zoë" in dry


def test_a_name_the_history_has_imports_nothing(archive: Path, tmp_path: Path) -> None:
    b = tmp_path / "b.db"
    chat(b, "keep", ["mine"], code=0)
    result = run(b, "sessions", "import", str(archive), code=None)
    assert result.exit_code != 0 and result.stderr.count("\n") == 1
    assert "'keep' already exists" in result.stderr
    assert rows(b, SESSIONS) == [("keep", "default", None)]
    assert rows(b, "SELECT key FROM facts") == []


def test_a_profile_fact_the_history_holds_otherwise_imports_nothing(
        archive: Path, tmp_path: Path) -> None:
    b = tmp_path / "b.db"
    chat(b, "mine", ["/remember --user city: Lyon"], env={"CHATMEM_USER": ZOE}, code=0)
    result = run(b, "sessions", "import", str(archive), code=None)
    assert result.exit_code != 0 and result.stderr.count("\n") == 1
    assert "'city' already" in result.stderr
    assert [name for name, *_ in rows(b, SESSIONS)] == ["mine"]


def test_an_archive_imported_again_skips_the_profile_facts_it_holds_already(
        archive: Path, tmp_path: Path) -> None:
    """Its sessions renamed, an archive imports again: the profile's live facts holding the
    same values are not a conflict (each stays one live fact), only another value is."""
    b = tmp_path / "b.db"
    run(b, "sessions", "import", str(archive), code=0)
    for name in ("z", "旅行", "keep"):
        run(b, "sessions", "rename", name, f"{name}-1", code=0)
    result = run(b, "sessions", "import", str(archive), code=0)
    assert result.stderr.splitlines()[-1] == f"restored 3 sessions and 2 facts from {archive}"
    live = rows(b, 'SELECT "user", key, value FROM facts WHERE scope = \'user\''
                   ' AND deleted_at IS NULL')
    assert live == sorted([(ZOE, "city", "Zürich"), ("李雷", "城市", "杭州")], key=repr)
    assert len(rows(b, SESSIONS)) == 6


@pytest.mark.parametrize(("members", "said"), [
    (None, "not a zip archive"),
    ({"notes.txt": "hello"}, "no manifest.json"),
    ({"manifest.json": "{"}, "manifest.json: not valid JSON"),
    ({"manifest.json": json.dumps({"sessions": [{"name": "x",
                                                  "transcript": "sessions/x.jsonl"}]})},
     "sessions/x.jsonl is listed in manifest.json but missing"),
])
def test_a_corrupt_or_foreign_zip_is_one_line(tmp_path: Path, members: dict[str, str] | None,
                                              said: str) -> None:
    path, b = tmp_path / "x.zip", tmp_path / "b.db"
    if members is None:
        path.write_bytes(b"PK\x03\x04 not really")
    else:
        with zipfile.ZipFile(path, "w") as zf:
            for name, text in members.items():
                zf.writestr(name, text)
    result = invoke("sessions", "import", str(path), "--db", str(b), code=None)
    assert result.exit_code != 0 and result.stderr.count("\n") == 1
    assert said in result.stderr, result.stderr
    assert not b.exists() or rows(b, SESSIONS) == []


def test_a_damaged_fact_names_it_and_imports_nothing(archive: Path, tmp_path: Path) -> None:
    b = tmp_path / "b.db"
    damaged = with_member_changed(archive, tmp_path / "d.zip", "facts.json",
                                  lambda facts: facts[1].update(created_at="yesterday"))
    result = invoke("sessions", "import", str(damaged), "--db", str(b), code=None)
    assert result.exit_code != 0
    assert result.stderr == (f"error: {damaged}: facts.json: fact 2: 'created_at' must be an"
                             " ISO-8601 time\n")
    assert not b.exists() or rows(b, SESSIONS) == []


def test_one_exported_session_keeps_its_profile_and_retention(archive: Path,
                                                             tmp_path: Path) -> None:
    a, b, one = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "trip.jsonl"
    run(a, "sessions", "export", "旅行", "-o", str(one), code=0)
    header = json.loads(one.read_text(encoding="utf-8").splitlines()[0])
    assert (header["user"], header["retention_days"]) == ("李雷", 30)
    result = run(b, "sessions", "import", str(one), code=0)
    assert "is in user 李雷's profile" in result.stderr
    assert rows(b, SESSIONS) == [("旅行", "李雷", 30)]
    with zipfile.ZipFile(archive) as zf:
        assert "sessions import THIS.zip" in zf.read("README.txt").decode()


def made_archive(path: Path, listed: list[tuple[str, str]],
                 members: dict[str, str]) -> Path:
    """An archive whose manifest lists `listed` (session name, member) and holds `members`."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in members.items():
            zf.writestr(name, text)
        zf.writestr("manifest.json", json.dumps(
            {"sessions": [{"name": n, "transcript": m} for n, m in listed]}))
    return path


def transcript(text: str) -> str:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in (
        {"chatmem": 1}, {"role": "user", "content": text},
        {"role": "assistant", "content": "好的"}))


@pytest.mark.parametrize(("listed", "said"), [
    # One member read again and again would pass each member's limit many times over.
    ([("a", "t.jsonl"), ("b", "t.jsonl")], "manifest.json: t.jsonl is listed twice"),
    ([("旅行", "t.jsonl"), ("旅行", "u.jsonl")],
     "manifest.json: two sessions named '旅行' in the archive"),
])
def test_a_member_or_a_name_listed_twice_is_one_line(
        tmp_path: Path, listed: list[tuple[str, str]], said: str) -> None:
    b = tmp_path / "b.db"
    path = made_archive(tmp_path / "x.zip", listed,
                        {"t.jsonl": transcript("去杭州"), "u.jsonl": transcript("hi")})
    result = invoke("sessions", "import", str(path), "--db", str(b), code=None)
    assert result.exit_code != 0 and result.stderr.count("\n") == 1
    assert result.stderr == f"error: {path}: {said}\n"
    assert not b.exists() or rows(b, SESSIONS) == []


def test_the_members_together_have_a_limit(tmp_path: Path) -> None:
    from chatmem.errors import TranscriptError
    from chatmem.privacy.restore import read_archive

    text = transcript("x" * 1000)
    path = made_archive(tmp_path / "x.zip", [("a", "a.jsonl"), ("b", "b.jsonl")],
                        {"a.jsonl": text, "b.jsonl": text})
    assert [s.name for s in read_archive(path, most_bytes=3 * len(text)).sessions] == ["a", "b"]
    with pytest.raises(TranscriptError) as raised:
        read_archive(path, most_bytes=len(text) + 500)
    with zipfile.ZipFile(path) as zf:
        total = sum(item.file_size for item in zf.infolist())
    assert str(raised.value) == (f"{path}: {total:,} bytes unpacked; at most"
                                 f" {len(text) + 500:,} are read from one archive")


def test_transcripts_are_read_one_at_a_time_and_a_damaged_one_imports_nothing(
        tmp_path: Path) -> None:
    from chatmem.errors import TranscriptError
    from chatmem.privacy.restore import read_archive

    b = tmp_path / "b.db"
    path = made_archive(tmp_path / "x.zip", [("a", "a.jsonl"), ("b", "b.jsonl")],
                        {"a.jsonl": transcript("hi"), "b.jsonl": '{"chatmem": 1}\n{"role"\n'})
    transcripts = read_archive(path).transcripts()  # nothing parsed yet: read as restored
    listed, first = next(transcripts)
    assert (listed.name, first.messages[0].content) == ("a", "hi")
    with pytest.raises(TranscriptError, match=r"b\.jsonl"):
        next(transcripts)
    result = invoke("sessions", "import", str(path), "--db", str(b), code=None)
    assert result.exit_code != 0 and result.stderr.count("\n") == 1
    assert "b.jsonl" in result.stderr
    assert not b.exists() or rows(b, SESSIONS) == []


def test_a_restored_session_keeps_its_corrections_and_forgotten_facts(
        tmp_path: Path, history: History) -> None:
    """The extractor does not read the restored turns again: turn 1's Paris stays behind
    the /remember, the forgotten name stays forgotten (both came back)."""
    a, zipped = tmp_path / "src.db", tmp_path / "f2.zip"
    chat(a, "f2", ["I live in Paris.", "My name is Ada.", "/remember city: Lyon", "ok"],
         "-s", "entity", code=0)
    run(a, "facts", "forget", "name", code=0)
    chat(a, "长谈", ["我们五月去杭州旅行", "预算是五千元", "再说说住宿"], "-s", "summary", code=0)
    run(a, "sessions", "export", "--all", "-o", str(zipped), code=0)
    b = history.location
    result = run(b, "sessions", "import", str(zipped), code=0)
    assert result.stderr.splitlines()[-1] == (
        "not restored: 3 summary versions in summaries/ and the details they pinned (kept"
        " there to read); a summarising strategy summarises the restored turns again")
    chat(b, "f2", ["hello again"], code=0)
    with history.open() as store:
        sid = store.sessions.session("f2").id
        facts = store.facts.facts(session_id=sid)
        assert [(f.key, f.value) for f in facts] == [("city", "Lyon")]
        assert [h.value for h in store.facts.fact_history([facts[0].id])[facts[0].id]] == [
            "Paris"]


def test_an_archive_holds_no_images_and_export_and_import_say_how_many_stay_behind(
        tmp_path: Path) -> None:
    """Images (up to 20 MB each) stay in the history: README.txt says so, the manifest
    counts them, and both the export and the import say how many were left out."""
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    chat(a, "照片", ["hi"], code=0)
    with Store(a) as store:
        images = [read_image(png(30, 20)), read_image(png(20, 30))]
        store.images.keep_images(store.sessions.session("照片").id,
                                 [i for i in images if i is not None])
    zipped = tmp_path / "all.zip"
    exported = run(a, "sessions", "export", "--all", "-o", str(zipped), code=0).stderr
    assert exported.splitlines()[-1] == (
        "not in the archive: 2 images sent with messages (an archive keeps none; chatmem"
        " sessions copy --to FILE.db does)")
    with zipfile.ZipFile(zipped) as zf:
        assert json.loads(zf.read("manifest.json"))["images_left_out"] == 2
        assert "Not in it: the images sent with messages" in zf.read("README.txt").decode()
        assert not [n for n in zf.namelist() if not n.endswith((".json", ".jsonl", ".txt"))]
    imported = run(b, "sessions", "import", str(zipped), code=0).stderr
    assert imported.splitlines()[-1] == (
        "not restored: 2 images sent with these sessions' messages, which the archive does"
        " not hold (they stay in the history it was exported from)")


TIMES = "SELECT name, created_at, updated_at FROM sessions"


def test_restored_sessions_keep_when_they_were_made_and_last_used(tmp_path: Path) -> None:
    a, b, zipped = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "all.zip"
    for name in ("old", "旧的", "new"):
        chat(a, name, ["hi"], code=0)
    with sqlite3.connect(a) as con:
        for name, day in (("old", "2026-01-02"), ("旧的", "2026-01-05"), ("new", "2026-01-09")):
            con.execute("UPDATE sessions SET created_at = ?, updated_at = ? WHERE name = ?",
                        [f"{day}T08:00:00.000+00:00", f"{day}T09:30:00.000+00:00", name])
    run(a, "sessions", "export", "--all", "-o", str(zipped), code=0)
    run(b, "sessions", "import", str(zipped), code=0)
    assert rows(b, TIMES) == rows(a, TIMES)
    listed = json.loads(run(b, "sessions", "list", "--json", code=0).stdout)
    assert [s["name"] for s in listed] == ["new", "旧的", "old"]
    # Idle since January: the restore did not restart retention's clock.
    dry = json.loads(run(b, "sessions", "prune", "--older-than", "30d", "--dry-run", "--json",
                         code=0).stdout)
    assert sorted(s["name"] for s in dry["sessions"]) == sorted(["new", "old", "旧的"])


def test_sessions_restored_into_postgresql_keep_their_times(tmp_path: Path, pg_url: str) -> None:
    a, zipped = tmp_path / "a.db", tmp_path / "all.zip"
    for name in ("old", "new"):
        chat(a, name, ["hi"], code=0)
    with sqlite3.connect(a) as con:
        con.execute("UPDATE sessions SET created_at = '2026-01-02T08:00:00.000+00:00',"
                    " updated_at = '2026-01-02T09:00:00.000+00:00' WHERE name = 'old'")
    run(a, "sessions", "export", "--all", "-o", str(zipped), code=0)
    run(pg_url, "sessions", "import", str(zipped), code=0)
    listed = json.loads(run(pg_url, "sessions", "list", "--json", code=0).stdout)
    assert [s["name"] for s in listed] == ["new", "old"]
    dry = json.loads(run(pg_url, "sessions", "prune", "--older-than", "30d", "--dry-run",
                         "--json", code=0).stdout)
    assert [s["name"] for s in dry["sessions"]] == ["old"]


@pytest.mark.parametrize("value", ["yesterday", 17, "2026-13-01T00:00:00"])
def test_a_manifest_time_that_is_no_time_names_the_session_and_imports_nothing(
        archive: Path, tmp_path: Path, value: object) -> None:
    b = tmp_path / "b.db"
    named = ""

    def misdate(manifest: dict[str, Any]) -> None:
        nonlocal named
        manifest["sessions"][0]["updated_at"] = value
        named = manifest["sessions"][0]["name"]

    damaged = with_member_changed(archive, tmp_path / "d.zip", "manifest.json", misdate)
    result = invoke("sessions", "import", str(damaged), "--db", str(b), code=None)
    assert result.exit_code != 0 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: {damaged}: manifest.json: session {named!r}:"
                                    " 'updated_at' must be an ISO-8601 time")
    assert not b.exists() or rows(b, SESSIONS) == []


def test_an_archive_that_does_not_date_its_sessions_restores_them_as_before(
        archive: Path, tmp_path: Path) -> None:
    b = tmp_path / "b.db"

    def undate(manifest: dict[str, Any]) -> None:
        for listed in manifest["sessions"]:
            listed.pop("created_at", None)
            listed.pop("updated_at", None)

    older = with_member_changed(archive, tmp_path / "o.zip", "manifest.json", undate)
    run(b, "sessions", "import", str(older), code=0)
    assert len(rows(b, SESSIONS)) == 3


@pytest.mark.parametrize(("user", "key", "theirs", "mine", "shown"), [
    (ZOE, "home city", "Paris", "Lyon", "chatmem facts forget 'home city' --user Zoë"),
    ("李雷", "家乡 城市", "杭州", "北京", "chatmem facts forget '家乡 城市' --user 李雷"),
])
def test_a_profile_fact_clash_names_a_command_that_works_pasted(
        tmp_path: Path, user: str, key: str, theirs: str, mine: str, shown: str) -> None:
    a, b, zipped = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "all.zip"
    chat(a, "theirs", [f"/remember --user {key}: {theirs}"], env={"CHATMEM_USER": user}, code=0)
    run(a, "sessions", "export", "--all", "-o", str(zipped), code=0)
    chat(b, "mine", [f"/remember --user {key}: {mine}"], env={"CHATMEM_USER": user}, code=0)
    refused = run(b, "sessions", "import", str(zipped), code=None).stderr
    assert shown in refused, refused
    command = refused.split("forget one (", 1)[1].split(") and import again", 1)[0]
    # Pasted as the configured default user: --user reaches the profile that clashed.
    run(b, *shlex.split(command)[1:], code=0)
    run(b, "sessions", "import", str(zipped), code=0)
    live = rows(b, 'SELECT "user", key, value FROM facts WHERE deleted_at IS NULL')
    assert live == [(user, key, theirs)]


def test_a_fact_time_after_the_export_is_the_exports(archive: Path, tmp_path: Path) -> None:
    """A fact's times in 9000 were restored as written: used "then", it never went idle."""
    def ahead(facts: list[dict[str, Any]]) -> None:
        for fact in facts:
            for key in ("created_at", "updated_at", "used_at"):
                fact[key] = "9000-01-01T00:00:00.000+00:00"

    future = with_member_changed(archive, tmp_path / "f.zip", "facts.json", ahead)
    with zipfile.ZipFile(archive) as zf:
        exported = json.loads(zf.read("manifest.json"))["exported_at"]
    b = tmp_path / "b.db"
    run(b, "sessions", "import", str(future), code=0)
    times = rows(b, "SELECT created_at, updated_at, used_at FROM facts")
    assert times and all(t is None or t[:19] <= exported[:19] for row in times for t in row)


def lying_archive(path: Path, member: str, inflated: int, said: int) -> Path:
    """A zip whose `member` inflates to `inflated` bytes while its headers say `said`."""
    import struct

    chunk = b" " * 2**20
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf, zf.open(member, "w") as out:
        for _ in range(inflated // len(chunk)):
            out.write(chunk)
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, 22, said)  # the local header's uncompressed size
    central = data.find(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, said)  # the central directory's
    path.write_bytes(bytes(data))
    return path


def test_a_member_larger_than_its_header_says_is_not_inflated_whole(tmp_path: Path) -> None:
    """A hostile archive of 65 KB whose manifest said 100 bytes inflated 64 MB in one piece
    (an 800 KB one took 1.7 GB) before its checksum failed: only the size said is read."""
    import tracemalloc

    from chatmem.errors import TranscriptError
    from chatmem.privacy.restore import read_archive

    path = lying_archive(tmp_path / "x.zip", "manifest.json", 64 * 2**20, 100)
    assert path.stat().st_size < 2**20
    tracemalloc.start()
    try:
        with pytest.raises(TranscriptError) as raised:
            read_archive(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "damaged" in str(raised.value)
    assert peak < 8 * 2**20, peak
