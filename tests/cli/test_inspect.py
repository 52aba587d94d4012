"""`chatmem inspect`: recorded turns, --next, what-if, --summaries, --json."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_runner import invoke
from group_chat import write_group_chat

from chatmem.store import Store, TurnRecord

SUPPORT = str(Path(__file__).resolve().parents[2] / "sessions" / "support.jsonl")


@pytest.fixture
def replayed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """support.jsonl regenerated under window k=2 and saved, with the scripted model's log."""
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("CHATMEM_SCRIPTED_LOG", str(log))
    db = str(tmp_path / "x.db")
    result = invoke("replay", SUPPORT, "-s", "window:k=2", "--regenerate",
                    "--save-as", "rs", "--provider", "scripted", "--db", db)
    assert result.exit_code == 0, result.stderr
    return db, log


def inspect_json(db: str, *args: str) -> dict[str, object]:
    result = invoke("inspect", "rs", "--db", db, "--json", *args)
    assert result.exit_code == 0, result.stderr
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_acceptance_inspect_json_equals_what_the_provider_received(
    replayed: tuple[str, Path]
) -> None:
    db, log = replayed
    sent = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    chats = [e["messages"] for e in sent if e["purpose"] == "chat"]
    assert len(chats) == 30
    for number in (1, 5, 30):
        data = inspect_json(db, "--turn", str(number))
        assert data["messages"] == chats[number - 1]
        assert data["mode"] == "turn"
    last = inspect_json(db)
    assert last["messages"] == chats[-1]
    turn = last["turn"]
    assert isinstance(turn, dict)
    assert turn["number"] == 30 and turn["status"] == "ok"
    assert turn["strategy"] == {"name": "window", "params": {"k": 2}, "label": "window k=2"}
    assert turn["estimated_tokens"] == turn["prompt_tokens"] == last["context"]["tokens"]  # type: ignore[index]


def test_the_view_shows_parts_reasons_budget_and_drops(replayed: tuple[str, Path]) -> None:
    db, _ = replayed
    result = invoke("inspect", "rs", "--turn", "5", "--db", db)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "recorded turn" in out and "window k=2" in out
    assert "window k=2: turns 3–4; dropped turns 1–2" in out
    assert "151 of 4,000 tokens (4%)" in out
    assert "estimated 151 · provider reported 151" in out
    assert "dropped turns 1–2" in out.splitlines() and "dropped: dropped" not in out
    assert "turn 3 user: The jug has a crack" in out
    assert "Thursday works. Do I need to send the cracked jug back first?" in out


def test_next_shows_what_would_be_sent_without_calling_the_model(
    replayed: tuple[str, Path]
) -> None:
    db, log = replayed
    before = log.read_text(encoding="utf-8")
    data = inspect_json(db, "--next", "What was my order number?", "--provider", "scripted")
    assert data["mode"] == "next" and data["turn"] is None
    messages = data["messages"]
    assert isinstance(messages, list)
    assert messages[-1] == {"role": "user", "content": "What was my order number?"}
    history = [m for p in data["context"]["parts"] if p["kind"] == "history"  # type: ignore[index]
               for m in p["messages"]]
    assert [m["turn"] for m in history] == [29, 29, 30, 30]
    assert log.read_text(encoding="utf-8") == before  # no model call
    with Store(db) as store:
        assert len(store.turns.turns(store.sessions.session("rs").id)) == 30  # nothing stored


