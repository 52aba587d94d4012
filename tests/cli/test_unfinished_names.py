"""A replay's unfinished names (`unfinished-replay.PID.HOST.RANDOM`) are the replay's own.

Review: chat, ask, import --name, rename and /new accepted such a name; listings then hid
the session, and the next `replay --save-as` deleted it with its leftovers. `sessions
export --all` wrote a replay's half-saved sessions into the archive.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from cli_runner import chat, invoke

from chatmem.errors import UsageError
from chatmem.store import Store
from chatmem.store.session_names import is_reserved, is_session_name, session_name_of

TAKEN = "unfinished-replay.4242.00000000.0123abcd"
CODE = int(UsageError.exit_code)


def _names(db: str) -> list[str]:
    with Store(db) as store:
        return sorted(row.name for row in store.sessions.list_sessions())


@pytest.mark.parametrize("name", [TAKEN, "unfinished-replay.mine",
                                  "unfinished-import.4242.00000000.0123abcd"])
@pytest.mark.parametrize("command", [
    ["chat", "{name}", "--provider", "scripted"],
    ["ask", "--session", "{name}", "我的电话", "--provider", "scripted"],
    ["sessions", "import", "{file}", "--name", "{name}"],
    ["sessions", "rename", "trip", "{name}"],
])
def test_a_replay_s_unfinished_name_is_refused_in_one_line(
        tmp_path: Path, command: list[str], name: str) -> None:
    db = str(tmp_path / "h.db")
    chat(db, "trip", ["你好"], code=0)
    file = tmp_path / "t.jsonl"
    file.write_text('{"role": "user", "content": "旅行"}\n', encoding="utf-8")
    args = [a.format(name=name, file=file) for a in command]
    done = invoke(*args, "--db", db, input="你好\n", code=CODE)
    assert done.stderr.count("\n") == 1 and repr(name) in done.stderr
    assert _names(db) == ["trip"]


def test_new_in_the_repl_refuses_it(tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    done = chat(db, "trip", [f"/new {TAKEN}", "你好"], code=CODE)  # piped in: an error fails
    assert f"error: session name {TAKEN!r} is reserved" in done.stderr
    assert _names(db) == ["trip"]


def test_chat_refuses_a_replay_s_session_that_exists(tmp_path: Path) -> None:
    """Chatting into a replay's session still being saved would publish the turn under the
    replay's name (or lose it with its leftovers)."""
    db = str(tmp_path / "h.db")
    with Store(db) as store:
        store.sessions.create_session(TAKEN, "buffer", unfinished=True)
    invoke("chat", TAKEN, "--provider", "scripted", "--db", db, input="你好\n", code=CODE)
    with Store(db) as store:
        assert store.history.messages(store.sessions.session(TAKEN).id) == []


def test_export_all_and_copy_leave_a_replay_s_unfinished_session_out(tmp_path: Path) -> None:
    db, target = str(tmp_path / "h.db"), str(tmp_path / "copy.db")
    chat(db, "trip", ["你好"], code=0)
    with Store(db) as store:
        made = store.sessions.create_session(TAKEN, "buffer", unfinished=True)
        store.history.import_messages(made.id, [{"role": "user", "content": "半截"}])
    archive = tmp_path / "all.zip"
    invoke("sessions", "export", "--all", "-o", str(archive), "--db", db, code=0)
    with zipfile.ZipFile(archive) as zf:
        assert sorted(n for n in zf.namelist() if n.startswith("sessions/")) == [
            "sessions/trip.jsonl"]
        assert [s["name"] for s in json.loads(zf.read("manifest.json"))["sessions"]] == ["trip"]
    invoke("sessions", "copy", "--from", db, "--to", target, code=0)
    assert _names(target) == ["trip"]


def test_a_client_s_id_shaped_as_a_replay_s_name_gets_a_name_of_its_own() -> None:
    made = session_name_of(TAKEN)
    assert is_session_name(made) and not is_reserved(made) and made != session_name_of("x")


def _reserved_import_name() -> str:
    from chatmem.store.unfinished import host_mark

    return f"unfinished-import.4000000.{host_mark()}.deadbeef"  # this host, a pid long gone


def _made_archive(path: Path, entry: dict[str, str], member: str) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(member, '{"chatmem": 1}\n{"role": "user", "content": "藏起来"}\n')
        zf.writestr("manifest.json", json.dumps({"sessions": [{**entry, "transcript": member}]}))
    return path


@pytest.mark.parametrize("shape", ["named", "shared", "named-badly"])
def test_an_archive_naming_a_session_as_an_unfinished_import_is_refused(
        tmp_path: Path, shape: str) -> None:
    # Review: restored under such a name, "restored 1 session" was said, listings and search
    # hid it, and the next import or replay deleted it (this host, a dead pid) unsaid. A
    # shared session takes its name from its member's file name: that one too.
    db = str(tmp_path / "h.db")
    chat(db, "trip", ["你好"], code=0)
    name = _reserved_import_name()
    entry, member, where = {
        "named": ({"name": name}, "sessions/x.jsonl", "manifest.json"),
        "shared": ({"name": "trip", "shared_by": "ann"}, f"sessions/ann/{name}.jsonl",
                   f"sessions/ann/{name}.jsonl"),
        "named-badly": ({"name": "no spaces"}, f"sessions/{name}.jsonl",
                        f"sessions/{name}.jsonl"),
    }[shape]
    archive = _made_archive(tmp_path / "all.zip", entry, member)
    done = invoke("sessions", "import", str(archive), "--db", db, code=None)
    assert done.exit_code != 0
    assert done.stderr == (
        f"error: {archive}: {where}: session name {name!r} is reserved: names beginning"
        " 'unfinished-import.' are sessions import's sessions while it saves them; nothing"
        " was imported\n")
    with Store(db) as store:
        assert [(s.name, s.id) for s in store.sessions.list_sessions()] == [
            ("trip", store.sessions.session("trip").id)]
        assert store.sessions.find_session(name) is None


def test_no_session_is_published_or_renamed_under_a_reserved_name(tmp_path: Path) -> None:
    # The store's one rule holds for publish (which an archive's names reach) as for rename.
    from chatmem.store import unfinished
    from chatmem.store.session_names import normal_name

    name = _reserved_import_name()
    with Store(str(tmp_path / "h.db")) as store:
        made = store.sessions.create_session(unfinished.unfinished_name("import"), "buffer",
                                             unfinished=True)
        with pytest.raises(UsageError, match="is reserved"):
            unfinished.publish(store, [(made.name, made.id)], [name], UsageError)
        assert store.sessions.session_by_id(made.id).name == made.name
        decomposed = "Jose\u0301"
        unfinished.publish(store, [(made.name, made.id)], [decomposed], UsageError)
        assert store.sessions.session_by_id(made.id).name == normal_name(decomposed)
