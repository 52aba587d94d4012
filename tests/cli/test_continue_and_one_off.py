"""`ask` one-off by default, `-c` to continue the session used last, options for one call
unless --save, `--system` and `--json` (issue 21)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema
import pytest
from cli_runner import run
from typer.testing import Result

from chatmem.store import Store

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "chatmem.schema.json")
                    .read_text(encoding="utf-8"))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "h.db"


def run_logged(db: Path, *args: str, input: str = "") -> Result:
    """`run` on the scripted model, which logs the requests it gets (read by `sent`)."""
    log = db.parent / "sent.jsonl"
    log.unlink(missing_ok=True)
    return run(db, *args, "--provider", "scripted", input=input,
               env={"CHATMEM_SCRIPTED_LOG": str(log)})


def sent(db: Path) -> list[tuple[str, str]]:
    """The (role, content) of the last chat request the model received."""
    lines = (db.parent / "sent.jsonl").read_text(encoding="utf-8").splitlines()
    chats = [json.loads(line) for line in lines if json.loads(line)["purpose"] == "chat"]
    return [(m["role"], m["content"]) for m in chats[-1]["messages"]]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_ask_without_a_session_reads_no_history_and_leaves_the_file_unchanged(db: Path) -> None:
    assert run_logged(db, "ask", "trip", "my order is ORD-7731").exit_code == 0
    before = digest(db)
    result = run_logged(db, "ask", "我的订单号是多少？", "-s", "summary")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "echo #1: 我的订单号是多少？\n"
    assert sent(db) == [("system", "You are a helpful assistant."),
                        ("user", "我的订单号是多少？")]
    assert digest(db) == before
    with Store(db) as store:
        assert [s.name for s in store.sessions.list_sessions()] == ["trip"]


def test_a_one_off_question_never_creates_the_history_file(db: Path) -> None:
    assert run_logged(db, "ask", "hello").exit_code == 0
    assert not db.exists()


def test_continue_picks_the_session_used_last(db: Path) -> None:
    assert run_logged(db, "ask", "trip", "I fly to Lisbon").exit_code == 0
    assert run_logged(db, "ask", "work", "the report is due Friday").exit_code == 0
    assert run_logged(db, "ask", "trip", "and then Porto").exit_code == 0
    result = run_logged(db, "ask", "-c", "where do I fly?")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[0] == "continuing session trip"
    assert ("user", "I fly to Lisbon") in sent(db)
    assert ("user", "the report is due Friday") not in sent(db)
    chat = run_logged(db, "chat", "-c", input="and after Porto?\n")
    assert chat.exit_code == 0, chat.stderr
    assert chat.stderr.startswith("session trip ·")
    assert ("user", "where do I fly?") in sent(db)
    with Store(db) as store:
        assert store.history.turn_count(store.sessions.session("trip").id) == 4


def test_continue_errors_are_one_line(db: Path) -> None:
    nothing = run_logged(db, "ask", "-c", "hi")
    assert (nothing.exit_code, nothing.stderr) == (
        1, f"error: no session to continue in {db} (chatmem chat NAME starts one)\n")
    both = run_logged(db, "ask", "-c", "trip", "hi")
    assert (both.exit_code, both.stderr) == (
        2, "error: give a session (trip) or --continue, not both\n")
    assert run_logged(db, "chat", "trip", "-c").exit_code == 2
    save = run_logged(db, "ask", "hi", "--save")
    assert (save.exit_code, save.stderr) == (
        2, "error: --save needs a session: name one, or --continue the last one\n")


def test_a_strategy_or_system_for_one_ask_holds_for_that_call_only(db: Path) -> None:
    assert run_logged(db, "ask", "trip", "one", "-s", "window:k=2").exit_code == 0
    once = run_logged(db, "ask", "trip", "two", "-s", "buffer", "--system", "Be terse.", "--json")
    assert once.exit_code == 0, once.stderr
    assert json.loads(once.stdout)["strategy"]["name"] == "buffer"
    assert sent(db)[0] == ("system", "Be terse.")
    with Store(db) as store:
        session = store.sessions.session("trip")
        assert (session.strategy, session.params, session.system) == (
            "window", {"k": 2}, "You are a helpful assistant.")
        assert [t.strategy for t in store.turns.turns(session.id)] == ["window", "buffer"]
    kept = run_logged(db, "ask", "trip", "three", "-s", "buffer", "--system", "Be terse.", "--save")
    assert kept.exit_code == 0, kept.stderr
    assert run_logged(db, "ask", "trip", "four").exit_code == 0
    assert sent(db)[0] == ("system", "Be terse.")
    with Store(db) as store:
        session = store.sessions.session("trip")
        assert (session.strategy, session.system) == ("buffer", "Be terse.")


@pytest.mark.parametrize("session", [[], ["trip"]])
def test_ask_json_holds_the_reply_tokens_and_session(db: Path, session: list[str]) -> None:
    result = run_logged(db, "ask", *session, "hello 你好", "--json", "--system", "Be brief.")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)  # stdout holds the JSON and nothing else
    jsonschema.validators.validator_for(SCHEMA)(SCHEMA).validate(data)
    assert data["session"] == (session[0] if session else None)
    assert (data["status"], data["reply"]) == ("ok", "echo #1: hello 你好")
    assert data["tokens"]["prompt"] == data["tokens"]["reported"] == (
        sum(data["tokens"]["parts"].values()) + 3)  # + reply priming
    assert list(data["tokens"]["parts"]) == ["system", "input"]
    assert data["strategy"]["name"] == "window"


def test_ask_json_token_parts_add_up_to_the_count(db: Path) -> None:
    # The token line adds up (`… · priming 3 = 37`); ask --json's parts alone came 3 short
    # of `counted`, the rest nowhere in the answer.
    for question in ("我住在杭州 🎉", "where do I live? " * 40):
        result = run_logged(db, "ask", "加", question, "--json", "-s", "buffer")
        assert result.exit_code == 0, result.stderr
        tokens = json.loads(result.stdout)["tokens"]
        assert (sum(tokens["parts"].values()) + tokens["priming"] + tokens["template"]
                == tokens["counted"])
        assert (tokens["priming"], tokens["template"]) == (3, 0)
