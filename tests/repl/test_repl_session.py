"""Session commands in the chat REPL: /new /sessions /switch /fork /undo /retry /system
/export /budget — their output and what they do to the history file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import chat, invoke
from local_model import local_model_missing

from chatmem.providers.scripted import ScriptedProvider
from chatmem.repl.loop import SLASH
from chatmem.store import Store
from chatmem.transcripts.reader import read_transcript


def status_lines(stderr: str) -> list[str]:
    """stderr without the banner and the per-turn token lines."""
    return [line for line in stderr.splitlines()
            if not line.startswith("session ") and not (" = " in line and " tokens" in line)]


def messages(db: Path, session: str) -> list[tuple[int, str, str]]:
    with Store(db) as store:
        return [(m.turn, m.role,
                 m.content) for m in store.history.messages(store.sessions.session(session).id)]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "x.db"
    result = chat(path, "trip", ["my order is ORD-7731", "我们五月去杭州", "what did I order?"],
                  "--strategy", "window", "--param", "k=2", "--system", "Answer briefly.")
    assert result.exit_code == 0, result.stderr
    return path


def test_new_starts_a_session_with_the_current_strategy_and_system(db: Path) -> None:
    result = chat(db, "trip", ["/new side", "hello side"])
    assert result.exit_code == 0, result.stderr
    assert status_lines(result.stderr) == ["new session side · window k=2 · 0 turns"]
    assert "echo #1: hello side" in result.stdout
    with Store(db) as store:
        side = store.sessions.session("side")
        assert (side.strategy, side.params, side.system) == ("window", {"k": 2},
                                                              "Answer briefly.")
    assert messages(db, "side") == [(1, "user", "hello side"),
                                    (1, "assistant", "echo #1: hello side")]
    assert len(messages(db, "trip")) == 6


def test_new_after_clearing_the_system_prompt_has_none(db: Path) -> None:
    # Cleared is a choice of its own, not "use the default": the new session has none.
    result = chat(db, "trip", ['/system ""', "/new 旁边", "/system", "你好"])
    assert result.exit_code == 0, result.stderr
    assert "system prompt  (none)" in [line.strip() for line in result.stderr.splitlines()]
    with Store(db) as store:
        side = store.sessions.session("旁边")
        assert side.system is None
        sent = store.turns.turn(side.id).context["parts"][0]["messages"]
        assert [m["role"] for m in sent] == ["user"]


def test_new_refuses_an_existing_name(db: Path) -> None:
    result = chat(db, "other", ["/new trip", "/new", "still here"])
    assert result.exit_code == 2
    assert status_lines(result.stderr) == [
        "error: a session named 'trip' already exists; /switch trip resumes it",
        "error: /new: missing argument; usage: /new SESSION, e.g. /new trip-b",
    ]
    assert messages(db, "other")[0] == (1, "user", "still here")
    assert len(messages(db, "trip")) == 6


def test_sessions_lists_every_session_and_marks_the_current_one(db: Path) -> None:
    result = chat(db, "旅行", ["/sessions"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""  # listings are not replies: they go to stderr
    table = result.stderr.splitlines()
    assert any(line.split()[:2] == ["*", "旅行"] for line in table)
    # As `chatmem sessions list` shows it: the parameters under the strategy.
    at = next(i for i, line in enumerate(table) if line.split()[:1] == ["trip"])
    assert table[at].split()[:4] == ["trip", "window", "6", "3"]
    assert table[at + 1].split() == ["k=2"]


def test_switch_resumes_another_session_with_its_own_strategy(db: Path) -> None:
    result = chat(db, "other", ["hi", "/switch trip", "and now?", "/switch trip",
                                "/switch nope", "/switch"], "--strategy", "buffer")
    assert result.exit_code == 2
    assert status_lines(result.stderr) == [
        "switched to session trip · window k=2 · 3 turns",
        "already in session trip",
        "error: no session named 'nope'; /sessions lists them, /new nope creates it",
        "error: /switch: missing argument; usage: /switch SESSION, e.g. /switch trip-b",
    ]
    assert result.stdout.splitlines() == ["echo #1: hi", "echo #2: and now?"]
    with Store(db) as store:
        trip = store.sessions.session("trip")
        last = store.turns.turn(trip.id)
        assert (last.input, last.strategy, last.params) == ("and now?", "window", {"k": 2})
        # window k=2 sent turns 2–3 and the system prompt of trip, not of other.
        sent = [m["content"] for p in last.context["parts"] for m in p["messages"]]
        assert sent[0] == "Answer briefly." and "my order is ORD-7731" not in sent
        assert store.sessions.session("other").strategy == "buffer"
    assert len(messages(db, "other")) == 2


def test_fork_copies_up_to_a_turn_and_switches(db: Path) -> None:
    result = chat(db, "trip", ["/fork early --at-turn 1", "second try"])
    assert result.exit_code == 0, result.stderr
    assert status_lines(result.stderr) == [
        "forked session trip → early at turn 1 of 3: 2 messages copied",
        "turn records (what was sent) stay with trip",
        "switched to session early · window k=2 · 1 turn",
    ]
    assert messages(db, "early") == [
        (1, "user", "my order is ORD-7731"), (1, "assistant", "echo #1: my order is ORD-7731"),
        (2, "user", "second try"), (2, "assistant", "echo #1: second try"),
    ]
    assert len(messages(db, "trip")) == 6


@pytest.mark.parametrize(("line", "error"), [
    ("/fork trip", "error: a session named 'trip' already exists"),
    ("/fork x --at-turn 9",
     "error: session 'trip' has 3 turns; it can be forked at turns 0–3, not at turn 9"),
    ("/fork x --at-turn two", "error: /fork: --at-turn must be a whole number, got 'two'; "
                              "usage: /fork SESSION [--at-turn N], e.g. /fork trip-b --at-turn 3"),
    ("/fork", "error: /fork: missing argument; "
              "usage: /fork SESSION [--at-turn N], e.g. /fork trip-b --at-turn 3"),
    ("/fork x y", "error: /fork: unexpected argument 'y'; "
                  "usage: /fork SESSION [--at-turn N], e.g. /fork trip-b --at-turn 3"),
    ("/fork 'x y'", "error: invalid session name 'x y': use letters, digits, '-', '_', '.' or "
                    "'+', starting with a letter or digit, no spaces or '/', up to 64 characters"
                    " (e.g. trip-b)"),
])
def test_fork_errors(db: Path, line: str, error: str) -> None:
    result = chat(db, "trip", [line])
    assert result.exit_code == 2
    assert status_lines(result.stderr) == [error]
    with Store(db) as store:
        assert [s.name for s in store.sessions.list_sessions()] == ["trip"]


def test_undo_explains_and_forks_before_the_last_turn(db: Path) -> None:
    result = chat(db, "trip", ["/undo", "/undo retry", "what did I order, again?"])
    assert result.exit_code == 2  # the bare /undo is refused
    assert status_lines(result.stderr) == [
        "error: messages are append-only, so /undo never deletes turn 3; /undo SESSION copies "
        "turns 1–2 into a new session and switches to it (same as /fork SESSION --at-turn 2)",
        "forked session trip → retry at turn 2 of 3: 4 messages copied",
        "turn records (what was sent) stay with trip",
        "switched to session retry · window k=2 · 2 turns",
        "turn 3 stays in session trip",
    ]
    assert [c for _, _, c in messages(db, "retry")][-2:] == [
        "what did I order, again?", "echo #1: what did I order, again?"]
    assert [c for _, r, c in messages(db, "trip") if r == "user"] == [
        "my order is ORD-7731", "我们五月去杭州", "what did I order?"]


def test_undo_after_two_turns_names_the_one_turn_it_copies(tmp_path: Path) -> None:
    """It said "copies turns 1–1" (found using the REPL after /edit-last)."""
    result = chat(tmp_path / "u.db", "旅行", ["预算五千元", "second", "/undo"])
    assert result.exit_code == 2
    assert status_lines(result.stderr) == [
        "error: messages are append-only, so /undo never deletes turn 2; /undo SESSION copies "
        "turn 1 into a new session and switches to it (same as /fork SESSION --at-turn 1)"]


def test_undo_with_nothing_to_undo(tmp_path: Path) -> None:
    result = chat(tmp_path / "n.db", "empty", ["/undo x"])
    assert result.exit_code == 2
    assert status_lines(result.stderr) == ["error: nothing to undo: session empty has no messages"]


def test_retry_resends_a_failed_turn(tmp_path: Path, chat_server) -> None:
    chat_server.plan = ["401"]
    db = tmp_path / "r.db"
    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-test"}
    result = chat(db, "r", ["我们五月去杭州", "/retry", "/retry"], "--model", "m", env=env)
    lines = status_lines(result.stderr)
    assert lines[0].startswith("error: ") and "(401)" in lines[0]
    assert lines[1].startswith("retrying turn 1 (failed: ") and "(401)" in lines[1]
    # On a completed turn /retry regenerates it in place.
    # The conversation's turn 1, which the failed attempt was attempted as too.
    assert lines[2:] == ["regenerating turn 1; it stays stored, out of memory"]
    assert result.stdout.count("Hello from the test server.") == 2
    assert [r["messages"][-1]["content"] for r in chat_server.requests] == ["我们五月去杭州"] * 3
    # The regeneration's request holds no earlier answer: the replaced turn left memory.
    assert [m["role"] for m in chat_server.requests[-1]["messages"]] == ["system", "user"]
    with Store(db) as store:
        session = store.sessions.session("r")
        assert [(t.status, t.superseded_by) for t in store.turns.turns(session.id)] == [
            ("failed", None), ("ok", 3), ("ok", None)]
    # History turn 1: the replacement takes the number of the turn it replaced.
    assert messages(db, "r") == [(1, "user", "我们五月去杭州"),
                                 (1, "assistant", "Hello from the test server.")]


def test_retry_after_a_failed_regenerate_replaces_the_turn_not_adds_one(
        tmp_path: Path, chat_server) -> None:
    """The second /retry retried the failed attempt as a turn of its own: the exchange
    was in history twice."""
    chat_server.plan = ["ok", "401"]
    db = tmp_path / "r.db"
    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-test"}
    result = chat(db, "r", ["我们五月去杭州", "/retry", "/retry"], "--model", "m", env=env)
    lines = status_lines(result.stderr)
    assert lines[0] == "regenerating turn 1; it stays stored, out of memory"
    assert lines[1].startswith("error: ") and "(401)" in lines[1]
    assert lines[2].startswith("retrying turn 2 (failed: ")
    with Store(db) as store:
        session = store.sessions.session("r")
        assert [(t.status, t.superseded_by) for t in store.turns.turns(session.id)] == [
            ("ok", 3), ("failed", None), ("ok", None)]
    shown = invoke("sessions", "show", "r", "--db", str(db), code=0).stdout
    assert shown.count("user: 我们五月去杭州") == 1
    # Its request held no earlier answer: the turn it replaces had left memory.
    assert [m["role"] for m in chat_server.requests[-1]["messages"]] == ["system", "user"]


def test_retry_after_a_failed_edit_sends_the_edit_in_place_of_the_turn(
        tmp_path: Path, chat_server) -> None:
    chat_server.plan = ["ok", "401"]
    db = tmp_path / "r.db"
    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-test"}
    chat(db, "r", ["我们五月去杭州", "/edit-last 我们六月去苏州", "/retry"], "--model", "m",
         env=env)
    assert [r["messages"][-1]["content"] for r in chat_server.requests] == [
        "我们五月去杭州", "我们六月去苏州", "我们六月去苏州"]
    assert [c for _, r, c in messages(db, "r") if r == "user"] == ["我们六月去苏州"]


def test_retry_regenerates_a_completed_turn_and_inspect_names_its_replacement(db: Path) -> None:
    result = chat(db, "trip", ["/retry", "/inspect 3"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "echo #1: what did I order?\n"
    assert status_lines(result.stderr)[0] == (
        "regenerating turn 3; it stays stored, out of memory")
    # One numbering: turn 3 is the conversation's, now the replacement (request 4).
    new = result.stderr.split("╯\n")[0]
    assert header_rows(new) == [("turn", "3"), ("status", "ok")] and superseded_row(new) is None
    assert messages(db, "trip")[-2:] == [(3, "user", "what did I order?"),
                                          (3, "assistant", "echo #1: what did I order?")]
    assert len(messages(db, "trip")) == 6  # history: the replaced turn's two left it
    inspected = invoke("inspect", "trip", "--turn", "3", "--db", str(db), "--json")
    assert inspected.exit_code == 0, inspected.stderr
    turn = json.loads(inspected.stdout)["turn"]
    # Turn 3 is the conversation's: the replacement (request 4), not the replaced attempt.
    assert (turn["reply"], turn["superseded_by"], turn["request"]) == (
        "echo #1: what did I order?", None, 4)


def test_edit_last_with_text_sends_it_in_place_of_the_last_turn(db: Path) -> None:
    result = chat(db, "trip", ["/edit-last 我们六月去苏州", "/edit-last",
                               "/edit-last 我们七月去苏州"])
    assert result.exit_code == 2  # the bare /edit-last needs a terminal's prompt
    assert result.stdout == "echo #1: 我们六月去苏州\necho #2: 我们七月去苏州\n"
    assert "error: editing needs the interactive prompt; in a script, give the new text: " \
        "/edit-last TEXT" in status_lines(result.stderr)
    assert [c for _, r, c in messages(db, "trip") if r == "user"] == [
        "my order is ORD-7731", "我们五月去杭州", "我们七月去苏州"]
    with Store(db) as store:
        turns = store.turns.turns(store.sessions.session("trip").id)
        assert [(t.input, t.superseded_by) for t in turns[2:]] == [
            ("what did I order?", 4), ("我们六月去苏州", 5), ("我们七月去苏州", None)]


def test_retry_with_no_turns(tmp_path: Path) -> None:
    result = chat(tmp_path / "n.db", "empty", ["/retry"])
    assert result.exit_code == 2
    assert status_lines(result.stderr) == ["error: nothing to retry: session empty has no turns"]


def test_retry_and_edit_last_in_a_copied_or_imported_session_say_why_not(
    db: Path, tmp_path: Path
) -> None:
    """After /undo (or an import) the toolbar counts the turns, yet /retry and /edit-last
    said 'session … has no turns': the copied turns have no turn sent from this session."""
    expected = ("nothing to {doing} here: session {name}'s {n} came in by a copy (/fork, /undo)"
                " or an import, and only a turn sent in this session is replaced; press Up to"
                " recall your last input and send it as a new turn instead")
    result = chat(db, "trip", ["/undo 撤销", "/retry", "/edit-last 我们六月去苏州"])
    assert result.exit_code == 2
    assert [line.removeprefix("error: ") for line in status_lines(result.stderr)
            if line.startswith("error: ")] == [
        expected.format(doing="retry", name="撤销", n="2 turns"),
        expected.format(doing="edit", name="撤销", n="2 turns")]
    assert len(messages(db, "撤销")) == 4  # nothing sent, nothing replaced
    transcript = tmp_path / "one.jsonl"
    transcript.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n"
                          + json.dumps({"role": "assistant", "content": "hello"}) + "\n",
                          encoding="utf-8")
    invoke("sessions", "import", str(transcript), "imported", "--db", str(db), code=0)
    result = chat(db, "imported", ["/retry"])
    assert result.exit_code == 2
    assert status_lines(result.stderr) == [
        "error: " + expected.format(doing="retry", name="imported", n="1 turn")]


def test_system_shows_and_sets_the_prompt_for_the_next_turns(db: Path) -> None:
    new = 'Reply in French; say "bonjour" first.'
    result = chat(db, "trip", ["/system", f"/system {new}", "/system", "hi"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "echo #1: hi\n"
    tokens = ScriptedProvider().token_counter().count_message("system", new)
    assert [line.strip() for line in status_lines(result.stderr)] == [
        "system prompt  Answer briefly.",
        f"system prompt set for the next turns ({tokens} tokens); the history is untouched: "
        "earlier turns stay as they were sent",
        f"system prompt  {new}"]
    with Store(db) as store:
        trip = store.sessions.session("trip")
        assert trip.system == new
        turns = store.turns.turns(trip.id)
        first = turns[0].context["parts"][0]["messages"][0]["content"]
        last = turns[-1].context["parts"][0]["messages"][0]["content"]
        assert (first, last) == ("Answer briefly.", new)
    assert len(messages(db, "trip")) == 8


def test_export_writes_the_format_its_extension_names_and_never_overwrites(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    chat(db, "trip", ["/fork 旅行-二"])
    result = chat(db, "旅行-二", ["/export", "/export", "/export mine.md", "/export mine.json",
                                 "/export mine.txt", "/export mine.md --force", "/export a b"])
    assert result.exit_code == 2
    assert status_lines(result.stderr) == [
        "exported 6 messages of session 旅行-二 to 旅行-二.jsonl (jsonl)",
        "error: 旅行-二.jsonl already exists; add --force to overwrite it",
        "exported 6 messages of session 旅行-二 to mine.md (markdown)",
        "exported 6 messages of session 旅行-二 to mine.json (json)",
        "error: mine.txt: the extension does not name a format; use .jsonl (imports back), "
        ".json or .md",
        "exported 6 messages of session 旅行-二 to mine.md (markdown)",
        "error: /export: unexpected argument 'b'; usage: /export [FILE] [--force], "
        "e.g. /export trip.md",
    ]
    assert result.stdout == ""
    transcript = read_transcript(tmp_path / "旅行-二.jsonl")
    assert [(m.role, m.content) for m in transcript.messages] == [
        (r, c) for _, r, c in messages(db, "trip")]
    assert (transcript.system, transcript.strategy) == ("Answer briefly.", "window")
    markdown = (tmp_path / "mine.md").read_text(encoding="utf-8")
    assert markdown.startswith("# 旅行-二\n") and "杭州" in markdown
    # .json is one document that imports back with the same messages and settings.
    document = json.loads((tmp_path / "mine.json").read_text(encoding="utf-8"))
    assert document["title"] == "旅行-二" and document["strategy"] == "window"
    again = read_transcript(tmp_path / "mine.json")
    assert [(m.role, m.content) for m in again.messages] == [
        (m.role, m.content) for m in transcript.messages]
    assert (again.system, again.strategy, again.params) == ("Answer briefly.", "window",
                                                            {"k": 2})
    assert not (tmp_path / "mine.txt").exists()


def test_export_to_an_unwritable_place(db: Path, tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "t.jsonl"
    result = chat(db, "trip", [f"/export {target}"])
    assert result.exit_code == 2
    assert status_lines(result.stderr) == [
        f"error: {target}: cannot write: No such file or directory"]


def test_budget_shows_and_sets_the_shared_budget(db: Path) -> None:
    result = chat(db, "trip", ["/budget", "/budget 20", "hello again", "/budget 0",
                               "/strategy tokens", "/budget"])
    assert result.exit_code == 2
    budget_lines = [line for line in result.stderr.splitlines()
                    if line.startswith("context budget")]
    assert budget_lines == [
        "context budget: 4,000 tokens; strategies without a budget of their own are measured "
        "against it",
        "context budget: 20 tokens; strategies without a budget of their own are measured "
        "against it (this chat only; the config key context_budget sets the default)",
        "context budget: 20 tokens; strategies without a budget of their own are measured "
        "against it; tokens fits its context to its own budget of 2,000 tokens",
    ]
    assert ("error: /budget: N must be a whole number of tokens, at least 1; got '0'; "
            "usage: /budget [N], e.g. /budget 8000") in result.stderr
    with Store(db) as store:
        last = store.turns.turn(store.sessions.session("trip").id)
        assert last.context["budget"] == 20
        assert [(w["kind"], w["budget"]) for w in last.context["warnings"]] == [
            ("over_budget", 20)]


def test_a_budget_below_the_system_prompt_is_refused_at_once(db: Path) -> None:
    """`/budget 10` under a 21-token system prompt was accepted, and only the next message,
    once typed, was refused: now /budget refuses it, naming the prompt's tokens, and the
    budget stays as it was, so the message after it is sent."""
    system = "You are a careful assistant who answers in detail with many examples."
    result = chat(db, "trip", [f"/system {system}", "/budget 10", "hello again", "/budget"])
    assert result.exit_code == 2
    tokens = ScriptedProvider().token_counter().count_message("system", system)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert "/budget" in errors[0] and "10" in errors[0] and f"{tokens} tokens" in errors[0]
    assert result.stderr.splitlines()[-1].startswith("context budget: 4,000 tokens")
    with Store(db) as store:
        last = store.turns.turn(store.sessions.session("trip").id)
        assert last.input == "hello again" and last.status == "ok"
        assert last.context["budget"] == 4000


def test_budget_carries_over_a_switch(db: Path) -> None:
    result = chat(db, "other", ["/budget 50", "/switch trip", "/budget"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[-1].startswith("context budget: 50 tokens")


def test_help_lists_the_session_commands() -> None:
    for name in ("/new", "/sessions", "/switch", "/fork", "/undo", "/retry", "/system",
                 "/export", "/budget"):
        assert name in SLASH
    assert "append-only" in SLASH["/undo"].help


def test_model_switches_the_model_for_the_next_turns(db: Path, chat_server) -> None:
    result = chat(db, "trip", ["first question", "/model", "/model m2", "/model",
                               "second question"],
                  "--provider", "openai", "--model", "m1",
                  env={"OPENAI_BASE_URL": chat_server.base_url})
    assert result.exit_code == 0, result.stderr
    # The server saw each turn with the model chosen at that point.
    assert [r["model"] for r in chat_server.requests] == ["m1", "m2"]
    assert "model  openai:m1" in result.stderr and "model  openai:m2" in result.stderr
    assert result.stdout == "Hello from the test server.\n" * 2
    assert ("model: openai:m1 → openai:m2 for the next turns; the history is untouched"
            in status_lines(result.stderr))
    with Store(db) as store:
        session = store.sessions.session("trip")
        assert [t.model for t in store.turns.turns(session.id)][-2:] == ["m1", "m2"]
        assert session.model == "m2"
    # The second turn still carried the whole history: switching a model keeps memory.
    assert chat_server.requests[1]["messages"][-3]["content"] == "first question"


@pytest.mark.local
def test_model_with_a_missing_local_file_is_one_line_and_the_chat_goes_on(db: Path) -> None:

    if (missing := local_model_missing()) is not None:
        pytest.skip(missing)
    config = db.parent / "small.toml"  # a short reply on one thread: the turn is what counts
    config.write_text("max_reply_tokens = 8\n[local]\nthreads = 1\n", encoding="utf-8")
    result = chat(db, "trip", ["/model /nowhere/x.gguf", "hi"], "--provider", "local",
                  env={"CHATMEM_CONFIG": str(config)})
    assert result.exit_code == 1  # a piped chat reports its worst error at the end
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [
        "error: model '/nowhere/x.gguf' (/model): the local provider runs a GGUF file, and "
        "there is none at that path"]
    with Store(db) as store:  # and the next turn ran on the model it had
        turn = store.turns.turn(store.sessions.session("trip").id)
        assert (turn.input, turn.status) == ("hi", "ok")
        assert turn.model == "SmolLM2-135M-Instruct.Q4_1"


def test_a_strategy_switch_keeps_the_parameters_the_new_strategy_shares(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    result = chat(db, "s", ["/strategy summary-buffer max_tokens=200",
                            "/strategy summary-buffer+entity",
                            "/strategy summary-buffer:max_tokens=300",
                            "/strategy window", "/strategy summary-buffer"])
    assert result.exit_code == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("strategy:")] == [
        "strategy: summary-buffer max_tokens=200 summary_max_tokens=256 prune_to=0.5",
        "strategy: summary-buffer+entity summary-buffer.max_tokens=200 "
        "summary-buffer.summary_max_tokens=256 summary-buffer.prune_to=0.5 entity.k=3 "
        "entity.max_facts=20 (kept from the previous strategy: summary-buffer.max_tokens=200)",
        "strategy: summary-buffer max_tokens=300 summary_max_tokens=256 prune_to=0.5",
        "strategy: window k=5",
        "strategy: summary-buffer max_tokens=2000 summary_max_tokens=256 prune_to=0.5",
    ]
    with Store(db) as store:
        assert store.sessions.session("s").params == {"max_tokens": 2000, "summary_max_tokens": 256,
                                                      "prune_to": 0.5}


def test_kept_parameters_follow_the_part_they_belong_to() -> None:
    from registered import create_strategy, parse_spec

    from chatmem.errors import StrategyError
    from chatmem.memory.spec import StrategySpec

    earlier = StrategySpec.of(create_strategy("window+entity", {"window.k": 2}),
                              changed_only=True)
    assert parse_spec("window").keeping(earlier).params == {"k": 2}
    assert parse_spec("window", {"k": "7"}).keeping(earlier).params == {"k": "7"}
    assert parse_spec("window+retrieval").keeping(earlier).params == {"window.k": 2}
    assert parse_spec("buffer").keeping(earlier).params == {}
    with pytest.raises(StrategyError, match="unknown strategy 'nosuch' in 'nosuch\\+window'"):
        parse_spec("nosuch+window")


def superseded_row(stderr: str) -> str | None:
    """The `superseded by` row /inspect prints for a replaced turn."""
    return next((line.partition("superseded by")[2].strip() for line in stderr.splitlines()
                 if line.startswith("superseded by")), None)


def header_rows(stderr: str) -> list[tuple[str, str]]:
    """The turn/status/error rows /inspect prints above its panel."""
    return [(key, value.strip()) for line in stderr.splitlines()
            for key, _, value in [line.partition(" ")] if key in ("turn", "status", "error")]


def test_slash_inspect_shows_the_turn_status_and_error(tmp_path: Path, chat_server) -> None:
    chat_server.plan = ["401"]
    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-test"}
    result = chat(tmp_path / "i.db", "i", ["我们五月去杭州", "/inspect", "/retry", "/inspect 1"],
                  "--model", "m", env=env)
    first, second = result.stderr.split("╯\n")[:2]
    header = header_rows(first)
    assert header[:2] == [("turn", "1"), ("status", "failed")]
    assert header[2][0] == "error" and "401" in header[2][1] and len(header) == 3
    assert "我们五月去杭州" in first[first.index("╭"):]
    assert header_rows(second) == [("turn", "1"), ("status", "ok")]  # the retry's


def test_retry_and_edit_last_of_a_turn_memory_holds_are_refused_before_anything_starts(
        tmp_path: Path) -> None:
    """/retry said it was regenerating, then refused: a summary already covered the turn."""
    db = tmp_path / "s.db"
    result = chat(db, "s1", ["My cat is Mochi.", "我的狗叫饼干。", "/retry",
                             "/edit-last 我的狗叫豆豆。"], "--strategy", "summary")
    assert result.exit_code == 2
    assert [line for line in status_lines(result.stderr) if not line.startswith("summary")] == [
        "error: turn 2 is already in memory (a summary covers it); /fork SESSION --at-turn 1 "
        "asks again on a branch"] * 2
    assert [c for _, r, c in messages(db, "s1") if r == "user"] == ["My cat is Mochi.",
                                                                   "我的狗叫饼干。"]
    assert "/fork" in SLASH["/retry"].help and "memory holds it" in SLASH["/edit-last"].help


def test_retry_after_remember_or_forget_under_a_strategy_without_facts(tmp_path: Path) -> None:
    """/retry was refused after any /remember or /forget: "turn 1 is already in memory (1
    fact from it or since)", though window sends no fact and none came from the turn."""
    db = tmp_path / "r.db"
    result = chat(db, "r", ["my flight is at 9", "/remember note: 买牛奶", "/retry",
                            "/forget note", "/edit-last my flight is at 10"], "-s", "window")
    assert result.exit_code == 0, result.stderr
    assert "already in memory" not in result.stderr
    assert [c for _, r, c in messages(db, "r") if r == "user"] == ["my flight is at 10"]


