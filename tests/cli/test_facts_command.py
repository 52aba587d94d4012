"""`chatmem facts list|forget`, and the REPL's /facts, /remember and /forget."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import invoke, repl
from file_hash import file_bytes
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store


def errors(err: str) -> list[str]:
    """The error lines of the REPL's stderr (the banner and status lines go there too)."""
    return [line for line in err.splitlines() if line.startswith("error")]


def facts_json(db: Path, *args: str) -> list[dict]:
    result = invoke("facts", "list", "--db", str(db), "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_list_filters_by_user_and_session(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    # Both opted in to a profile: their names follow them; the rest stays in the session.
    repl(db, "trip", ["My name is Alice.", "My order id is ORD-7731."], user="alice",
         user_facts=True)
    repl(db, "work", ["My name is Bob.", "My desk is 4B."], user="bob", user_facts=True)
    everything = facts_json(db)
    assert [(f["key"], f["value"], f["scope"], f["owner"], f["source"]) for f in everything] == [
        ("name", "Alice", "user", "user alice", "turn 1 of session trip"),
        ("order id", "ORD-7731", "session", "session trip", "turn 2 of session trip"),
        ("name", "Bob", "user", "user bob", "turn 1 of session work"),
        ("desk", "4B", "session", "session work", "turn 2 of session work"),
    ]
    assert [f["value"] for f in facts_json(db, "--user", "bob")] == ["Bob"]
    assert [f["value"] for f in facts_json(db, "--session", "trip")] == ["Alice", "ORD-7731"]
    table = invoke("facts", "list", "--db", str(db), "--session", "work")
    assert table.exit_code == 0
    assert "desk" in table.stdout and "4B" in table.stdout and "Alice" not in table.stdout


def test_list_of_an_unknown_session_is_an_error(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    repl(db, "a", ["hello"])
    result = invoke("facts", "list", "--db", str(db), "--session", "nope")
    assert result.exit_code == 1
    assert result.stderr == (f"error: no session named 'nope' in {db}"
        " (`chatmem sessions list` lists them)\n")


def test_forget_by_key_or_id_and_its_errors(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    repl(db, "a", ["My name is Alice."], user="alice", user_facts=True)
    repl(db, "b", ["My name is Bob."], user="bob", user_facts=True)
    ambiguous = invoke("facts", "forget", "name", "--db", str(db))
    assert ambiguous.exit_code == 2
    assert ambiguous.stderr == (
        "error: key 'name' names 2 facts (ids 1, 2); give an id, --user or --session\n")
    missing = invoke("facts", "forget", "77", "--db", str(db))
    assert missing.exit_code == 1
    assert missing.stderr == "error: no fact '77'; `chatmem facts list` shows ids and keys\n"
    done = invoke("facts", "forget", "name", "--user", "bob", "--db", str(db))
    assert done.exit_code == 0 and done.stderr == "forgot fact 2: name (user bob)\n"
    assert [f["value"] for f in facts_json(db)] == ["Alice"]
    again = invoke("facts", "forget", "2", "--db", str(db))
    assert again.exit_code == 1
    # --json prints only --dry-run's plan: without it, refused before anything is forgotten.
    for purge in ((), ("--purge", "--yes")):
        refused = invoke("facts", "forget", "1", *purge, "--json", "--db", str(db))
        assert refused.exit_code == 2 and refused.stdout == ""
        assert refused.stderr.startswith("error: --json goes with --dry-run")
    assert [f["value"] for f in facts_json(db)] == ["Alice"]


def test_repl_remember_facts_and_forget(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    out, err = repl(db, "a", [
        "/remember --user budget: 5000 EUR",
        "/remember 预算：五千元",
        "/remember I am allergic to peanuts",
        "/remember just a thought",
        "/facts",
    ])
    assert errors(err) == []
    assert out == ""  # stdout carries replies only; command output goes to stderr
    # In this session unless --user puts it in the profile.
    assert [(f["id"], f["key"], f["value"], f["scope"]) for f in facts_json(db)] == [
        (1, "budget", "5000 EUR", "user"), (2, "预算", "五千元", "session"),
        (3, "allergy", "peanuts", "session"), (4, "note 1", "just a thought", "session")]
    table = err[err.index("┏"):]
    for cell in ("budget", "5000 EUR", "预算", "五千元", "/remember", "session a", "user default"):
        assert cell in table
    out, err = repl(db, "a", ["/forget budget", "/forget 2", "/forget nope", "/forget"])
    assert [f["id"] for f in facts_json(db)] == [3, 4]
    assert errors(err) == [
        "error: no fact 'nope' in this session; /facts lists them",
        "error: /forget: missing argument; usage: /forget ID|KEY|PIN, e.g. /forget order id",
    ]
    with Store(db) as store:
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "a")
        sent = json.dumps(engine.build_context("hi").to_json(), ensure_ascii=False)
    assert "5000 EUR" not in sent and "五千元" not in sent and "peanuts" in sent


def test_forget_in_the_repl_refuses_a_key_that_names_two_facts(tmp_path: Path) -> None:
    # One rule with `facts forget` (memory/forgetting.py): the candidates are listed and
    # nothing is forgotten until an id picks one.
    db = tmp_path / "x.db"
    repl(db, "b", ["/remember 预算: 300 EUR"], user="ana", user_facts=True)
    repl(db, "a", ["/remember --user 预算: 5000 EUR"], user="ana", user_facts=True)
    _, err = repl(db, "b", ["/forget 预算"], user="ana", user_facts=True)
    assert errors(err) == ["error: key '预算' names 2 facts (ids 1, 2); give an id (see /facts)"]
    assert sorted(f["value"] for f in facts_json(db)) == ["300 EUR", "5000 EUR"]
    _, err = repl(db, "b", ["/forget 1"], user="ana", user_facts=True)
    assert errors(err) == []
    assert [f["value"] for f in facts_json(db)] == ["5000 EUR"]


def test_remember_without_text_is_a_usage_error(tmp_path: Path) -> None:
    _, err = repl(tmp_path / "x.db", "a", ["/remember --user"])
    assert errors(err) == [
        "error: /remember: missing TEXT; usage: /remember [--user] [--for AGE] TEXT, "
        "e.g. /remember budget: 5000 EUR"]


def test_purge_leaves_no_trace_in_the_database_file(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    secret = "zebra-4242-秘密"
    _, err = repl(db, "a", [f"/remember locker code: {secret}", "hello", "what is new?",
                            "/forget locker code", "and now?"])
    assert errors(err) == []
    with Store(db) as store:
        (_, turn2, turn3) = store.turns.turns(store.sessions.session("a").id)
        assert secret in json.dumps(turn2.context, ensure_ascii=False)
        assert secret not in json.dumps(turn3.context, ensure_ascii=False)
    assert secret.encode() in file_bytes(db)
    result = invoke("facts", "forget", "locker code", "--purge", "--db", str(db))
    assert result.exit_code == 0, result.stderr
    # The two turns that sent it are rewritten, and said so.
    assert result.stderr == ("erased fact 1: locker code (session); its value was replaced by"
                             " [forgotten] in 2 recorded turns (1 session)\n")
    assert secret.encode() not in file_bytes(db)
    assert facts_json(db) == []
    with Store(db) as store:
        assert len(store.turns.turns(store.sessions.session("a").id)) == 3




def test_remember_says_when_the_strategy_will_not_send_the_fact(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    out, err = repl(db, "a", ["/remember budget: 5000 EUR", "/facts"], strategy="summary-buffer")
    assert errors(err) == []
    note = ("note: strategy summary-buffer does not send remembered facts"
            " — try /strategy summary-buffer+entity")
    assert f"remembered fact 1: budget = 5000 EUR (session); {note}" in err
    assert err.rstrip().endswith(note)  # /facts repeats it under the table
    # The suggestion works: switched, the next context holds the fact.
    out, err = repl(db, "a", ["/strategy summary-buffer+entity", "/remember city: Lisbon"],
                    strategy="summary-buffer")
    assert errors(err) == [] and "note:" not in err and out == ""
    with Store(db) as store:
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "a")
        facts = engine.build_context("hi").part("facts")
    assert facts is not None and "5000 EUR" in facts.messages[0].content


def test_a_fact_sending_strategy_gets_no_note(tmp_path: Path) -> None:
    _, err = repl(tmp_path / "x.db", "a", ["/remember budget: 5000 EUR", "/facts"],
                  strategy="window+entity")
    assert errors(err) == [] and "note:" not in err
    assert [(f["key"], f["value"], f["scope"]) for f in facts_json(tmp_path / "x.db")] == [
        ("budget", "5000 EUR", "session")]


def pinning_chat(db: Path, session: str, monkeypatch) -> tuple[str, str]:
    """A `summary` session whose summarizer loses 五千元 (v1) and ORD-7731 (v2)."""
    from chatmem.providers.scripted import RULES
    from chatmem.providers.scripted_summary import extractive_summary

    monkeypatch.setitem(RULES, "summary", lambda m: extractive_summary(m)
                        .replace("五千元", "一笔预算").replace("ORD-7731", "the order"))
    return repl(db, session, ["我们的预算是五千元。", "My order is ORD-7731.", "/facts"],
                strategy="summary")


def test_pinned_details_are_listed_with_their_summary_version(tmp_path, monkeypatch) -> None:
    db = tmp_path / "x.db"
    _, err = pinning_chat(db, "a", monkeypatch)
    assert errors(err) == []
    table = err[err.index("┏"):]
    for cell in ("p1", "五千元", "summary v1 (pinned)", "p2", "ORD-7731", "summary v2 (pinned)"):
        assert cell in table
    rows = facts_json(db)
    assert [(r["kind"], r["id"], r["key"], r["value"], r["owner"], r["source"]) for r in rows] == [
        ("pinned", "p1", "(pinned)", "五千元", "session a", "summary v1 (pinned)"),
        ("pinned", "p2", "(pinned)", "ORD-7731", "session a", "summary v2 (pinned)"),
    ]
    assert all(r["created_at"] for r in rows)
    assert facts_json(db, "--user", "default") == []  # pins belong to sessions
    assert [r["id"] for r in facts_json(db, "--session", "a")] == ["p1", "p2"]


def test_forget_unpins_by_text_in_the_repl_and_it_stays_unpinned(tmp_path, monkeypatch) -> None:
    db = tmp_path / "x.db"
    pinning_chat(db, "a", monkeypatch)
    out, err = repl(db, "a", ["/forget 五千元", "预算还是五千元。", "/facts"], strategy="summary")
    assert errors(err) == []
    assert out == "echo #1: 预算还是五千元。\n"
    assert [r["value"] for r in facts_json(db)] == ["ORD-7731"]
    with Store(db) as store:
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "a")
        sent = engine.build_context("预算多少？").part("facts")
    assert sent is not None and "ORD-7731" in sent.messages[0].content
    assert "五千元" not in sent.messages[0].content


def test_facts_forget_unpins_by_id_and_its_errors(tmp_path, monkeypatch) -> None:
    db = tmp_path / "x.db"
    pinning_chat(db, "a", monkeypatch)
    pinning_chat(db, "b", monkeypatch)
    ambiguous = invoke("facts", "forget", "p2", "--db", str(db))
    assert ambiguous.exit_code == 2
    assert ambiguous.stderr == ("error: 'p2' names 2 facts (p2 of session a, p2 of session b);"
                                " give an id, --user or --session\n")
    purge = invoke("facts", "forget", "p2", "--session", "a", "--purge", "--db", str(db))
    assert purge.exit_code == 2
    assert purge.stderr == (
        "error: 'p2' is a pinned detail, a quotation of the conversation: unpin it without"
        " --purge (`chatmem sessions delete` erases the session)\n")
    done = invoke("facts", "forget", "p2", "--session", "a", "--db", str(db))
    assert done.exit_code == 0, done.stderr
    assert done.stderr == ("unpinned p2: ORD-7731 (summary v2 (pinned), session a);"
                           " it is not pinned again\n")
    assert [(r["value"], r["owner"]) for r in facts_json(db)] == [
        ("五千元", "session a"), ("五千元", "session b"), ("ORD-7731", "session b")]
    again = invoke("facts", "forget", "p2", "--session", "a", "--db", str(db))
    assert again.exit_code == 1
    assert again.stderr == "error: no fact 'p2'; `chatmem facts list` shows ids and keys\n"


def test_a_long_value_history_shows_the_last_few_unless_asked_for_all(tmp_path: Path) -> None:
    """A fact updated thousands of times printed every earlier value (30,000 table lines)."""
    db = tmp_path / "x.db"
    _, err = repl(db, "a", [f"/remember 订单: O{i}" for i in range(1, 8)] + ["/facts",
                                                                               "/facts --all"])
    [fact] = facts_json(db)
    # --json keeps every earlier value (a script may read them all) and counts them.
    assert [h["value"] for h in fact["history"]] == [f"O{i}" for i in range(1, 7)]
    assert fact["history_count"] == 6
    shown = invoke("facts", "list", "--db", str(db), width=200).stdout
    assert "O7 ← O6 ← O5 ← O4 ← … 3 older" in shown and "O1" not in shown
    whole = invoke("facts", "list", "--db", str(db), "--all-history", width=200).stdout
    assert "O7 ← O6 ← O5 ← O4 ← O3 ← O2 ← O1" in whole and "older" not in whole
    table = err[err.index("┏"):]
    assert "older" in table and "O4" in table and "O3" not in table and "O1" not in table
    assert errors(err) == ["error: /facts: unknown option --all; usage: /facts [--all-history],"
                           " e.g. /facts"]
    _, err = repl(db, "a", ["/facts --all-history"])
    table = err[err.index("┏"):]
    assert "O1" in table and "older" not in table


def test_an_imported_conversations_user_stays_in_its_session_not_the_profile(
        tmp_path: Path) -> None:
    """Whose profile an imported transcript's "user" is, no one said: a support log, a
    data set or a friend's chat imported then chatted in put its "My name is Mallory" in
    the importer's profile, over their own name, sent in every session of theirs as what
    they stated, and its "forget my city" erased theirs. A turn no request here asked sets
    and forgets the imported session's facts only (what is said in it from then on goes
    to the profile as anywhere: test_list_filters_by_user_and_session)."""
    db = tmp_path / "x.db"
    repl(db, "mine", ["My name is Ana.", "I live in Porto."], user_facts=True)
    log = tmp_path / "support.jsonl"
    log.write_text('{"role": "user", "content": "My name is Mallory."}\n'
                   '{"role": "assistant", "content": "Noted."}\n'
                   '{"role": "user", "content": "我对花生过敏。"}\n'
                   '{"role": "user", "content": "Forget my city."}\n', encoding="utf-8")
    assert invoke("sessions", "import", str(log), "theirs", "--no-index",
                  "--db", str(db)).exit_code == 0
    repl(db, "theirs", ["hello"], user_facts=True)
    assert [(f["key"], f["value"], f["scope"], f["source"]) for f in facts_json(db)] == [
        ("name", "Ana", "user", "turn 1 of session mine"),
        ("city", "Porto", "user", "turn 2 of session mine"),
        ("name", "Mallory", "session", "turn 1 of session theirs"),
        ("过敏", "花生", "session", "turn 2 of session theirs"),
    ]
    with Store(db) as store:
        mine = open_session(store, Settings(user_facts=True), ScriptedProvider(), "mine",
                            strategy="entity")
        sent = json.dumps(mine.build_context("what is my name?").messages(),
                          ensure_ascii=False)
    assert "Ana" in sent and "Porto" in sent
    assert "Mallory" not in sent and "花生" not in sent
