"""Session names made from what clients give: `session_name_of` is one-to-one."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from chatmem.store import Store
from chatmem.store.session_names import (
    SESSION_NAME,
    is_session_name,
    normal_name,
    session_name_of,
)

ids = st.one_of(st.text(min_size=1, max_size=120),
                st.from_regex(SESSION_NAME, fullmatch=True),
                st.sampled_from(["旅行", "日记", "朋友", "杭州", "!!!", "???", "🙂", "🙃",
                                 "x" * 64 + "-alice", "x" * 64 + "-bob"]))


@given(ids, ids)
def test_two_ids_never_share_a_session_and_each_name_is_valid(first: str, second: str) -> None:
    a, b = session_name_of(first), session_name_of(second)
    assert is_session_name(a) and is_session_name(b)
    # One id however its letters were composed (NFC): José typed either way.
    assert (a == b) == (normal_name(first) == normal_name(second))


@given(st.from_regex(SESSION_NAME, fullmatch=True))
def test_an_id_that_is_a_valid_name_is_the_name(name: str) -> None:
    assert session_name_of(name) == normal_name(name)


def test_a_name_made_from_an_id_shows_where_it_came_from() -> None:
    assert session_name_of("trip to 杭州").startswith("trip-to-杭州-")
    assert session_name_of("!!!").startswith("session-")
    long = session_name_of("x" * 100)
    assert len(long) == 64 and long.startswith("x" * 51 + "-")


def test_a_name_in_any_script_is_one_session_however_its_letters_were_composed(
        tmp_path: Path) -> None:
    from cli_runner import invoke

    from chatmem.store import Store

    db = str(tmp_path / "h.db")
    decomposed, composed = unicodedata.normalize("NFD", "José"), "José"
    assert decomposed != composed
    for name in ("हिंदी", "नमस्ते", decomposed, "Zoë-日记"):
        invoke("chat", name, "--provider", "scripted", "--db", db, input="hi\n", code=0)
    invoke("chat", composed, "--provider", "scripted", "--db", db, input="again\n", code=0)
    with Store(db) as store:
        turns = {row.name: row.turns for row in store.sessions.list_sessions()}
        assert store.sessions.session(decomposed).name == composed
    assert turns == {"हिंदी": 1, "नमस्ते": 1, composed: 2, "Zoë-日记": 1}
    for refused in ("\u0301abc", "-x", "a b", "a/b"):
        assert invoke("chat", refused, "--provider", "scripted", "--db", db,
                      input="hi\n").exit_code == 2, refused


def test_a_name_made_from_free_text_keeps_each_letters_combining_marks() -> None:
    from chatmem.store.session_names import session_name_from

    decomposed = unicodedata.normalize("NFD", "Tiếng Việt")
    assert session_name_from(decomposed) == "Tiếng-Việt"
    assert session_name_from("हिन्दी और தமிழ் 日记") == "हिन्दी-और-தமிழ்-日记"
    assert session_name_from("مَرْحَبًا!") == "مَرْحَبًا"
    assert session_name_from("\u0301 ไม้ ") == "ไม้"
    # Cut at 64 before a letter whose mark would fall past the end, not between them.
    assert session_name_from("x" * 62 + " हि") == "x" * 62
    assert session_name_from("x" * 61 + " हि") == "x" * 61 + "-हि"


LONG = "Renée-Zoë-Ångström-Müller-Françoise-Hélène-Noël-Göteborg-Malmö"
"""62 characters as stored (NFC); 73 code points typed decomposed."""


def test_the_64_character_rule_counts_a_name_as_it_is_stored() -> None:
    from chatmem.store.session_names import check_session_name

    decomposed = unicodedata.normalize("NFD", LONG + "-旅")
    assert len(decomposed) > 64 >= len(normal_name(decomposed))
    assert is_session_name(decomposed)
    check_session_name(decomposed)
    assert not is_session_name(unicodedata.normalize("NFD", LONG + "-旅行")), "65 stored"


def test_a_name_made_from_a_long_id_never_ends_between_a_letter_and_its_marks() -> None:
    from chatmem.graphemes import grapheme_start

    # The 51st character is a virama, then the consonant it joins to the one before (न्द).
    for identifier in ("旅行 ab " + "हिन्दी" * 12, "旅行 a " + "हिन्दी" * 12):
        name = session_name_of(identifier)
        stem = name.rsplit("-", 1)[0]
        source = normal_name(identifier).replace(" ", "-")
        assert source.startswith(stem) and grapheme_start(source, len(stem)), ascii(stem)
        assert is_session_name(name)


def test_a_long_name_typed_decomposed_is_accepted_and_stored_composed(
        tmp_path: Path) -> None:
    from cli_runner import invoke

    from chatmem.store import Store

    db = str(tmp_path / "h.db")
    typed = unicodedata.normalize("NFD", LONG)
    invoke("chat", typed, "--provider", "scripted", "--db", db, input="你好\n", code=0)
    renamed = unicodedata.normalize("NFD", LONG.replace("Malmö", "Malmö2"))
    invoke("sessions", "rename", LONG, renamed, "--db", db, code=0)
    with Store(db) as store:
        assert [row.name for row in store.sessions.list_sessions()] == [normal_name(renamed)]


def test_numbered_sessions_are_read_with_their_lengths_at_once(store: Store) -> None:
    """`numbered` (serve's chats no id names: NAME, NAME-2…): only those names, the user's
    own, each with its length counted no further than asked, on every backend."""
    made = {}
    for name, held in (("chat-旅行", 3), ("chat-旅行-2", 1), ("chat-旅行-10", 0),
                       ("chat-旅行-02", 1), ("chat-旅行-1", 1), ("chat-旅行-x", 1),
                       ("chat-旅行x-2", 1), ("chat-旅", 1)):
        made[name] = store.sessions.create_session(name, "window", {})
        store.history.import_messages(made[name].id, [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"第{i}句"}
            for i in range(held)])
    found = store.sessions.numbered("chat-旅行", at_most=2)
    assert found == {
        "chat-旅行": (made["chat-旅行"].id, 2), "chat-旅行-2": (made["chat-旅行-2"].id, 1),
        "chat-旅行-10": (made["chat-旅行-10"].id, 0)}


def test_the_starts_of_numbered_sessions_are_read_at_once(store: Store) -> None:
    """`messages_of` (serve's branches of a chat no id names): each session's messages of
    its first turns, in order, as `messages` reads them one session at a time."""
    ids = []
    for name, held in (("chat-旅行", 6), ("chat-旅行-2", 3), ("chat-旅行-3", 0)):
        session = store.sessions.create_session(name, "window", {})
        store.history.import_messages(session.id, [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"{name}第{i}句"}
            for i in range(held)])
        ids.append(session.id)
    found = store.history.messages_of(ids, 2)
    assert found == {i: store.history.messages(i, 1, 2) for i in ids[:2]}
    assert [len(found[i]) for i in ids[:2]] == [4, 3]


def test_the_last_turns_of_numbered_sessions_are_read_at_once(store: Store) -> None:
    """`last_turns_of`: each session's last turns, a replaced turn's messages left out, as
    `messages` from `turn_count` on reads them one session at a time."""
    ids = []
    for name, held in (("chat-旅行", 7), ("chat-旅行-2", 2), ("chat-旅行-3", 0)):
        session = store.sessions.create_session(name, "window", {})
        store.history.import_messages(session.id, [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"{name}第{i}句"}
            for i in range(held)])
        ids.append(session.id)
    found = store.history.last_turns_of(ids, 2)
    assert found == {i: store.history.messages(i, max(1, store.history.turn_count(i) - 1))
                     for i in ids[:2]}
    assert [len(found[i]) for i in ids[:2]] == [3, 2]


def test_numbered_sessions_past_one_reads_worth_are_found(store: Store) -> None:
    """`numbered` looks names up by the index, NUMBERED at a time: those past the first
    NUMBERED are found too, gaps and all, and a look at a stem no session has is one read."""
    from meter import metered

    from chatmem.store.sessions import NUMBERED

    numbers = [1, *range(3, NUMBERED + 9)]
    for n in numbers:
        store.sessions.create_session("chat-ab" if n == 1 else f"chat-ab-{n}", "window", {})
    found = store.sessions.numbered("chat-ab", at_most=1)
    assert found == {name: (store.sessions.session(name).id, 0) for name in
                     ("chat-ab" if n == 1 else f"chat-ab-{n}" for n in numbers)}
    with metered(store) as meter:
        assert store.sessions.numbered("chat-cd", at_most=1) == {}
    assert meter.statements == 1
    # By the index: the work does not grow with the sessions there (a scan read each).
    for n in range(300):
        store.sessions.create_session(f"chat-x{n}", "window", {})
    with metered(store) as more:
        assert store.sessions.numbered("chat-cd", at_most=1) == {}
    assert (more.statements, more.steps) == (1, meter.steps)
