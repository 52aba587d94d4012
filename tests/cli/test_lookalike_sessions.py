"""`chatmem chat ｔｒｉｐ` beside an existing `trip` (a Chinese input method's full-width
letters, or another case): the new session is created as named, with one line saying which
existing session its name reads as; nothing is refused or merged."""

from __future__ import annotations

from pathlib import Path

from cli_runner import invoke

from chatmem.store import Store

NOTE = "note: "


def chat(db: str, session: str, line: str) -> list[str]:
    """`chatmem chat SESSION` with one line piped; its stderr's note lines."""
    result = invoke("chat", session, "--provider", "scripted", "--db", db, input=line + "\n")
    assert result.exit_code == 0, result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith(NOTE)]


def ask(db: str, session: str, text: str) -> list[str]:
    result = invoke("ask", session, text, "--provider", "scripted", "--db", db)
    assert result.exit_code == 0, result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith(NOTE)]


def test_a_new_session_whose_name_reads_as_an_existing_one_is_noted(tmp_path: Path) -> None:
    db = str(tmp_path / "l.db")
    assert chat(db, "trip", "去杭州") == []
    assert chat(db, "ｔｒｉｐ", "去成都") == [
        "note: session 'trip' exists; this creates 'ｔｒｉｐ'"]
    assert chat(db, "ｔｒｉｐ", "住哪里") == []  # resumed, not created
    assert chat(db, "trip", "吃什么") == []
    assert ask(db, "Trip", "hello") == [  # the one used last first
        "note: sessions 'trip', 'ｔｒｉｐ' exist; this creates 'Trip'"]
    with Store(db) as store:
        inputs = {s.name: [t.input for t in store.turns.turns(s.id)]
                  for s in store.sessions.list_sessions()}
    assert inputs == {"trip": ["去杭州", "吃什么"], "ｔｒｉｐ": ["去成都", "住哪里"],
                      "Trip": ["hello"]}


def test_ordinary_new_names_get_no_note(tmp_path: Path) -> None:
    db = str(tmp_path / "o.db")
    assert chat(db, "trip", "去杭州") == []
    assert chat(db, "trip-b", "去成都") == []
    assert chat(db, "旅行", "去成都") == []
    assert ask(db, "tr1p", "hello") == []
    one_off = invoke("ask", "a one-off question", "--provider", "scripted", "--db", db)
    assert one_off.exit_code == 0 and NOTE not in one_off.stderr


def test_a_name_in_traditional_characters_reads_as_its_simplified_form(tmp_path: Path) -> None:
    # 杂记 beside 雜記 is one name typed with another input method, as ｔｒｉｐ beside trip;
    # each stays its own session, found by the name typed.
    db = str(tmp_path / "z.db")
    assert chat(db, "雜記", "去杭州") == []
    assert ask(db, "杂记", "去成都") == ["note: session '雜記' exists; this creates '杂记'"]
    assert chat(db, "雜記", "住哪里") == [] and chat(db, "杂记", "吃什么") == []
    with Store(db) as store:
        inputs = {s.name: [t.input for t in store.turns.turns(s.id)]
                  for s in store.sessions.list_sessions()}
    assert inputs == {"雜記": ["去杭州", "住哪里"], "杂记": ["去成都", "吃什么"]}


def test_a_missing_name_in_the_other_chinese_script_suggests_the_existing_one(
        tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    assert chat(db, "周记", "去杭州") == [] and chat(db, "雜記", "去成都") == []
    for typed, meant in [("周記", "周记"), ("杂记", "雜記")]:
        result = invoke("inspect", typed, "--db", db)
        assert result.exit_code != 0
        assert f"did you mean '{meant}'?" in result.stderr, result.stderr
