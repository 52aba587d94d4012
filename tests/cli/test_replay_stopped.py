"""`chatmem replay --save-as` stopped by a real signal while a real model request is held:
nothing half-saved looks finished, and the same command then runs to its end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_site import BUILD_FAILS, install
from waiting import HANG, Watched, ctrl_c_reaches_it, wait_until

from chatmem.store import Store
from chatmem.store.session_names import is_unfinished

TURNS = 3


def _transcript(path: Path) -> Path:
    path.write_text("".join(
        json.dumps({"role": role, "content": f"第{i}句 {role} about Porto"}, ensure_ascii=False)
        + "\n" for i in range(1, TURNS + 1) for role in ("user", "assistant")), encoding="utf-8")
    return path


def _chatmem(tmp_path: Path, chat_server, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HOME": str(tmp_path), "OPENAI_BASE_URL": chat_server.base_url,
           "OPENAI_API_KEY": "sk-x", "NO_COLOR": "1"}
    return subprocess.Popen([sys.executable, "-m", "chatmem", *args, "--db",
                             str(tmp_path / "x.db")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def _replay(tmp_path: Path, chat_server) -> subprocess.Popen[bytes]:
    return _chatmem(tmp_path, chat_server, "replay", str(_transcript(tmp_path / "t.jsonl")),
                    "-s", "buffer", "-s", "window", "--save-as", "rt", "--regenerate",
                    "--provider", "openai", "--model", "m")


def _stopped_in_the_second_strategy(tmp_path: Path, chat_server, how: signal.Signals) -> int:
    """Run the replay until the second strategy's second turn is at the model (the first
    strategy's session is whole by then), send `how`; the exit code."""
    chat_server.plan = ["ok"] * (TURNS + 1) + ["hang"]
    held = len(chat_server.requests) + TURNS + 2
    process = _replay(tmp_path, chat_server)
    assert process.stdout is not None and process.stderr is not None
    err = Watched(process.stderr)
    Watched(process.stdout)
    wait_until(lambda: len(chat_server.requests) >= held or process.poll() is not None,
               "the held request reached the server")
    assert process.poll() is None, err.rest()
    assert len(chat_server.requests) == held
    process.send_signal(how)
    code = process.wait(timeout=HANG)
    chat_server.release.set()
    return code


def _names(db: Path) -> list[str]:
    with Store(db) as store:
        return sorted(s.name for s in store.sessions.list_sessions())


def _run_to_the_end(tmp_path: Path, chat_server, *also: str) -> None:
    chat_server.plan = []
    again = _replay(tmp_path, chat_server)
    _, err = again.communicate(timeout=HANG)
    assert again.returncode == 0, err.decode()
    assert _names(tmp_path / "x.db") == sorted(["rt-buffer", "rt-window", *also])
    with Store(tmp_path / "x.db") as store:
        for name in ("rt-buffer", "rt-window"):
            assert len(store.history.messages(store.sessions.session(name).id)) == 2 * TURNS


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_undoes_the_save_as_ctrl_c_does(tmp_path: Path, chat_server,
                                                          how: signal.Signals) -> None:
    """Before: the process died where it stood, rt-buffer whole and rt-window at one turn,
    both listed as finished, and the next run refused: 'a session named rt-buffer already
    exists'."""
    assert _stopped_in_the_second_strategy(tmp_path, chat_server, how) == 128 + how
    assert _names(tmp_path / "x.db") == []
    _run_to_the_end(tmp_path, chat_server)


