"""`sessions prune|retention`, retention at start-up, `/remember --for`, `facts list` expiry,
`sessions export --all` and `forget-me`, on plain and encrypted history files."""

from __future__ import annotations

import json
import os
import re
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cli_runner import invoke, repl
from file_hash import file_bytes
from in_a_terminal import in_a_terminal

from chatmem.errors import StoreError
from chatmem.store import Store

pytestmark = pytest.mark.usefixtures("history_key", "now_is_the_tests_start")
NOW = datetime.now(UTC)
"""The test's present: its histories' clocks count back from it, the commands it runs read
the real clock. Set when each test starts (now_is_the_tests_start)."""


@pytest.fixture
def now_is_the_tests_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """NOW read as the test starts, not as the module was imported: a run that reached a test
    more than half an hour after collecting it (the loaded machine) read a session made
    '12 hours ago' as idle 13 hours."""
    monkeypatch.setattr(f"{__name__}.NOW", datetime.now(UTC))


def history(db: Path, *, days_ago: float = 0) -> Store:
    """The test's history file (with the run's key), its clock `days_ago` in the past."""
    moment = NOW - timedelta(days=days_ago)
    return Store(db, key=os.environ.get("CHATMEM_KEY"), clock=lambda: moment)


def chat(db: Path, name: str, lines: list[str], *, days_ago: float = 0, user: str = "default",
         strategy: str = "entity") -> str:
    """The REPL on a history whose clock says `days_ago`; returns its stderr."""
    with history(db, days_ago=days_ago) as store:
        return repl(store, name, lines, user=user, strategy=strategy, user_facts=True)[1]


@pytest.fixture
def aged(tmp_path: Path) -> Path:
    """old: idle 45 days; recent: 5 days; keeper: 45 days but kept for good."""
    db = tmp_path / "h.db"
    chat(db, "old", ["My order is ZX-1001 for the teal sofa."], days_ago=45)
    chat(db, "keeper", ["Keep this forever."], days_ago=45)
    chat(db, "recent", ["The delivery is at the blue gate."], days_ago=5)
    assert invoke("sessions", "retention", "keeper", "forever", "--db", str(db)).stderr == (
        "session keeper is kept for good, whatever retention_days says\n")
    return db


def test_prune_older_than_with_a_dry_run_first(aged: Path) -> None:
    before = file_bytes(aged)
    dry = invoke("sessions", "prune", "--older-than", "30d", "--dry-run", "--db", str(aged))
    assert dry.exit_code == 0, dry.stderr
    assert dry.stderr == ("session old: idle 45 days, retention 30 days (1 turn, 2 messages)\n"
                          "would erase 1 session (2 messages)\n")
    assert file_bytes(aged) == before
    listed = invoke("sessions", "prune", "--older-than", "30d", "--dry-run", "--json",
                 "--db", str(aged))
    data = json.loads(listed.stdout)
    assert data["dry_run"] is True and [s["name"] for s in data["sessions"]] == ["old"]
    assert data["sessions"][0]["idle_days"] == pytest.approx(45, abs=0.1)

    done = invoke("sessions", "prune", "--older-than", "30d", "--db", str(aged))
    assert done.exit_code == 0
    assert done.stderr.endswith("erased 1 session (2 messages); the file was vacuumed\n")
    names = [r["name"] for r in json.loads(invoke("sessions", "list", "--json", "--db",
                                               str(aged)).stdout)]
    assert sorted(names) == ["keeper", "recent"]
    if "CHATMEM_KEY" not in os.environ:
        data_now = file_bytes(aged)
        assert b"blue gate" in data_now and b"teal sofa" not in data_now
        assert b"ZX-1001" not in data_now


def test_in_a_terminal_a_prune_asks_first(aged: Path) -> None:
    # `sessions delete` and `forget-me` ask at a terminal; a prune erased at once, so
    # --older-than 1h typed for 1d took today's chats for good. No terminal (cron, the
    # test above): it goes ahead as before.
    command = ["sessions", "prune", "--older-than", "30d", "--db", str(aged)]
    shown = in_a_terminal(command, "n")
    assert "session old: idle 45 days, retention 30 days (1 turn, 2 messages)" in shown
    assert "Erase 1 session (2 messages) for good? [y/N]" in shown
    assert "nothing was changed" in shown

    def names() -> list[str]:
        listed = invoke("sessions", "list", "--json", "--db", str(aged)).stdout
        return sorted(r["name"] for r in json.loads(listed))

    assert names() == ["keeper", "old", "recent"]
    shown = in_a_terminal(command, "y")
    assert shown.count("session old: idle 45 days") == 1  # listed once, before the question
    assert "erased 1 session (2 messages); the file was vacuumed" in shown
    assert names() == ["keeper", "recent"]