def test_what_if_under_another_strategy_builds_on_the_history_it_had(
    replayed: tuple[str, Path]
) -> None:
    db, _ = replayed
    data = inspect_json(db, "--turn", "5", "--strategy", "buffer", "--provider", "scripted")
    assert data["mode"] == "what-if" and data["strategy"] == {"name": "buffer", "params": {},
                                                                "label": "buffer"}
    assert data["input"] == "Thursday works. Do I need to send the cracked jug back first?"
    history = [m for p in data["context"]["parts"] if p["kind"] == "history"  # type: ignore[index]
               for m in p["messages"]]
    assert [m["turn"] for m in history] == [1, 1, 2, 2, 3, 3, 4, 4]
    # buffer keeps no summaries or facts: built from the stored history, nothing replayed
    assert data["replayed"] == {"turns": 0, "strategy_model_calls": 0}
    narrower = inspect_json(db, "--next", "hi", "--param", "k=1", "--provider", "scripted")
    parts = {p["kind"]: p for p in narrower["context"]["parts"]}  # type: ignore[index]
    assert parts["history"]["reason"] == "window k=1: turn 30; dropped turns 1–29"
    view = invoke("inspect", "rs", "--turn", "5", "--strategy", "buffer",
                  "--provider", "scripted", "--db", db)
    assert "what-if" in view.stdout and "built from the stored history" in view.stdout
    # A summary is rebuilt from the turns before the one asked about, in a scratch store.
    summarized = inspect_json(db, "--turn", "30", "--strategy", "summary-buffer:max_tokens=400",
                              "--provider", "scripted")
    assert summarized["replayed"]["turns"] == 29  # type: ignore[index]
    assert summarized["replayed"]["strategy_model_calls"] >= 1  # type: ignore[index]
    kinds = [p["kind"] for p in summarized["context"]["parts"]]  # type: ignore[index]
    assert "summary" in kinds
    with Store(db) as store:
        assert store.memory.summaries(store.sessions.session("rs").id) == []


def test_next_with_the_sessions_strategy_under_other_parameters_rebuilds_its_state(
    tmp_path: Path,
) -> None:
    # The stored summary was kept under the session's parameters: a what-if naming the same
    # strategy with others must not show it as theirs (it showed summary v6, 248 tokens).
    db = str(tmp_path / "x.db")
    said = "".join(f"turn {i}: my order ORD-77{i} shipped to 杭州 on 2026-03-1{i}, budget 500{i}"
                   f" yuan, sister Alice{i} picks it up\n" for i in range(1, 7))
    assert invoke("chat", "S1", "-s", "summary", "--provider", "scripted", "--db", db,
                  input=said).exit_code == 0

    def seen(strategy: str) -> dict[str, object]:
        result = invoke("inspect", "S1", "--next", "x", "--strategy", strategy, "--provider",
                        "scripted", "--db", db, "--json")
        assert result.exit_code == 0, result.stderr
        data: dict[str, object] = json.loads(result.stdout)
        return data

    def summary(data: dict[str, object]) -> dict[str, object]:
        part: dict[str, object] = next(p for p in data["context"]["parts"]  # type: ignore[attr-defined]
                                       if p["kind"] == "summary")
        return part

    stored = seen("summary")
    assert stored["replayed"] is None  # the session's own: its stored summary, as it is
    narrow = seen("summary:summary_max_tokens=30")
    assert narrow["replayed"]["turns"] == 6  # type: ignore[index]
    assert narrow["strategy"]["params"]["summary_max_tokens"] == 30  # type: ignore[index]
    assert summary(narrow)["tokens"] < summary(stored)["tokens"]  # type: ignore[operator]
    with Store(db) as store:  # nothing stored by the what-if
        assert len(store.memory.summaries(store.sessions.session("S1").id)) == 6