def test_undo_and_edit_last_keep_a_plugin_state_true_to_the_history(
        tmp_path: Path, installed) -> None:
    """A plugin's state (the ledger keeps numbers under its own key, naming no turn) is not
    carried past /undo, and /edit-last of a turn it covers is refused as a summary's is."""
    from plugin_site import LEDGER

    installed("chatmem-ledger", "chatmem_ledger", LEDGER, name="ledger")
    db = tmp_path / "l.db"
    result = chat(db, "U1", ["first 111", "typo, I meant 9999", "/undo U2", "what now?",
                             "price 5555", "/edit-last price 6666"], "--strategy", "ledger")
    assert result.exit_code == 2
    # Named as logs number it (U2 holds turn 1 copied by /undo: "price 5555" is its turn 3,
    # its second request), the fork's turn the one before it.
    assert status_lines(result.stderr)[-1] == (
        "error: turn 3 is already in memory (ledger's stored state covers it); "
        "/fork SESSION --at-turn 2 asks again on a branch")
    with Store(db) as store:
        session = store.sessions.session("U2")
        sent = [json.dumps(t.context, ensure_ascii=False) for t in store.turns.turns(session.id)]
        ledger = store.memory.strategy_state(session.id, "ledger")["items"]
    assert "1:111" in sent[0] and "9999" not in "".join(sent)
    assert ledger == ["1:111", "3:5555"]
    assert [c for _, r, c in messages(db, "U2") if r == "user"] == [
        "first 111", "what now?", "price 5555"]