def test_prune_without_a_retention_says_what_to_do(aged: Path) -> None:
    result = invoke("sessions", "prune", "--db", str(aged))
    assert result.exit_code == 0
    said = ("nothing to prune: no session is past a retention; give --older-than, or set "
            "retention_days in the config (or `sessions retention` on one)\n")
    assert result.stderr == said
    # A session with a retention of its own, not past it: the same words are true of it.
    invoke("sessions", "retention", "recent", "30d", "--db", str(aged), code=0)
    assert invoke("sessions", "prune", "--dry-run", "--db", str(aged)).stderr == said


def test_a_bad_older_than_is_one_line(aged: Path) -> None:
    result = invoke("sessions", "prune", "--older-than", "soon", "--db", str(aged))
    assert (result.exit_code, result.stderr) == (
        2, "error: --older-than must be a length of time like 30d, 12h, 2w or 1y, got 'soon'\n")


def test_months_are_mo_and_a_bare_m_is_refused_everywhere(aged: Path) -> None:
    # `--older-than 6M` once meant six minutes and erased every session but the newest.
    before = file_bytes(aged)
    for text in ("6m", "6M"):
        result = invoke("sessions", "prune", "--older-than", text, "--db", str(aged))
        assert (result.exit_code, result.stderr) == (
            2, f"error: --older-than '{text}' is ambiguous: write 6min for minutes or 6mo for"
               " months\n")
    assert file_bytes(aged) == before
    kept = invoke("sessions", "prune", "--older-than", "1mo", "--json", "--db", str(aged))
    assert [s["name"] for s in json.loads(kept.stdout)["sessions"]] == ["old"]
    bad = invoke("sessions", "retention", "recent", "6m", "--db", str(aged))
    assert (bad.exit_code, bad.stderr) == (
        2, "error: DURATION '6m' is ambiguous: write 6min for minutes or 6mo for months\n")
    assert invoke("sessions", "retention", "recent", "6mo", "--db", str(aged)).stderr == (
        "session recent is erased after 180 days idle\n")
    said = chat(aged, "recent", ["/remember --for 3M door code: blue 7"])
    assert "error: --for '3M' is ambiguous: write 3min for minutes or 3mo for months" in said