def test_summaries_lists_versions_with_dropped_anchors(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    with Store(db) as store:
        session = store.sessions.create_session("trip", "summary", {}, model="scripted")
        ids = store.history.import_messages(session.id, [
            {"role": "user", "content": "预算五千元，三月十五日出发"},
            {"role": "assistant", "content": "好的"},
        ])
        store.memory.add_summary(session.id, "summary", "用户预算五千元，三月十五日出发。",
                                 covered_ids=ids, anchors=["五千元", "三月十五日"])
        store.memory.add_summary(session.id, "summary", "用户要去旅行。", covered_ids=ids,
                                 anchors=[], dropped_anchors=["五千元", "三月十五日"])
    result = invoke("inspect", "trip", "--summaries", "--db", str(db), "--json")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["summaries"]
    assert [(r["version"], r["covered_messages"], r["dropped_anchors"]) for r in rows] == [
        (1, 2, []), (2, 2, ["五千元", "三月十五日"])]
    assert rows[1]["tokens"] > 0 and rows[1]["text"] == "用户要去旅行。"
    table = invoke("inspect", "trip", "--summaries", "--db", str(db))
    assert "summary versions" in table.stdout and "用户预算五千元" in table.stdout
    assert "五千元," in table.stdout and "三月十五日" in table.stdout
    # And a session with no recorded turns says so.
    empty = invoke("inspect", "trip", "--db", str(db))
    assert empty.exit_code == 1
    assert empty.stderr.startswith("error: turn 1 of session 'trip' was imported or forked:")


def test_local_turns_show_the_rendered_prompt(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    prompt = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
    context = {"tokens": 20, "budget": 4000, "dropped": None, "warnings": [], "parts": [
        {"kind": "input", "reason": "the new user input (always sent)", "tokens": 8,
         "messages": [{"role": "user", "content": "hi", "tokens": 8, "id": None,
                       "turn": None}]}]}
    with Store(db) as store:
        session = store.sessions.create_session("loc", "buffer", {}, provider="local", model="smol")
        store.turns.commit_turn(TurnRecord(session.id, "ok", "hi", context, "buffer", reply="hello",
                                           provider="local", model="smol", estimated_tokens=11,
                                           prompt_tokens=31, latency_ms=370,
                                           rendered_prompt=prompt))
    result = invoke("inspect", "loc", "--db", str(db))
    assert result.exit_code == 0, result.stderr
    assert "rendered prompt (exact model input)" in result.stdout
    assert "<|im_start|>user" in result.stdout
    assert "estimated 11 · provider reported 31 (+20)" in result.stdout
    assert "0.37 s" in result.stdout and "local / smol" in result.stdout
    data = json.loads(invoke("inspect", "loc", "--db", str(db), "--json").stdout)
    assert data["rendered_prompt"] == prompt


def test_errors_name_what_is_missing(replayed: tuple[str, Path]) -> None:
    db, _ = replayed
    missing = invoke("inspect", "nope", "--db", db)
    assert missing.exit_code == 1
    assert missing.stderr == (f"error: no session named 'nope' in {db}"
        " (`chatmem sessions list` lists them)\n")
    # How many turns there are, not only that this one is missing (with --json too).
    for json_flag in ([], ["--json"]):
        turn = invoke("inspect", "rs", "--turn", "99", "--db", db, *json_flag)
        assert turn.exit_code == 1 and turn.stdout == ""
        assert turn.stderr == "error: session 'rs' has no turn 99: it has 30\n"
    bad = invoke("inspect", "rs", "--strategy", "nope", "--db", db)
    assert bad.exit_code == 2 and bad.stderr.startswith("error: unknown strategy 'nope'")


def test_the_turn_may_follow_the_session_as_a_word(replayed: tuple[str, Path]) -> None:
    db, _ = replayed
    assert inspect_json(db, "5") == inspect_json(db, "--turn", "5") != inspect_json(db)
    both = invoke("inspect", "rs", "5", "--turn", "6", "--db", db)
    assert both.exit_code == 2
    assert both.stderr == "error: two turns given: 5 and --turn 6; give one\n"
    assert invoke("inspect", "rs", "5", "--turn", "5", "--db", db, "--json").exit_code == 0
    zero = invoke("inspect", "rs", "0", "--db", db)
    assert zero.exit_code == 2 and "TURN" in zero.stderr


def test_a_what_if_labels_the_recorded_turns_counts_apart_from_its_own(
    replayed: tuple[str, Path]
) -> None:
    db, _ = replayed
    recorded = inspect_json(db, "--turn", "5")["turn"]
    assert isinstance(recorded, dict)
    what_if = inspect_json(db, "--turn", "5", "--strategy", "buffer", "--provider", "scripted")
    tokens = what_if["context"]["tokens"]  # type: ignore[index]
    assert tokens != recorded["estimated_tokens"]
    out = invoke("inspect", "rs", "--turn", "5", "--strategy", "buffer",
                 "--provider", "scripted", "--db", db,
                 width=200).stdout
    assert f"{tokens:,} of 4,000 tokens" in out
    assert f"what-if estimated {tokens:,} · provider reported –" in out
    assert (f"recorded turn  turn 5 (window): estimated {recorded['estimated_tokens']:,}"
            f" · provider reported {recorded['prompt_tokens']:,}") in out


def test_summary_versions_say_which_turns_they_cover(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    with Store(db) as store:
        session = store.sessions.create_session("trip", "summary", {}, model="scripted")
        ids = store.history.import_messages(session.id, [
            {"role": "user", "content": "预算五千元"}, {"role": "assistant", "content": "好的"},
            {"role": "user", "content": "三月十五日出发"}, {"role": "assistant", "content": "好"},
        ])
        store.memory.add_summary(session.id, "summary", "预算五千元。", covered_ids=ids[:2],
                                 anchors=[])
        store.memory.add_summary(session.id, "summary", "预算五千元，三月十五日出发。",
                                 covered_ids=ids[2:], anchors=[])
    data = json.loads(invoke("inspect", "trip", "--summaries", "--db", str(db),
                             "--json").stdout)
    assert [r["covered_turn"] for r in data["summaries"]] == [1, 2]
    table = invoke("inspect", "trip", "--summaries", "--db", str(db),
                   width=120).stdout
    rows = [line for line in table.splitlines() if line.startswith("│ ")]
    assert " turn 1 " in rows[0]
    assert "turns 1–2" in rows[1] and "msgs" not in table


def test_tokens_the_chat_template_adds_get_their_own_row(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    prompt = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM<|im_end|>\n"
              "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    context = {"tokens": 10, "budget": 4000, "dropped": None, "warnings": [], "priming": 4,
               "parts": [{"kind": "input", "reason": "the new user input (always sent)",
                          "tokens": 6, "messages": [{"role": "user", "content": "hi",
                                                     "tokens": 6, "id": None, "turn": None}]}]}
    with Store(db) as store:
        session = store.sessions.create_session("nosys", "buffer", {}, provider="local",
                                                model="smol")
        store.turns.commit_turn(TurnRecord(session.id, "ok", "hi", context, "buffer", reply="hello",
                                           provider="local", model="smol", estimated_tokens=31,
                                           prompt_tokens=31, rendered_prompt=prompt))
    out = invoke("inspect", "nosys", "--db", str(db),
                 width=200).stdout
    # input 6 + priming 4 + template 21 = the 31 the model counted
    assert "│ reply priming │          │      4 │" in out
    assert "│ chat template │          │    +21 │ text the chat template adds" in out
    assert "31 of 4,000 tokens (1%)" in out and "estimated 31 · provider reported 31" in out
    assert "the rendered prompt below shows them" in out


def test_a_turn_counted_approximately_is_shown_with_the_mark(tmp_path, chat_server) -> None:


    db = str(tmp_path / "approx.db")
    env = {"OPENAI_BASE_URL": chat_server.base_url}
    # A model chatmem has no tokenizer for: counted with cl100k_base, approximately.
    asked = invoke("ask", "hello there", "--session", "a", "--db", db,
                   "--provider", "openai", "--model", "some-local-model", env=env)
    assert asked.exit_code == 0, asked.stderr
    asked = invoke("ask", "hello there", "--session", "b", "--db", db,
                   "--provider", "scripted")
    assert asked.exit_code == 0, asked.stderr
    shown = {name: invoke("inspect", name, "--db", db).stdout for name in "ab"}
    assert "≈" in shown["a"] and "≈" not in shown["b"]


def test_json_words_reasons_and_shows_what_an_older_version_stored_as_it_was(
    tmp_path: Path,
) -> None:
    db = tmp_path / "x.db"
    history = {"kind": "history", "tokens": 14, "messages": [
        {"role": "user", "content": "你好", "tokens": 14, "id": None, "turn": 4}]}
    typed = {"kind": "input", "tokens": 14, "messages": [
        {"role": "user", "content": "hi", "tokens": 14, "id": None, "turn": None}]}
    # As an older version stored it: reasons and the dropped note as sentences.
    old = {"tokens": 31, "budget": 4000, "dropped": "dropped turns 1–3", "warnings": [],
           "priming": 3, "parts": [
               {**history, "reason": "window k=1: turn 4; dropped turns 1–3"},
               {**typed, "reason": "the new user input (always sent)"}]}
    # As this version stores it: values tagged by kind.
    new = {**old, "dropped": [{"kind": "dropped_turns", "turns": [1, 3],
                               "recalled_messages": 0, "recalled_turns": 0}],
           "parts": [{**history, "reason": {
               "kind": "newest_turns", "strategy": "window", "setting": "k", "value": 1,
               "turns": [4, 4], "dropped": [1, 3], "to_fit": False, "recalled": 0,
               "behind": None}}, {**typed, "reason": {"kind": "new_input"}}]}
    with Store(db) as store:
        for name, context in (("old", old), ("new", new)):
            session = store.sessions.create_session(name, "window", {"k": 1})
            store.turns.commit_turn(TurnRecord(session.id, "ok", "hi", context, "window",
                                               reply="ok"))
    before = db.read_bytes()
    shown = {}
    for name in ("old", "new"):
        result = invoke("inspect", name, "--db", str(db), "--json")
        assert result.exit_code == 0, result.stderr
        shown[name] = json.loads(result.stdout)["context"]
    assert db.read_bytes() == before
    # Both read as the older version wrote them: `reason` and `dropped` stay strings (each
    # message with its transcript id, none here, read from the history).
    read = {**old, "parts": [{**p, "messages": [{**m, "external_id": None}
                                                for m in p["messages"]]} for p in old["parts"]]}
    for key in ("tokens", "budget", "dropped", "warnings", "priming", "parts"):
        assert shown["old"][key] == shown["new"][key] == read[key], key


def test_recall_rows_are_stored_by_value_and_worded_in_json(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    lines = "".join(f"note {n}: the fossil museum opens at {n} am\n" for n in range(1, 9))
    chatted = invoke("chat", "r", "-s", "retrieval:mode=bm25,recent=1,max_tokens=120",
                     "--provider", "scripted", "--db", db,
                     input=lines + "when does the fossil museum open?\n")
    assert chatted.exit_code == 0, chatted.stderr
    with Store(db) as store:
        stored = store.turns.turn(store.sessions.session("r").id, None).context["recall"]
    shown = json.loads(invoke("inspect", "r", "--db", db, "--json").stdout)["context"]["recall"]
    assert [row["id"] for row in shown] == [row["id"] for row in stored]
    assert {row["why"] for row in stored} >= {"kept", "no_room"}
    assert {row["why"] for row in shown} >= {"kept", "budget: no room left"}


@pytest.mark.parametrize("how", [
    pytest.param([], id="recorded turn"),
    pytest.param(["--next", "when does the fossil museum open? 化石"], id="next"),
    pytest.param(["--turn", "9", "--strategy", "summary-buffer+retrieval:retrieval.mode=bm25,"
                  "retrieval.recent=1,retrieval.max_tokens=120"], id="what-if rebuilt"),
])
def test_every_recall_candidate_shows_what_it_said_kept_or_left_out(
        tmp_path: Path, how: list[str]) -> None:
    """The recall table's point is the best left out beside the kept: each row says its
    message's text, also where a what-if ranked copies in a scratch history (other ids)."""
    db = str(tmp_path / "r.db")
    other = invoke("chat", "other", "--provider", "scripted", "--db", db,
                   input="an unrelated chat\nabout nothing\n")
    assert other.exit_code == 0, other.stderr
    said = [f"note {n}: the fossil museum 化石馆 opens at {n} am" for n in range(1, 9)]
    chatted = invoke("chat", "r", "-s", "retrieval:mode=bm25,recent=1,max_tokens=120",
                     "--provider", "scripted", "--db", db,
                     input="\n".join(said) + "\nwhen does the fossil museum open?\n")
    assert chatted.exit_code == 0, chatted.stderr
    result = invoke("inspect", "r", "--db", db, "--provider", "scripted", "--json", *how)
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["context"]["recall"]
    left_out = [row for row in rows if not row["kept"]]
    assert left_out and any(row["kept"] for row in rows)
    for row in rows:
        assert row["text"] in said or row["text"].removeprefix(
            f"echo #{row['turn']}: ") in said, row
    table = invoke("inspect", "r", "--db", db, "--provider", "scripted", *how,
                   env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.stderr
    shown = [line for line in table.stdout.splitlines() if "budget:" in line]
    assert len(shown) == len([row for row in left_out if row["why"].startswith("budget")])
    assert all("fossil museum 化石馆" in line for line in shown), shown


def test_an_imported_session_has_what_ifs_at_its_turns_and_says_none_was_recorded(
    tmp_path: Path,
) -> None:
    # The inspect --help example run on the import --help example's session.
    db = str(tmp_path / "x.db")
    assert invoke("sessions", "import", SUPPORT, "support", "--db", db).exit_code == 0
    result = invoke("inspect", "support", "12", "--strategy", "window", "--param", "k=2",
                    "--db", db, "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["mode"] == "what-if" and data["turn"] is None and data["history_turn"] == 12
    assert data["input"] == "And if I want to make hot soup?"
    history = [m for m in data["messages"] if m["role"] != "system"][:-1]
    assert len(history) == 4  # turns 10 and 11: what it had before turn 12, not after
    assert data["messages"][-1] == {"role": "user", "content": data["input"]}
    # Without a number: the history's last turn.
    last = invoke("inspect", "support", "-s", "window", "--db", db, "--json")
    assert last.exit_code == 0, last.stderr
    assert json.loads(last.stdout)["history_turn"] == 30
    for args in (("12",), ()):
        plain = invoke("inspect", "support", *args, "--db", db)
        assert plain.exit_code == 1
        assert "imported or forked: no context was recorded" in plain.stderr
        assert "--strategy" in plain.stderr and "--next" in plain.stderr
    beyond = invoke("inspect", "support", "31", "-s", "window", "--db", db)
    assert beyond.exit_code == 1 and "no turn 31" in beyond.stderr


def test_inspect_logs_and_explain_turn_number_turns_as_the_conversation_does(
    tmp_path: Path,
) -> None:
    """30 imported turns and 2 chatted: turns 31 and 32 are the chat's everywhere (as
    `sessions show` and fork --at-turn count), and only an imported turn has no context."""
    import asyncio

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    db = str(tmp_path / "x.db")
    assert invoke("sessions", "import", SUPPORT, "support", "--db", db).exit_code == 0

    def inspect_json(db: str, *args: str) -> dict[str, object]:
        result = invoke("inspect", "support", "--db", db, "--json", *args)
        assert result.exit_code == 0, result.stderr
        return dict(json.loads(result.stdout))

    chatted = invoke("chat", "support", "--provider", "scripted", "--db", db,
                     input="我的订单号是 ORD-31\nwhere is ORD-31?\n")
    assert chatted.exit_code == 0, chatted.stderr
    for number, said in (("31", "我的订单号是 ORD-31"), ("32", "where is ORD-31?")):
        seen = inspect_json(db, number)
        assert seen["mode"] == "turn" and seen["input"] == said
        assert seen["turn"]["number"] == int(number)  # type: ignore[index]
    # The same two turns are the session's first and second requests.
    assert inspect_json(db, "--request", "1")["input"] == "我的订单号是 ORD-31"
    assert inspect_json(db, "--request", "2")["turn"]["number"] == 32  # type: ignore[index]
    both = invoke("inspect", "support", "31", "--request", "1", "--db", db)
    assert both.exit_code == 2 and "--request shows one recorded request" in both.stderr
    gone = invoke("inspect", "support", "--request", "3", "--db", db)
    # It named turn 3, which the history has: the numbers are requests', and so is the count.
    assert gone.exit_code == 1
    assert gone.stderr == "error: session 'support' has no request 3 (2 requests)\n"
    for number in ("1", "12"):
        plain = invoke("inspect", "support", number, "--db", db)
        assert plain.exit_code == 1
        assert f"turn {number} of session 'support' was imported or forked" in plain.stderr
    what_if = inspect_json(db, "12", "-s", "window", "--param", "k=2", "--provider", "scripted")
    assert what_if["history_turn"] == 12 and what_if["input"] == "And if I want to make hot soup?"
    logs = invoke("logs", "--session", "support", "--json", "--db", db)
    assert logs.exit_code == 0, logs.stderr
    assert [(e["turn"], e["number"], e["input"]) for e in json.loads(logs.stdout)] == [
        (32, 32, "where is ORD-31?"), (31, 31, "我的订单号是 ORD-31")]
    table = invoke("logs", "--session", "support", "--db", db, env={"COLUMNS": "200"})
    assert "support #32" in table.stdout and "support #31" in table.stdout

    async def explain() -> tuple[dict[str, object], bool]:
        params = StdioServerParameters(command=sys.executable, args=[
            "-m", "chatmem", "mcp", "--db", db, "--provider", "scripted"], env=dict(os.environ))
        # errlog given: stdio_client's default is the sys.stderr of when the mcp SDK was
        # first imported, a CliRunner's stream without a file descriptor if that was in
        # an earlier test's command.
        async with stdio_client(params, errlog=sys.stderr) as (read, write), \
                ClientSession(read, write) as client:
            await client.initialize()
            got = await client.call_tool("explain_turn", {"conversation_id": "support",
                                                          "turn": 31})
            imported = await client.call_tool("explain_turn", {"conversation_id": "support",
                                                               "turn": 12})
            return got.structured_content or {}, imported.is_error

    explained, refused = asyncio.run(asyncio.wait_for(explain(), 120))
    assert explained["turn"] == 31 and str(explained["input"]).startswith("我的订单号是")
    assert refused


def test_an_imported_sessions_messages_show_their_transcript_ids_beside_their_row_ids(
    tmp_path: Path,
) -> None:
    """An import keeps each message's transcript id, which probes and eval's found_ids name,
    yet inspect --json and sessions show --json gave only row ids: nothing matched them."""
    db = str(tmp_path / "x.db")
    assert invoke("sessions", "import", SUPPORT, "support", "--db", db).exit_code == 0
    seen = invoke("inspect", "support", "12", "-s", "window", "-p", "k=2", "--db", db, "--json")
    assert seen.exit_code == 0, seen.stderr
    messages = [m for p in json.loads(seen.stdout)["context"]["parts"] for m in p["messages"]]
    assert [(m["role"], m["external_id"]) for m in messages] == [
        ("system", None), ("user", "t10u"), ("assistant", "t10a"), ("user", "t11u"),
        ("assistant", "t11a"), ("user", None)]
    shown = invoke("sessions", "show", "support", "--turns", "2", "--db", db, "--json")
    assert shown.exit_code == 0, shown.stderr
    assert [(m["turn"], m["external_id"]) for m in json.loads(shown.stdout)["messages"]] == [
        (2, "t2u"), (2, "t2a")]


def test_summaries_table_times_are_in_the_timezone_setting_s_zone(tmp_path: Path) -> None:
    """`inspect --summaries` showed `created` in the process's zone ($TZ) whatever the
    timezone setting said; --json keeps UTC."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    db = tmp_path / "x.db"
    with Store(db) as store:
        session = store.sessions.create_session("行程", "summary", {}, model="scripted")
        ids = store.history.import_messages(session.id, [
            {"role": "user", "content": "预算五千元"}, {"role": "assistant", "content": "好的"}])
        store.memory.add_summary(session.id, "summary", "预算五千元。", covered_ids=ids,
                                 anchors=[])
    env = {"CHATMEM_TIMEZONE": "Asia/Kathmandu", "TZ": "UTC"}  # +05:45, never $TZ's
    stored = json.loads(invoke("inspect", "行程", "--summaries", "--db", str(db), "--json",
                               env=env).stdout)["summaries"][0]["created_at"]
    assert stored.endswith("+00:00")
    local = (datetime.fromisoformat(stored).astimezone(ZoneInfo("Asia/Kathmandu"))
             .strftime("%Y-%m-%d %H:%M"))
    table = invoke("inspect", "行程", "--summaries", "--db", str(db), env=env, width=160)
    assert table.exit_code == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if line.startswith("│ "))
    assert local in row, table.stdout


def test_a_turn_recorded_with_an_empty_context_inspects_as_sending_nothing(
        tmp_path: Path) -> None:
    """`{}`, which a write-share grantee may store as a turn's context, made the owner's
    inspect a KeyError traceback."""
    db = str(tmp_path / "h.db")
    invoke("ask", "你好", "--session", "s", "--provider", "scripted", "--db", db, code=0)
    with Store(tmp_path / "h.db") as store, store.write():
        store.db.execute("UPDATE turns SET context = '{}'")
    for args in (("inspect", "s", "1"), ("inspect", "s", "--request", "1")):
        result = invoke(*args, "--db", db)
        assert result.exit_code == 0 and "Traceback" not in result.output, result.output
        assert "0 tokens" in result.stdout or "(no budget)" in result.stdout


@pytest.mark.parametrize("strategy", ["buffer", "window:k=1", "summary"])
def test_a_what_if_at_a_turn_sends_the_files_that_turn_sent(tmp_path: Path,
                                                            strategy: str) -> None:
    # The files went with the input whatever the strategy (a fixed part every budget makes
    # room for): a what-if without them showed the turn cheaper by the files' tokens, under
    # the very strategy it ran with too.
    db = str(tmp_path / "x.db")
    notes = tmp_path / "笔记.md"
    notes.write_text("我们五月三日出发去杭州。\nThe flight is MU5137.\n", encoding="utf-8")
    for args in (["我住在杭州"], ["what does it say?", "-f", str(notes)]):
        assert invoke("ask", "s", *args, "-s", "buffer", "--save", "--provider", "scripted",
                      "--db", db).exit_code == 0
    recorded = inspect_json_of(db, "s", "--turn", "2")
    asked = inspect_json_of(db, "s", "--turn", "2", "--strategy", strategy,
                            "--provider", "scripted")
    files = [p for p in recorded["context"]["parts"] if p["kind"] == "files"]
    assert [p for p in asked["context"]["parts"] if p["kind"] == "files"] == files
    assert asked["messages"][-2:] == recorded["messages"][-2:]  # the file, then the input
    if strategy == "buffer":
        assert asked["messages"] == recorded["messages"]
        assert asked["context"]["tokens"] == recorded["context"]["tokens"]


def inspect_json_of(db: str, session: str, *args: str) -> dict[str, Any]:
    result = invoke("inspect", session, "--db", db, "--json", *args)
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_a_what_if_at_a_turn_keeps_the_system_prompt_that_turn_was_sent_with(
        tmp_path: Path) -> None:
    # `ask --system` for one call is recorded with the turn, not as the session's: the
    # what-if under the very strategy it ran with showed the session's prompt instead.
    db = str(tmp_path / "x.db")
    for args in (["你好", "--save"], ["what now?", "--system", "你是海盗，用长诗回答。"]):
        assert invoke("ask", "s", *args, "-s", "buffer", "--provider", "scripted",
                      "--db", db).exit_code == 0
    recorded = inspect_json_of(db, "s", "--turn", "2")
    asked = inspect_json_of(db, "s", "--turn", "2", "--strategy", "buffer",
                            "--provider", "scripted")
    assert recorded["messages"][0] == {"role": "system", "content": "你是海盗，用长诗回答。"}
    assert asked["messages"] == recorded["messages"]
    assert asked["context"]["tokens"] == recorded["context"]["tokens"]


def test_a_what_if_at_a_group_chat_turn_leaves_its_askers_label_unsearched(
        tmp_path: Path) -> None:
    """Leftover: the turn was sent with alice's label left out of what recall searched
    (ContextRequest.speaker), but `inspect --strategy` at that turn searched "alice: ...",
    so every message alice wrote matched by her name: the same strategy's what-if showed
    recall the turn never had."""
    transcript = write_group_chat(tmp_path / "group.json")
    db = str(tmp_path / "h.db")
    spec = "retrieval:recent=1,mode=bm25"
    result = invoke("replay", str(transcript), "-s", spec, "--save-as", "g", "--db", db,
                    "--provider", "scripted")
    assert result.exit_code == 0, result.stderr

    def matched(*strategy: str) -> list[str]:
        shown = invoke("inspect", "g", "--json", "--db", db, *strategy)
        assert shown.exit_code == 0, shown.stderr
        return [r["text"] for r in json.loads(shown.stdout)["context"]["recall"]
                if r["bm25"] > 0]

    assert matched() == ["bob: The ferry leaves at nine"]
    assert matched("-s", spec) == matched()


def test_a_what_if_counts_its_turns_and_model_calls_in_words_that_agree(tmp_path: Path) -> None:
    """One catch-up of one summarizer call read "(1 strategy model calls)" (plugin70)."""
    from cli_runner import run

    db = tmp_path / "h.db"
    transcript = tmp_path / "订单.jsonl"
    transcript.write_text("".join(
        json.dumps({"role": role, "content": text}, ensure_ascii=False) + "\n"
        for i in range(12)
        for role, text in (("user", f"第{i}天 I live in 杭州 and my order is ORD-{i}"),
                           ("assistant", f"记下了 ORD-{i}"))), encoding="utf-8")
    run(db, "sessions", "import", str(transcript), "订单", code=0)
    shown = run(db, "inspect", "订单", "-s", "summary-buffer:max_tokens=120", "--provider",
                "scripted", code=0, width=300)
    data = json.loads(run(db, "inspect", "订单", "-s", "summary-buffer:max_tokens=120",
                          "--provider", "scripted", "--json", code=0).stdout)
    assert data["replayed"]["strategy_model_calls"] == 1
    assert "from 11 turns in one catch-up (1 strategy model call);" in shown.stdout