def test_sessions_summary_and_a_markdown_export_show_times_in_the_timezone_setting_s_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """/sessions, /summary and /export x.md wrote times in the process's zone ($TZ) (the .md
    in UTC, as stored), whatever the timezone setting said; the .md says its offset."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    monkeypatch.chdir(tmp_path)
    db = tmp_path / "z.db"
    env = {"CHATMEM_TIMEZONE": "Asia/Kathmandu", "TZ": "UTC"}  # +05:45, never $TZ's
    done = chat(db, "行程", ["预算五千元，三月十五日出发。", "/sessions", "/summary",
                           "/export 行程.md"], "--strategy", "summary", env=env, width=160)
    assert done.exit_code == 0, done.stderr

    def local(stamp: str, form: str = "%Y-%m-%d %H:%M") -> str:
        return datetime.fromisoformat(stamp).astimezone(ZoneInfo("Asia/Kathmandu")).strftime(form)

    with Store(db) as store:
        session = store.sessions.session("行程")
        said = [m.created_at for m in store.history.messages(session.id)]
        summarized = store.memory.summaries(session.id)[-1].created_at
    listed = next(line for line in done.stderr.splitlines() if line.startswith("*  行程"))
    assert listed.split()[-2:] == local(session.updated_at).split(), done.stderr
    assert f"· {local(summarized)} " in done.stderr, done.stderr
    headings = [line for line in (tmp_path / "行程.md").read_text(encoding="utf-8").splitlines()
                if line.startswith("### ")]
    assert headings == [f"### {role} · {local(at)} +05:45"
                        for role, at in zip(("user", "assistant"), said, strict=True)]
