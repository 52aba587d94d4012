"""Junk everywhere: transcripts, config files, names, parameters, search queries, damaged
databases. Always one line and an exit code from the table in RELIABILITY.md (1 or 2),
never a traceback, and nothing already stored changes."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cli_runner import invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matches import matches
from registered import parse_spec

from chatmem.config.loader import read_config_file
from chatmem.errors import ChatmemError, ExitCode
from chatmem.store import Store
from chatmem.store.session_names import SESSION_NAME, check_session_name
from chatmem.transcripts.reader import MAX_MESSAGE_CHARACTERS, parse_transcript

JUNK = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["role", "content", "id", "ts", "probe", "expect_ids", "expect_text",
                         "chatmem", "messages", "title", "system", "x"]), inner, max_size=5),
    max_leaves=12)


@JUNK
@given(st.one_of(st.text(), st.binary().map(lambda b: b.decode("utf-8", "replace")),
                 st.lists(json_values, max_size=6).map(
                     lambda items: "\n".join(json.dumps(i) for i in items)),
                 json_values.map(json.dumps)))
def test_any_transcript_text_parses_or_is_one_transcript_error(text: str) -> None:
    try:
        parse_transcript(text, "junk.jsonl")
    except ChatmemError as e:
        assert "\n" not in str(e) and str(e).startswith("junk.jsonl")


@pytest.mark.parametrize(("text", "message"), [
    ("[" * 100_000, "junk.jsonl: not readable JSON (nested too deeply)"),
    ('{"role": "user", "content": "x", "id": ' + "9" * 5000 + "}",
     "junk.jsonl:1: not readable JSON (a number too long)"),
    ('{"role": "user", "content": "' + "x" * (MAX_MESSAGE_CHARACTERS + 1) + '"}',
     f"junk.jsonl:1: a message of {MAX_MESSAGE_CHARACTERS + 1:,} characters; at most"
     f" {MAX_MESSAGE_CHARACTERS:,} are imported"),
    ('{"role": "tool", "content": "x"}',
     "junk.jsonl:1: tool calls are not taken as chatmem turns; leave the tool messages and"
     " tool_calls out to import the rest"),
    ('{"role": "robot", "content": "x"}',
     "junk.jsonl:1: role must be user, assistant, system or developer (got 'robot')"),
])
def test_hostile_transcripts_are_one_line(text: str, message: str) -> None:
    with pytest.raises(ChatmemError) as caught:
        parse_transcript(text, "junk.jsonl")
    assert str(caught.value) == message


def test_a_lone_surrogate_and_a_nul_byte_are_imported_as_text(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"role": "user", "content": "a \\ud800 b \\u0000 c"}\n'
                    '{"role": "assistant", "content": "ok"}\n', encoding="utf-8")
    db = tmp_path / "h.db"
    result = invoke("sessions", "import", str(path), "--name", "t", "--db", str(db))
    assert result.exit_code == 0, result.stderr
    with Store(db) as store:
        session_id = store.sessions.session("t").id
        assert store.history.messages(session_id)[0].content == "a \ufffd b \x00 c"


def test_a_failed_import_leaves_no_session_behind(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import chatmem.store.sqlite_opening as connection

    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"role": r, "content": f"message {i} " * 300}) + "\n"
                            for i, r in enumerate(["user", "assistant"] * 20)), encoding="utf-8")
    db = tmp_path / "h.db"
    Store(db).close()
    opened = connection.connect

    def small_disk(p: str | Path, key: str | None = None, **how: Any) -> sqlite3.Connection:
        conn = opened(p, key, **how)
        conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
        return conn

    monkeypatch.setattr(connection, "connect", small_disk)
    result = invoke("sessions", "import", str(path), "--name", "t", "--db", str(db))
    assert result.exit_code != 0 and result.stderr.count("\n") == 1, result.stderr
    monkeypatch.undo()
    with Store(db) as store:
        assert store.sessions.find_session("t") is None
    result = invoke("sessions", "import", str(path), "--name", "t", "--db", str(db))
    assert result.exit_code == 0, result.stderr  # the retry is not blocked


@JUNK
@given(st.text(max_size=200))
def test_any_config_text_loads_or_is_one_config_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    try:
        read_config_file(path)
    except ChatmemError as e:
        assert "\n" not in str(e) and str(e).startswith(str(path))


@JUNK
@given(st.text(max_size=80))
def test_any_strategy_spec_parses_or_is_one_strategy_error(spec: str) -> None:
    try:
        parse_spec(spec, {})
    except ChatmemError as e:
        assert str(e) and "\n" not in str(e)


@JUNK
@given(st.one_of(st.text(max_size=300), st.from_regex(SESSION_NAME, fullmatch=True)))
def test_any_session_name_is_accepted_or_refused_in_one_line(name: str) -> None:
    try:
        check_session_name(name)
    except ChatmemError as e:
        assert str(e) and "\n" not in str(e)  # a newline in the name is shown escaped
    else:
        # An accepted name is one shell word and one file name.
        assert 1 <= len(name) <= 64 and name[0] not in "-._+"
        assert not any(c.isspace() or c in "/\\" for c in name), name


SEARCHED = {"我们五月去杭州 AND x": ["杭州", "五月"], "NEAR(a b) \"q": ["near", "NEAR"]}
"""The messages the search tests index, and words each is found by."""
query_junk = st.lists(st.one_of(
    st.sampled_from(['"', "*", "-", ":", "(", ")", "^", "+", "{", "}", "'", "AND", "OR",
                     "NOT", "NEAR", "。", "，", " "]),
    st.text(max_size=8)), max_size=6).map("".join)


@JUNK
@given(query_junk, st.sampled_from(["", "-", '"', "(", "^", "+"]),
       st.sampled_from([(word, message) for message, words in SEARCHED.items()
                        for word in words]), query_junk)
def test_any_search_query_is_answered(store: Store, before: str, operator: str,
                                      searched: tuple[str, str], after: str) -> None:
    """FTS5's syntax (a leading - is its NOT) is plain text: a word of a message is found
    whatever else the query holds."""
    session = store.sessions.find_session("s") or store.sessions.create_session("s", "retrieval")
    if not store.history.messages(session.id):
        store.history.import_messages(session.id, [
            {"role": role, "content": content}
            for role, content in zip(("user", "assistant"), SEARCHED, strict=True)])
    word, message = searched
    found = [record.content for record, _ in matches(store, session.id,
                                                         f"{before} {operator}{word} {after}")]
    assert message in found


@pytest.fixture(scope="module")
def good_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("good") / "h.db"
    invoke("chat", "s", "--db", str(db), "--provider", "scripted", "-s", "entity",
           input="my name is Ada\nwe fly to Rome on 2026-05-01\n", code=0)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


@pytest.mark.parametrize("seed", range(12))
def test_a_truncated_or_byte_flipped_file_is_one_line_and_left_as_it_was(
    tmp_path: Path, good_file: Path, seed: int
) -> None:
    rng = random.Random(seed)
    db = tmp_path / "h.db"
    shutil.copy(good_file, db)
    data = bytearray(db.read_bytes())
    if seed % 2:
        data = data[: rng.randrange(1, len(data))]
    else:
        for _ in range(rng.randint(1, 40)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    db.write_bytes(bytes(data))
    for args in (["sessions", "list"], ["chat", "s", "--provider", "scripted"],
                 ["inspect", "s"]):
        before = db.read_bytes()
        result = invoke(*args, "--db", str(db), input="hello\n")
        assert result.exit_code in (0, 1, 2), (args, result.exception)
        assert not isinstance(result.exception, Exception) or isinstance(
            result.exception, SystemExit), (args, repr(result.exception))
        errors = [x for x in result.stderr.splitlines() if x.startswith("error:")]
        if result.exit_code != 0:
            assert len(errors) == 1, (args, result.stderr)
            # Exit 2 promises nothing was changed (ExitCode.USAGE); a chat may store a
            # failed turn on a file it can still use, and then exits 1.
            if args[0] != "chat" or result.exit_code == ExitCode.USAGE:
                assert db.read_bytes() == before, (args, result.exit_code)


def test_hand_edited_rows_are_one_line_not_a_traceback(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    invoke("chat", "s", "--db", str(db), "--provider", "scripted", "-s",
           "summary", input="hello\n")
    with sqlite3.connect(db) as conn:
        conn.execute("ALTER TABLE messages ADD COLUMN added_by_hand TEXT")
    result = invoke("chat", "s", "--db", str(db), "--provider", "scripted",
                    input="again\n")
    assert result.exit_code == 0, result.stderr  # an extra column is ignored
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sessions SET params = '{not json'")
    result = invoke("chat", "s", "--db", str(db), "--provider", "scripted",
                    input="again\n")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: session 's': params is not valid JSON")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sessions SET params = '{}'")
        conn.execute("UPDATE strategy_state SET value = '[[[' ")
    result = invoke("chat", "s", "--db", str(db), "--provider", "scripted",
                    input="again\n")
    assert result.exit_code == 2
    errors = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert errors == ["error: session 's': summary state 'behind' is not valid JSON in the"
                      " history (was it edited by hand?); `chatmem sessions reset-state s"
                      " summary` drops that state (never the turns) and the strategy builds it"
                      " again"]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE strategy_state SET value = '{}' ")
    result = invoke("chat", "s", "--db", str(db), "--provider", "scripted",
                    input="again\n")
    # JSON, but not what chatmem stores: named alike, never a traceback.
    assert result.exit_code == 2 and "is not in the form chatmem stores it in" in result.stderr
    invoke("sessions", "reset-state", "s", "summary", "--db", str(db), code=0)
    invoke("chat", "s", "--db", str(db), "--provider", "scripted", input="again\n", code=0)


@pytest.mark.parametrize(("text", "error"), [
    ("", "t.jsonl: no messages in the transcript (the file is empty or holds only a header)"),
    ("\n  \n", "t.jsonl: no messages in the transcript (the file is empty or holds only a"
               " header)"),
    ('{"chatmem": 1, "title": "空的"}\n',
     "t.jsonl: no messages in the transcript (the file is empty or holds only a header)"),
    ('{"role": "user", "content": "hi", "ts": "2024-05-01T09:30:00Z"}\n'
     '{"role": "assistant", "content": "hello", "ts": "not a date"}\n',
     "t.jsonl:2: ts 'not a date' is not an ISO-8601 date and time (e.g. 2024-05-01T09:30:00Z)"),
    ('{"role": "user", "content": "你好", "ts": "2024-13-45T99:99:99"}\n',
     "t.jsonl:1: ts '2024-13-45T99:99:99' is not an ISO-8601 date and time"
     " (e.g. 2024-05-01T09:30:00Z)"),
])
def test_an_empty_transcript_or_an_unreadable_timestamp_is_refused_naming_the_file(
    tmp_path: Path, text: str, error: str
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(text, encoding="utf-8")
    db = tmp_path / "h.db"
    result = invoke("sessions", "import", str(path), "--name", "t", "--db", str(db))
    assert result.exit_code == 2
    assert result.stderr == f"error: {tmp_path}/{error}\n"
    if db.exists():
        with Store(db) as store:
            assert store.sessions.find_session("t") is None


@pytest.mark.parametrize("ts", ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00+05:45",
                                "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00"])
def test_a_time_at_the_calendars_edge_is_imported_undated_and_its_export_imports_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ts: str
) -> None:
    """An exporter's zero time was refused at import, while a history holding one (imported
    before, or by an older chatmem) exported it as it was: the same chatmem refused its own
    backup. Kept as written, read as undated, said in one warning naming the line."""
    monkeypatch.setenv("TZ", "America/New_York")  # where year 1 would leave the calendar
    path, db = tmp_path / "t.jsonl", tmp_path / "h.db"
    path.write_text('{"role": "user", "content": "hi", "ts": "2024-05-01T09:30:00Z"}\n'
                    f'{{"role": "assistant", "content": "你好", "ts": "{ts}"}}\n'
                    '{"role": "user", "content": "我和丽娜去了水族馆"}\n', encoding="utf-8")
    imported = invoke("sessions", "import", str(path), "--name", "t", "--db", str(db))
    assert imported.exit_code == 0, imported.stderr
    assert " ".join(imported.stderr.split()).startswith(
        f"warning: {path}:2: ts '{ts}' is at the calendar's edge (year 1 or 9999), where not"
        " every time zone can show it: read as undated")
    assert "dated before" not in imported.stderr
    backup = tmp_path / "all.zip"
    invoke("sessions", "export", "--all", "-o", str(backup), "--db", str(db), code=0)
    restored = invoke("sessions", "import", str(backup), "--db", str(tmp_path / "r.db"))
    assert restored.exit_code == 0, restored.stderr
    with Store(tmp_path / "r.db") as store:
        session = store.sessions.session("t")
        assert [m.content for m in store.history.messages(session.id)] == [
            "hi", "你好", "我和丽娜去了水族馆"]
    chat = invoke("chat", "t", "-s", "retrieval", "--provider", "scripted", "--db",
                  str(tmp_path / "r.db"), input="我和丽娜去了哪里？\n")
    assert chat.exit_code == 0 and "error" not in chat.stderr, chat.stderr


def test_a_stored_time_at_the_calendars_edge_is_undated_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Imported before the edge was refused (or written by another tool): west of UTC, year 1
    # moved into the user's zone is before the calendar, and recall and export overflowed.
    monkeypatch.setenv("TZ", "America/New_York")
    path, db = tmp_path / "t.jsonl", tmp_path / "h.db"
    path.write_text("".join(json.dumps({"role": role, "content": text,
                                        "ts": "2024-05-01T09:30:00Z"}) + "\n"
                            for role, text in [("user", "I visited the aquarium with Lena"),
                                               ("assistant", "Nice aquarium trip."),
                                               ("user", "我和丽娜去了水族馆"),
                                               ("assistant", "真好。")]), encoding="utf-8")
    invoke("sessions", "import", str(path), "--name", "z", "--db", str(db), code=0)
    with sqlite3.connect(db) as conn:
        for message_id, ts in enumerate(("0001-01-01T00:00:00Z", "0001-01-01T00:00:00+05:45",
                                         "9999-12-31T23:59:59-05:00", "0001-01-01"), 1):
            conn.execute("UPDATE messages SET created_at = ? WHERE id = ?", (ts, message_id))
    for asked in ("Where did I go with Lena last year?", "我和丽娜去了哪里？"):
        chat = invoke("chat", "z", "-s", "retrieval", "--provider", "scripted", "--db",
                      str(db), input=f"{asked}\n")
        assert chat.exit_code == 0, chat.stderr
        assert "error" not in chat.stderr
    out = tmp_path / "z.md"
    exported = invoke("sessions", "export", "z", "-o", str(out), "--db", str(db))
    assert exported.exit_code == 0, exported.stderr
    text = out.read_text(encoding="utf-8")
    # Shown as stored: no zone can move them.
    assert "· 0001-01-01T00:00:00Z" in text and "· 9999-12-31T23:59:59-05:00" in text


def test_an_iso_timestamp_is_imported_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"role": "user", "content": "hi", "ts": "2024-05-01T09:30:00+02:00"}\n',
                    encoding="utf-8")
    db = tmp_path / "h.db"
    result = invoke("sessions", "import", str(path), "--name", "t", "--db", str(db))
    assert result.exit_code == 0, result.stderr
    with Store(db) as store:
        assert [m.created_at for m in store.history.messages(store.sessions.session("t").id)] == [
            "2024-05-01T09:30:00+02:00"]
