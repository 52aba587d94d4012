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