def test_retention_days_is_applied_when_a_chat_starts(aged: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("retention_days = 30\n")
    started = invoke("chat", "recent", "--db", str(aged), "--config", str(config),
                  "--provider", "scripted", input="hello again\n")
    assert started.exit_code == 0, started.stderr
    assert ("retention: erased 1 session (2 messages) past their retention (old); the file was "
            "vacuumed") in started.stderr
    names = sorted(r["name"] for r in json.loads(invoke("sessions", "list", "--json", "--db",
                                                     str(aged)).stdout))
    assert names == ["keeper", "recent"]
    again = invoke("chat", "recent", "--db", str(aged), "--config", str(config),
                "--provider", "scripted", input="and again\n")
    assert "retention:" not in again.stderr


def test_a_session_keeps_its_own_retention(aged: Path, tmp_path: Path) -> None:
    shown = invoke("sessions", "retention", "recent", "--db", str(aged))
    assert shown.stderr == ("session recent follows the default (kept: no retention_days in "
                            "the config)\n")
    assert invoke("sessions", "retention", "recent", "3d", "--db", str(aged)).stderr == (
        "session recent is erased after 3 days idle\n")
    config = tmp_path / "config.toml"
    config.write_text("retention_days = 60\n")
    pruned = invoke("sessions", "prune", "--db", str(aged), "--config", str(config), "--json")
    assert [s["name"] for s in json.loads(pruned.stdout)["sessions"]] == ["recent"]
    assert invoke("sessions", "retention", "old", "default", "--db", str(aged),
               "--config", str(config)).stderr == (
        "session old follows the default (retention_days: 60 days idle)\n")
    bad = invoke("sessions", "retention", "old", "never", "--db", str(aged))
    assert (bad.exit_code, bad.stderr) == (
        2, "error: DURATION must be a length of time like 30d, 12h, 2w or 1y, got 'never'\n")


def test_a_day_is_singular_and_under_a_day_is_hours(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    for name, days_ago in (("杭州", 1.5), ("西湖", 1), ("早上", 0.5)):
        chat(db, name, ["我们五月去杭州旅行。"], days_ago=days_ago)
    dry = invoke("sessions", "prune", "--older-than", "3h", "--dry-run", "--db", str(db))
    assert dry.exit_code == 0, dry.stderr
    assert dry.stderr.splitlines()[:3] == [
        "session 杭州: idle 1.5 days, retention 3 hours (1 turn, 2 messages)",
        "session 西湖: idle 1 day, retention 3 hours (1 turn, 2 messages)",
        "session 早上: idle 12 hours, retention 3 hours (1 turn, 2 messages)"]
    # A session's own retention is kept in whole days: another length is refused, not rounded.
    for duration in ("1d", "24h"):
        assert invoke("sessions", "retention", "西湖", duration, "--db", str(db)).stderr == (
            "session 西湖 is erased after 1 day idle\n")
    for duration in ("1min", "12h", "36h", "1.5d"):
        refused = invoke("sessions", "retention", "西湖", duration, "--db", str(db))
        assert (refused.exit_code, refused.stderr) == (
            2, "error: DURATION must be whole days (a session's retention is kept in days,"
               f" like 1d, 2w or 1y), got '{duration}'\n")
    shown = invoke("sessions", "show", "西湖", "--db", str(db), "--json")
    assert json.loads(shown.stdout)["retention_days"] == 1
    assert re.search(r"retention\s+1 day idle\s*\n",
                     invoke("sessions", "show", "西湖", "--db", str(db)).stdout)
    short = invoke("sessions", "prune", "--older-than", "2min", "--dry-run", "--db", str(db))
    assert short.stderr.splitlines()[2] == (
        "session 早上: idle 12 hours, retention 2 minutes (1 turn, 2 messages)")
    config = tmp_path / "config.toml"
    config.write_text("retention_days = 1\n")
    assert invoke("sessions", "retention", "杭州", "--db", str(db), "--config",
                  str(config)).stderr == (
        "session 杭州 follows the default (retention_days: 1 day idle)\n")


def test_remember_for_a_while_then_it_expires(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    err = chat(db, "s", ["/remember --for 7d door code: blue 7", "/remember budget: 5000 EUR"],
               days_ago=10)
    until = (NOW - timedelta(days=3)).isoformat(timespec="minutes")[:16].replace("T", " ")
    assert "error" not in err
    with history(db, days_ago=10) as store:  # as it was stored then, each with its end
        said = store.facts.facts(session_id=store.sessions.session("s").id)
    assert [(f.id, f.key, f.value, f.scope, (f.expires_at or "")[:16].replace("T", " "))
            for f in said] == [(1, "door code", "blue 7", "session", until),
                               (2, "budget", "5000 EUR", "session", "")]
    # Seven days after it was said (three days ago) the door code was gone.
    rows = json.loads(invoke("facts", "list", "--json", "--db", str(db)).stdout)
    assert [(r["key"], r["expires_at"]) for r in rows] == [("budget", None)]
    chat(db, "s", ["/remember --for 2w door code: green 9"])
    rows = json.loads(invoke("facts", "list", "--json", "--db", str(db)).stdout)
    ends = {r["key"]: r["expires_at"] for r in rows}
    assert ends["door code"].startswith((NOW + timedelta(days=14)).date().isoformat())
    table = invoke("facts", "list", "--db", str(db)).stdout
    assert "expires" in table and re.search(r"in 13 d|in 14 d", table)
    bad = chat(db, "s", ["/remember --for soon x: y", "/remember --for"])
    assert "error: --for must be a length of time like 30d, 12h, 2w or 1y, got 'soon'" in bad
    assert "error: /remember: --for needs a value, e.g. --for 7d" in bad


@pytest.mark.parametrize(("zone", "day"), [("Asia/Tokyo", "2026-03-02"),
                                           ("America/Los_Angeles", "2026-03-01")])
def test_a_facts_end_is_said_as_its_day_in_the_users_zone(
        tmp_path: Path, zone: str, day: str) -> None:
    # 22:00 UTC on the 1st is 07:00 on the 2nd in Tokyo: the end was said as the UTC date.
    db, config = tmp_path / "h.db", tmp_path / "config.toml"
    chat(db, "s", ["/remember 门禁密码: 蓝色 7"])
    with history(db) as store:
        [fact] = store.facts.facts()
        store.retention.set_fact_expiry(fact.id, "2026-03-01T22:00:00.000+00:00")
    config.write_text(f'timezone = "{zone}"\n', encoding="utf-8")
    dry = invoke("sessions", "prune", "--dry-run", "--older-than", "1000y", "--db", str(db),
                 "--config", str(config))
    assert dry.exit_code == 0, dry.stderr
    assert f"fact {fact.id} 门禁密码 (session): its end was {day}\n" in dry.stderr
    listed = invoke("sessions", "prune", "--dry-run", "--json", "--db", str(db), "--config",
                    str(config), "--older-than", "1000y")
    assert [f["why"] for f in json.loads(listed.stdout)["facts"]] == [f"its end was {day}"]


def test_facts_list_shows_when_an_unused_fact_expires(tmp_path: Path) -> None:
    db, config = tmp_path / "h.db", tmp_path / "config.toml"
    chat(db, "s", ["My order number is ORD-7731."], days_ago=20)
    config.write_text("fact_idle_days = 30\n")
    [row] = json.loads(invoke("facts", "list", "--json", "--db", str(db), "--config",
                           str(config)).stdout)
    assert row["key"] == "order number"
    expires = datetime.fromisoformat(row["expires_at"])
    assert abs(expires - (NOW + timedelta(days=10))) < timedelta(minutes=1)
    assert re.search(r"in (9|10) d", invoke("facts", "list", "--db", str(db), "--config",
                                         str(config)).stdout)


# -- export --all and forget-me ------------------------------------------------------------


@pytest.fixture
def two_users(tmp_path: Path) -> Path:
    db = tmp_path / "h.db"
    chat(db, "ana-trip", ["My name is Anastazja Wolny.", "我们五月去杭州琉璃客栈。"], user="ana",
         strategy="summary")
    chat(db, "ana-work", ["The project code is QX-48213.", "My name is Anastazja Wolny."],
         user="ana")
    chat(db, "bob", ["My name is Bartholomew Quince."], user="bob")
    return db


def test_export_all_writes_one_archive_that_imports_back(two_users: Path, tmp_path: Path) -> None:
    archive = tmp_path / "everything.zip"
    done = invoke("sessions", "export", "--all", "-o", str(archive), "--db", str(two_users))
    assert done.exit_code == 0, done.stderr
    assert re.fullmatch(r"exported 3 sessions \(10 messages\), \d+ summary versions and 3 facts "
                        rf"to {re.escape(str(archive))}; the archive is not encrypted\n",
                        done.stderr)
    assert archive.stat().st_mode & 0o777 == 0o600
    with zipfile.ZipFile(archive) as zf:
        names = sorted(zf.namelist())
        manifest = json.loads(zf.read("manifest.json"))
        facts = json.loads(zf.read("facts.json"))
        summaries = json.loads(zf.read("summaries/ana-trip.json"))
        transcript = zf.read("sessions/ana-trip.jsonl")
    assert names == ["README.txt", "facts.json", "manifest.json", "sessions/ana-trip.jsonl",
                     "sessions/ana-work.jsonl", "sessions/bob.jsonl", "summaries/ana-trip.json",
                     "summaries/ana-work.json", "summaries/bob.json"]
    assert [s["name"] for s in manifest["sessions"]] == ["bob", "ana-work", "ana-trip"]
    assert {(f["key"], f["value"], f["scope"], f["user"]) for f in facts} == {
        ("name", "Anastazja Wolny", "user", "ana"), ("name", "Bartholomew Quince", "user", "bob"),
        ("project code", "QX-48213", "session", None)}
    assert [(s["strategy"], s["version"]) for s in summaries["summaries"]] == [
        ("summary", 1), ("summary", 2)]
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(transcript)
    assert invoke("sessions", "import", str(copy), "restored",
                  "--db", str(two_users)).exit_code == 0
    shown = json.loads(invoke("sessions", "show", "restored", "--json", "--db",
                           str(two_users)).stdout)
    original = json.loads(invoke("sessions", "show", "ana-trip", "--json", "--db",
                              str(two_users)).stdout)
    assert [m["content"] for m in shown["messages"]] == [m["content"]
                                                         for m in original["messages"]]
    again = invoke("sessions", "export", "--all", "-o", str(archive), "--db", str(two_users))
    assert (again.exit_code, again.stderr) == (
        2, f"error: {archive} already exists; add --force to overwrite it\n")


@pytest.mark.parametrize(("args", "message"), [
    (["--all"], "missing SESSION, or --all with -o FILE.zip"),
    ([], "missing SESSION, or --all with -o FILE.zip"),
    (["bob", "--all", "-o", "x.zip"], "give a SESSION or --all, not both"),
    (["--all", "-o", "x.jsonl"], "--all writes a zip archive: name it FILE.zip, not 'x.jsonl'"),
])
def test_export_all_usage_errors(two_users: Path, args: list[str], message: str) -> None:
    result = invoke("sessions", "export", *args, "--db", str(two_users))
    assert (result.exit_code, result.stderr) == (2, f"error: {message}\n")


def test_export_all_takes_the_archive_as_its_one_word(two_users: Path, tmp_path: Path) -> None:
    """`sessions export --all out.zip` said "give a SESSION or --all, not both"."""
    archive = tmp_path / "全部.ZIP"
    result = invoke("sessions", "export", "--all", str(archive), "--db", str(two_users))
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith("exported 3 sessions") and zipfile.is_zipfile(archive)
    refused = invoke("sessions", "export", "--all", "ana-trip", "--db", str(two_users))
    assert (refused.exit_code, refused.stderr) == (
        2, "error: give a SESSION or --all, not both\n")


def test_forget_me_erases_the_profile_from_file_wal_and_shm(two_users: Path) -> None:
    assert invoke("sessions", "retention", "ana-work", "forever", "--db",
               str(two_users)).exit_code == 0
    dry = invoke("forget-me", "--user", "ana", "--dry-run", "--db", str(two_users))
    # A session without a retention has none (not "0 days"); "forever" is kept for good.
    assert [re.sub(r" idle [^,]+,", "", line) for line in dry.stderr.splitlines()[:2]] == [
        "session ana-trip: no retention (2 turns, 4 messages)",
        "session ana-work: kept for good by its own retention (2 turns, 4 messages)"]
    assert dry.stderr.splitlines()[-1] == (
        "would erase 2 sessions (8 messages) and 1 fact of user ana")
    refused = invoke("forget-me", "--user", "ana", "--db", str(two_users), input="n\n")
    assert refused.exit_code == 1
    with history(two_users) as reader:  # an idle reader keeps the WAL and shm in place
        done = invoke("forget-me", "--user", "ana", "--db", str(two_users), input="y\n")
        assert done.exit_code == 0, done.stderr
        assert done.stderr.endswith(
            "erased 2 sessions (8 messages) and 1 fact of user ana; the file was vacuumed\n")
        assert {p.name for p in two_users.parent.iterdir()} >= {"h.db-wal", "h.db-shm"}
        data = file_bytes(two_users)
        for gone in ("Anastazja", "杭州琉璃客栈", "QX-48213", "ana-trip", "ana-work"):
            assert gone.encode() not in data, gone
        if "CHATMEM_KEY" not in os.environ:
            assert b"Bartholomew Quince" in data  # the grep does see what is kept
        assert [r.name for r in reader.sessions.list_sessions()] == ["bob"]
    nothing = invoke("forget-me", "--user", "ana", "--yes", "--db", str(two_users))
    assert nothing.stderr == "user ana has no sessions or facts here\n"


def test_a_retention_that_cannot_be_applied_does_not_stop_the_chat(
    aged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chatmem.errors import StoreError
    from chatmem.privacy import retention

    def busy(*args: object, **kwargs: object) -> None:
        raise StoreError(f"{aged} is busy: another process held it for over 5 s; try again")

    monkeypatch.setattr(retention, "prune", busy)
    config = tmp_path / "config.toml"
    config.write_text("retention_days = 30\n")
    started = invoke("chat", "recent", "--db", str(aged), "--config", str(config),
                  "--provider", "scripted", input="hello\n")
    assert started.exit_code == 0, started.stderr
    assert (f"retention not applied this time: {aged} is busy: another process held it for "
            "over 5 s; try again") in started.stderr
    assert started.stdout == "echo #1: hello\n"


def test_forget_me_reaches_a_replay_saved_from_the_users_own_session(tmp_path: Path) -> None:
    """`replay SESSION --save-as COPY` keeps a copy of the user's conversation: it is theirs,
    so forget-me erases it with the rest."""
    db = str(tmp_path / "h.db")
    invoke("chat", "私人", "--provider", "scripted", "--db", db,
           input="我的名字是李雷，住在杭州西湖区\nmy passport is E12345678\n", code=0)
    invoke("replay", "私人", "-s", "window", "--save-as", "私人副本", "--db", db, code=0)
    with history(Path(db)) as store:
        assert store.sessions.session("私人副本").user == store.sessions.session("私人").user
    done = invoke("forget-me", "--yes", "--db", db, code=0)
    assert "erased 2 sessions" in done.stderr
    assert b"E12345678" not in file_bytes(Path(db))


def test_a_length_of_time_written_in_chinese_reads_as_the_english_one(aged: Path) -> None:
    """`prune --older-than 30天` and `retention NAME 2个月` were refused: "must be a length
    of time like 30d, 12h, 2w or 1y, got '30天'"."""
    english = invoke("sessions", "prune", "--older-than", "30d", "--dry-run", "--db", str(aged))
    chinese = invoke("sessions", "prune", "--older-than", "30天", "--dry-run", "--db", str(aged))
    assert (chinese.exit_code, chinese.stderr) == (0, english.stderr)
    assert "session old: idle 45 days" in chinese.stderr
    kept = invoke("sessions", "retention", "recent", "2个月", "--db", str(aged))
    assert (kept.exit_code, kept.stderr) == (0, "session recent is erased after 60 days idle\n")


@pytest.mark.parametrize("args", [
    ["sessions", "retention", "s", "9999999999d"],
    ["sessions", "prune", "--older-than", "9000y"],
])
def test_a_duration_past_the_calendar_is_one_line(tmp_path: Path, args: list[str]) -> None:
    db = str(tmp_path / "h.db")
    invoke("chat", "s", "--provider", "scripted", "--db", db, input="hi\n", code=0)
    done = invoke(*args, "--db", db)
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert done.stderr.strip().endswith(f"must be at most 1000y, got '{args[-1]}'")


def test_remember_for_longer_than_the_calendar_holds_is_refused_and_the_chat_goes_on(
        tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    done = invoke("chat", "s", "--provider", "scripted", "--db", db,
                  input="/remember --for 9000y city: 杭州\nnext\n")
    assert "Traceback" not in done.output
    assert "--for must be at most 1000y, got '9000y'" in done.stderr
    assert "echo #1: next" in done.stdout


@pytest.mark.parametrize("days", [10**20, 9 * 10**18, 365_001])
def test_a_transcript_kept_past_the_calendar_is_one_line_and_nothing_is_imported(
        tmp_path: Path, days: int) -> None:
    db, transcript = str(tmp_path / "h.db"), tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in (
        {"chatmem": 1, "title": "旅行", "retention_days": days},
        {"role": "user", "content": "去杭州"})) + "\n", encoding="utf-8")
    invoke("chat", "s", "--provider", "scripted", "--db", db, input="hi\n", code=0)
    done = invoke("sessions", "import", str(transcript), "--db", db)
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert done.stderr.strip().endswith(f"t.jsonl:1: header 'retention_days' must be at most"
                                        f" 365000 (1000 years), got {days}")
    assert "旅行" not in invoke("sessions", "list", "--db", db, code=0).stdout


def test_the_store_refuses_a_retention_past_the_calendar(tmp_path: Path) -> None:
    with history(tmp_path / "h.db") as store:
        session = store.sessions.create_session("s", "buffer")
        store.retention.set_retention(session.id, 365_000)
        with pytest.raises(StoreError, match="at most 365000 days"):
            store.retention.set_retention(session.id, 10**20)
        assert store.sessions.session("s").retention_days == 365_000