def test_after_kill_9_nothing_looks_finished_and_the_next_save_as_removes_it(
        tmp_path: Path, chat_server) -> None:
    db = tmp_path / "x.db"
    # buffer: no embedding in the background to take the server's held answer
    mine = _chatmem(tmp_path, chat_server, "ask", "trip", "where to in Porto?", "--model", "m",
                    "-s", "buffer")
    assert mine.wait(timeout=HANG) == 0
    assert _stopped_in_the_second_strategy(tmp_path, chat_server, signal.SIGKILL) == -9
    left = _names(db)
    assert len(left) == 3 and sum(is_unfinished(n) for n in left) == 2
    listed = _chatmem(tmp_path, chat_server, "sessions", "list", "--json")
    out, err = listed.communicate(timeout=HANG)
    assert [s["name"] for s in json.loads(out)] == ["trip"], err.decode()
    # Written last, the killed replay's sessions are still no conversation to continue.
    chat_server.plan = []
    more = _chatmem(tmp_path, chat_server, "ask", "-c", "and the wine?", "--model", "m")
    assert more.wait(timeout=HANG) == 0
    with Store(db) as store:
        assert store.history.turn_count(store.sessions.session("trip").id) == 2
    _run_to_the_end(tmp_path, chat_server, "trip")


def _eval_stopped(tmp_path: Path, chat_server, strategies: list[str], answers: int,
                  **env: str) -> tuple[int, str, str]:
    """`eval --answer --json` of a transcript with one probe over `strategies`, given a real
    SIGINT once `answers` probe answers reached the model (the last one held): its exit
    code, stdout and stderr."""
    transcript = _transcript(tmp_path / "t.jsonl")
    with transcript.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"probe": "我们去哪里？", "expect_text": ["Porto"]},
                           ensure_ascii=False) + "\n")
    chat_server.plan = [*["ok"] * (answers - 1), "hang"]
    chosen = [part for name in strategies for part in ("-s", name)]
    process = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "eval", str(transcript), *chosen, "--answer",
         "--provider", "openai", "--model", "m", "--json", "--db", str(tmp_path / "x.db")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=ctrl_c_reaches_it,
        env={**os.environ, "HOME": str(tmp_path), "OPENAI_BASE_URL": chat_server.base_url,
             "OPENAI_API_KEY": "sk-x", "NO_COLOR": "1", **env})
    assert process.stdout is not None and process.stderr is not None
    err = Watched(process.stderr)
    out = Watched(process.stdout)
    wait_until(lambda: len(chat_server.requests) >= answers or process.poll() is not None,
               f"probe answer {answers} reached the server")
    assert process.poll() is None, err.rest()
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=HANG)
    chat_server.release.set()
    return code, out.rest(), err.rest()


def test_ctrl_c_in_an_eval_keeps_the_strategies_that_finished(tmp_path: Path,
                                                             chat_server) -> None:
    """Ctrl-C while the second strategy's probe answer is at the model: the first's scores
    are printed, the others named as cut, exit 130. Before: only "interrupted", exit 130,
    and the first strategy's finished work was lost."""
    code, printed, said = _eval_stopped(tmp_path, chat_server,
                                        ["buffer", "window:k=1", "window:k=2"], 2)
    assert code == 130, said
    data = json.loads(printed)
    assert [s["strategy"]["label"] for s in data["strategies"]] == ["buffer"]
    assert data["strategies"][0]["eval"]["text_recall"] == 1.0
    assert data["cut"] == ["window k=1", "window k=2"]
    assert "1 of 3" in said and "window k=1, window k=2" in said


def test_ctrl_c_in_an_eval_after_a_plugin_strategy_failed_still_says_its_failure(
        tmp_path: Path, chat_server) -> None:
    """A plugin strategy that failed (its build raised) is a result too: Ctrl-C in the next
    strategy said only "interrupted", exit 130, and nothing of whose code failed."""
    install(tmp_path / "site", "chatmem-boom", "chatmem_boom", BUILD_FAILS)
    code, printed, said = _eval_stopped(
        tmp_path, chat_server, ["boom", "buffer", "window:k=1"], 1,
        PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), *sys.path]))
    assert code == 130, said
    data = json.loads(printed)
    assert data["strategies"] == []
    assert [f["strategy"] for f in data["failed"]] == ["boom"]
    assert data["cut"] == ["buffer", "window k=1"]
    assert "1 of 3" in said and "chatmem-boom" in said
