"""Numbers reproduce: replay, eval and inspect count and call as the conversation was recorded.

Each test makes sure no other model could have been used: the environment points
the default provider at OpenAI with no key, so opening a model that was not
recorded fails loudly instead of quietly changing the numbers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import cli_runner
import pytest
from registered import create_strategy

from chatmem.engine import Engine
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
SUPPORT = str(SESSIONS / "support.jsonl")


@pytest.fixture(autouse=True)
def no_default_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHATMEM_PROVIDER", "openai")


invoke = partial(cli_runner.invoke, code=0)


def write(path: Path, lines: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                    encoding="utf-8")
    return str(path)


def test_acceptance_support_replays_to_the_readme_numbers_and_names_its_tokenizer() -> None:
    result = invoke("replay", SUPPORT, "-s", "buffer", "-s", "window")
    assert "20,829" in result.stdout and "7,001" in result.stdout
    assert "tokenizer cl100k_base (exact)" in result.stdout
    data = json.loads(invoke("replay", SUPPORT, "-s", "buffer", "-s", "window",
                             "--json").stdout)
    assert [s["prompt_tokens"]["total"] for s in data["strategies"]] == [20829, 7001]
    assert data["tokenizer"] == {"name": "cl100k_base", "exact": True,
                                 "recorded": "cl100k_base", "note": None}


def test_a_replay_with_recorded_replies_needs_no_model(tmp_path: Path) -> None:
    # Recorded with OpenAI, whose key this machine does not have: counting needs none.
    source = write(tmp_path / "t.jsonl", [
        {"chatmem": 1, "provider": "openai", "model": "gpt-4o-mini", "tokenizer": "cl100k_base"},
        {"role": "user", "content": "My order is KW-58213."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Thanks"}, {"role": "assistant", "content": "Welcome."}])
    data = json.loads(invoke("replay", source, "-s", "window:k=1", "--json").stdout)
    # gpt-4o-mini's own tokenizer (o200k) is not available offline: labelled approximate,
    # and the note says so (it was null)
    assert data["tokenizer"] == {"name": "cl100k_base", "exact": False,
                                 "recorded": "cl100k_base",
                                 "note": "cl100k_base stands in for gpt-4o-mini's tokenizer"}
    assert data["strategies"][0]["chat_model_calls"] == 0
    # a strategy that needs a model asks the recorded one, says why it cannot, and the run
    # exits 1: its figures are of a memory that did not keep up (MemoryBehind)
    result = cli_runner.invoke("replay", source, "-s", "summary", "--json", code=1)
    assert "2 memory updates failed in 2 turns" in result.stderr
    run = json.loads(result.stdout)["strategies"][0]
    assert run["strategy_model_calls_by_purpose"] == {"summary": 2}
    assert run["summary_versions"] == 0 and len(run["notices"]) == 2  # one per failed call


def test_a_recorded_tokenizer_that_is_missing_is_said_plainly(tmp_path: Path) -> None:
    source = write(tmp_path / "t.jsonl", [
        {"chatmem": 1, "provider": "local", "model": "m", "tokenizer": "llama:elsewhere.gguf"},
        {"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"}])
    result = invoke("replay", source, "-s", "buffer")
    assert ("the recorded tokenizer llama:elsewhere.gguf is not available here: counts use "
            "cl100k_base (approximate)") in " ".join(result.stdout.split())
    plain = write(tmp_path / "p.jsonl", [{"role": "user", "content": "hi"},
                                         {"role": "assistant", "content": "hello"}])
    data = json.loads(invoke("replay", plain, "-s", "buffer", "--json").stdout)
    assert data["tokenizer"]["note"] == ("no tokenizer was recorded: counts use cl100k_base "
                                         "(approximate)")


def test_flags_choose_another_model_on_purpose(tmp_path: Path) -> None:
    data = json.loads(invoke("replay", SUPPORT, "-s", "window", "--provider", "scripted",
                             "--model", "other", "--json").stdout)
    assert data["tokenizer"]["exact"] is True and data["tokenizer"]["recorded"] == "cl100k_base"


@pytest.fixture
def chatted(tmp_path: Path) -> Iterator[str]:
    """A session chatted with the scripted model, a /system change before turn 3."""
    db = str(tmp_path / "x.db")
    invoke("chat", "s", "-s", "window:k=2", "--provider", "scripted",
           "--system", "You are a librarian.", "--db", db,
           input="My name is Ada.\nMy order number is ORD-7731.\n"
                 "/system You are a pirate.\nWhat is my order number?\n")
    yield db


def inspect_json(db: str, *args: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(invoke("inspect", "s", "--db", db, "--json", *args).stdout)
    return data


def test_a_what_if_of_the_recorded_strategy_reproduces_the_recorded_count(chatted: str) -> None:
    for turn in (1, 2, 3):
        data = inspect_json(chatted, "--turn", str(turn), "-s", "window:k=2")
        assert data["context"]["tokens"] == data["turn"]["estimated_tokens"]
        assert data["tokenizer"] == {"name": "cl100k_base", "exact": True,
                                     "recorded": "cl100k_base", "note": None}
        assert data["messages"] == inspect_json(chatted, "--turn", str(turn))["messages"]


def test_a_what_if_sends_the_system_prompt_of_its_own_turn(chatted: str) -> None:
    first = inspect_json(chatted, "--turn", "1", "-s", "buffer")
    third = inspect_json(chatted, "--turn", "3", "-s", "buffer")
    assert first["messages"][0] == {"role": "system", "content": "You are a librarian."}
    assert third["messages"][0] == {"role": "system", "content": "You are a pirate."}
    after = inspect_json(chatted, "--next", "hi", "-s", "buffer")
    assert after["messages"][0]["content"] == "You are a pirate."


def test_acceptance_a_what_if_of_entity_keeps_the_facts_the_session_kept(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    invoke("chat", "e", "-s", "entity", "--provider", "scripted", "--db", db,
           input="My name is Ada.\nMy order number is ORD-7731.\nok\n")
    kept = json.loads(invoke("facts", "list", "--session", "e", "--db", db, "--json").stdout)
    values = {f["value"] for f in kept if f["kind"] == "fact"}
    assert values == {"Ada", "ORD-7731"}
    data = json.loads(invoke("inspect", "e", "--db", db, "--turn", "3", "-s", "entity:k=1",
                             "--json").stdout)
    facts = next(p for p in data["context"]["parts"] if p["kind"] == "facts")
    assert all(v in facts["messages"][0]["content"] for v in values)
    # The two turns before turn 3 caught up in one batch: one call of the scripted extractor.
    assert data["replayed"] == {"turns": 2, "strategy_model_calls": 1}


def test_export_records_each_turns_system_prompt_and_round_trips(chatted: str,
                                                               tmp_path: Path) -> None:
    exported = invoke("sessions", "export", "s", "--db", chatted).stdout
    lines = [json.loads(line) for line in exported.splitlines()]
    assert lines[0]["system"] == "You are a librarian."
    assert lines[0]["provider"] == "scripted" and lines[0]["tokenizer"] == "cl100k_base"
    change = lines.index({"system_prompt": "You are a pirate."})
    assert lines[change + 1]["content"] == "What is my order number?"
    path = tmp_path / "s.jsonl"
    path.write_text(exported, encoding="utf-8")
    other = str(tmp_path / "y.db")
    invoke("sessions", "import", str(path), "--db", other)
    assert invoke("sessions", "export", "s", "--db", other).stdout == exported
    # a replay of the export sends each turn with its own prompt, as the chat did
    replayed = json.loads(invoke("replay", str(path), "-s", "window:k=2", "--json").stdout)
    with Store(chatted) as store:
        recorded = [t.estimated_tokens for t in store.turns.turns(store.sessions.session("s").id)]
    assert replayed["strategies"][0]["prompt_tokens"]["per_turn"] == recorded


def test_a_turn_stamps_the_question_when_sent_and_the_reply_when_done(db_path: Path) -> None:
    ticks = iter(range(1, 1000))

    def clock() -> datetime:  # one second later at each reading: no sleep, no race
        return datetime(2026, 3, 15, 9, 0, tzinfo=UTC) + timedelta(seconds=next(ticks))

    with Store(db_path, clock=clock) as store:
        session = store.sessions.create_session("t", "buffer")
        engine = Engine(store, session, ScriptedProvider(), create_strategy("buffer", {}))
        engine.run_turn("hello")
        user, reply = store.history.messages(session.id)
    assert user.created_at < reply.created_at
    assert user.created_at.startswith("2026-03-15")


def test_save_as_stores_exactly_what_was_printed_and_reads_no_other_session(
        tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    config = tmp_path / "c.toml"
    config.write_text('user_facts = true\n', encoding="utf-8")
    # Another session put the user's name in their profile (they opted in).
    invoke("chat", "other", "-s", "entity", "--provider", "scripted", "--db", db,
           "--config", str(config), input="My name is Ada Lovelace.\n")
    args = ["replay", SUPPORT, "-s", "window+entity", "-s", "summary-buffer:max_tokens=600",
            "--json", "--db", db, "--config", str(config)]
    printed = json.loads(invoke(*args, "--save-as", "s").stdout)
    alone = json.loads(invoke(*args).stdout)
    with Store(db) as store:
        for run in printed["strategies"]:
            turns = store.turns.turns(store.sessions.session(run["session"]).id)
            assert [t.estimated_tokens for t in turns] == run["prompt_tokens"]["per_turn"]
            assert all("Ada Lovelace" not in json.dumps(t.context) for t in turns)
    assert [r["prompt_tokens"] for r in printed["strategies"]] == [
        r["prompt_tokens"] for r in alone["strategies"]]
    # Asked for, the profile is read, by the printed and the saved replay alike.
    shared = json.loads(invoke(*args[:4], "--with-user-facts", "--save-as", "u",
                               *args[6:]).stdout)
    with Store(db) as store:
        turns = store.turns.turns(store.sessions.session("u").id)
        assert "Ada Lovelace" in json.dumps(turns[0].context)
        assert [t.estimated_tokens for t in turns] == \
            shared["strategies"][0]["prompt_tokens"]["per_turn"]
    assert shared["strategies"][0]["prompt_tokens"]["total"] > \
        alone["strategies"][0]["prompt_tokens"]["total"]


def test_facts_list_shows_where_each_fact_was_stated_and_what_it_replaced(
        tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    invoke("chat", "trip", "-s", "entity", "--provider", "scripted", "--db", db,
           input="My name is Ada.\n我住在杭州。\n不好意思，我叫李雷。\n")
    rows = json.loads(invoke("facts", "list", "--db", db, "--json").stdout)
    name = next(r for r in rows if r["key"] == "name")
    assert (name["value"], name["source"], name["source_session"]) == (
        "李雷", "turn 3 of session trip", "trip")
    assert [(h["value"], h["source_turn"], h["source_session"]) for h in name["history"]] == [
        ("Ada", 1, "trip")]
    table = invoke("facts", "list", "--db", db).stdout
    assert "李雷 ←" in table and "Ada" in table  # the newest value, then what it replaced
    # A new session starts clean: facts stay in the session they were stated in.
    invoke("chat", "new", "-s", "window+entity", "--provider", "scripted", "--db", db,
           input="hello\n")
    sent = json.loads(invoke("inspect", "new", "--db", db, "--json").stdout)
    assert not [p for p in sent["context"]["parts"] if p["kind"] == "facts"]


def test_remember_user_follows_the_user_into_a_new_session(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    invoke("chat", "a", "-s", "entity", "--provider", "scripted", "--db", db,
           input="/remember --user allergy: peanuts\n/remember budget: 300 EUR\n")
    invoke("chat", "b", "-s", "entity", "--provider", "scripted", "--db", db, input="hi\n")
    sent = json.loads(invoke("inspect", "b", "--db", db, "--json").stdout)
    (facts,) = [p for p in sent["context"]["parts"] if p["kind"] == "facts"]
    text = facts["messages"][0]["content"]
    assert '"allergy","peanuts",null,"a"]' in text and "300 EUR" not in text


def test_inspect_notes_a_stand_in_tokenizer(chat_server: Any, tmp_path: Path) -> None:
    """A model tiktoken does not know is counted with cl100k_base: inspect's tokenizer said
    "exact": false with a null note, at a recorded turn and for the next input alike."""
    db = str(tmp_path / "x.db")
    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-test-key-1234"}
    invoke("ask", "旅行", "-m", "test-small", "我们去杭州", "--db", db, env=env)
    note = "cl100k_base stands in for test-small's tokenizer"
    for args in ((), ("--next", "几点出发？")):
        shown = json.loads(invoke("inspect", "旅行", *args, "--json", "--db", db, env=env).stdout)
        assert shown["tokenizer"] == {"name": "cl100k_base", "exact": False,
                                      "recorded": "cl100k_base", "note": note}, args
