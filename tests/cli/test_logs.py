"""`chatmem logs`: recent turns across sessions, searched with the full-text index (issue 21,
Build 3), in English and Chinese; reading never writes the history file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_runner import chat, invoke, run
from file_hash import checkpointed_hash
from rich.console import Console

from chatmem.config.options import Cost
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render.logs import logs_table
from chatmem.store import Store


def ask(db: Path, session: str, text: str) -> None:
    result = run(db, "ask", session, text, "--provider", "scripted", "--plain")
    assert result.exit_code == 0, result.stderr



@pytest.fixture
def db(tmp_path: Path) -> Path:
    db = tmp_path / "h.db"
    ask(db, "trip", "我们五月去杭州旅行，想看西湖")
    ask(db, "work", "deploy the kubernetes cluster on friday")
    ask(db, "trip", "what should I pack for the rain?")
    ask(db, "work", "the database migration failed twice")
    return db


def logs_json(db: Path, *args: str, config: Path | None = None) -> list[dict[str, Any]]:
    result = run(db, "logs", "--json", *args, *(["--config", str(config)] if config else []))
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_logs_lists_turns_across_sessions_newest_first(db: Path) -> None:
    entries = logs_json(db)
    assert [(e["session"], e["turn"]) for e in entries] == [
        ("work", 2), ("trip", 2), ("work", 1), ("trip", 1)]
    newest = entries[0]
    assert newest["input"] == "the database migration failed twice"
    assert newest["model"] == "scripted" and newest["provider"] == "scripted"
    assert newest["strategy"]["name"] == "window" and newest["status"] == "ok"
    assert isinstance(newest["tokens"]["prompt"], int) and newest["tokens"]["prompt"] > 0
    # The scripted model's reply, counted as the prompt is (cl100k_base), not by its words.
    assert newest["tokens"]["reply"] == ScriptedProvider().token_counter().count_text(
        "echo #1: the database migration failed twice") == 9
    assert newest["cost"] is None


def test_n_and_session_narrow_the_list(db: Path) -> None:
    assert [e["turn"] for e in logs_json(db, "-n", "1")] == [2]
    assert [e["input"] for e in logs_json(db, "--session", "trip")] == [
        "what should I pack for the rain?", "我们五月去杭州旅行，想看西湖"]


def test_q_searches_english_with_the_index(db: Path) -> None:
    found = logs_json(db, "-q", "Kubernetes")
    assert [(e["session"], e["turn"]) for e in found] == [("work", 1)]


def test_q_searches_chinese_with_the_index(db: Path) -> None:
    found = logs_json(db, "-q", "杭州")
    assert [(e["session"], e["input"]) for e in found] == [("trip", "我们五月去杭州旅行，想看西湖")]
    assert logs_json(db, "-q", "西湖", "--session", "work") == []


def test_q_ranks_the_better_match_first_and_a_turn_once(db: Path) -> None:
    ask(db, "work", "kubernetes kubernetes kubernetes upgrade")
    found = logs_json(db, "-q", "kubernetes")
    # The question and its echoed reply both match: each turn is listed once.
    assert [e["turn"] for e in found] == [3, 1]


def test_q_finds_a_code_however_its_parts_were_joined(db: Path) -> None:
    """ORD\u00ad7731\u00adQX (soft hyphens, as a web page's text may carry them) is one word
    to the index, which `-q ORD-7731-QX` did not find; and `-q ORD7731QX` found no
    ORD‑7731‑QX (three words to the index)."""
    ask(db, "soft", "my order is ORD\u00ad7731\u00adQX")
    ask(db, "订单", "订单号ORD\u20117731\u2011QX。")
    assert {e["session"] for e in logs_json(db, "-q", "ORD-7731-QX")} == {"soft", "订单"}
    assert {e["session"] for e in logs_json(db, "-q", "ＯＲＤ－７７３１－ＱＸ")} == {"soft", "订单"}
    # Typed as one word, it finds the one saying it so; its parts only where none does.
    assert {e["session"] for e in logs_json(db, "-q", "ORD7731QX")} == {"soft"}
    ask(db, "hyphens", "order ORD-5510-ZZ shipped")
    # (Its parts are searched as any words are: a turn holding one of them, ORD, comes after.)
    assert logs_json(db, "-q", "ord5510zz")[0]["session"] == "hyphens"
    assert logs_json(db, "-q", "gpt4") == []  # its parts (gpt, 4) are said nowhere either


def test_q_finds_a_chinese_date_however_it_was_written(db: Path) -> None:
    """A purge erases 三月十五日 as 3月15日 and 3月15号 too; `logs -q 三月十五日` found
    nothing of a message saying 3月15日 (other bigrams to the index), nor the other way."""
    ask(db, "机票", "我们3月15日出发去杭州")
    ask(db, "会议", "会议定在二〇二六年十二月三日")
    assert [e["session"] for e in logs_json(db, "-q", "三月十五日")][:1] == ["机票"]
    assert [e["session"] for e in logs_json(db, "-q", "3月15号")][:1] == ["机票"]
    assert [e["session"] for e in logs_json(db, "-q", "2026年12月3日")][:1] == ["会议"]


def test_a_search_that_matches_nothing_lists_nothing(db: Path) -> None:
    result = run(db, "logs", "-q", "zeppelin")
    assert result.exit_code == 0
    assert (result.stdout, result.stderr.strip()) == ("", "no turns found")
    assert logs_json(db, "-q", "zeppelin") == logs_json(db, "-r", "-q", "zeppelin") == []


def test_the_cost_of_a_priced_model_is_listed(db: Path, tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[prices."scripted"]\ninput = 2.0\noutput = 4.0\n', encoding="utf-8")
    entry = logs_json(db, "-n", "1", config=config)[0]
    prompt, reply = entry["tokens"]["prompt"], entry["tokens"]["reply"]
    assert entry["cost"] == {"amount": pytest.approx((prompt * 2 + reply * 4) / 1e6),
                             "currency": "$"}
    table = run(db, "logs", "-n", "1", "--config", str(config))
    assert table.exit_code == 0 and "cost" in table.stdout and "$0.0" in table.stdout


def test_the_table_names_time_session_model_strategy_and_question(db: Path) -> None:
    result = run(db, "logs")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["time", "session", "model", "strategy", "tokens", "question"]
    assert "trip #1" in result.stdout and "我们五月去杭州旅行" in result.stdout


def test_the_table_fits_80_columns_and_cuts_long_questions(db: Path) -> None:
    ask(db, "a-rather-long-session-name", "word " * 100)
    with Store(db) as store:
        entries = store.logs.recent_turns(limit=20)
    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(logs_table(entries, [Cost(0.0001)] * len(entries)))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "word word" in text and "…" in text


@pytest.mark.parametrize(("args", "named", "code"), [
    (["--session", "nowhere"], "no session named 'nowhere'", 1),
    (["-q", "  "], "-q needs words", 2),
    (["-n", "0"], "must be 1 or more", 2),
])
def test_bad_input_is_one_line_and_non_zero(db: Path, args: list[str], named: str,
                                             code: int) -> None:
    result = run(db, "logs", *args)
    assert result.exit_code == code
    assert named in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_mistyped_session_is_worded_as_every_command_words_it(db: Path) -> None:
    """logs alone said "no session 'tirp' in FILE", with neither the near name nor where
    the names are listed, as inspect, sessions show and facts list say them."""
    said = run(db, "logs", "--session", "tirp").stderr
    assert said == run(db, "sessions", "show", "tirp").stderr
    assert "'trip'" in said and "sessions list" in said


def test_logs_never_write_the_history_file(db: Path) -> None:
    before = checkpointed_hash(db)
    for args in ([], ["-q", "杭州"], ["--session", "work", "--json"], ["-q", "rain", "-n", "1"]):
        assert run(db, "logs", *args).exit_code == 0
    assert checkpointed_hash(db) == before


def test_logs_without_a_history_file_creates_none(isolated_home: Path) -> None:
    result = invoke("logs")
    assert result.exit_code == 0, result.stderr
    assert (result.stdout, result.stderr.strip()) == ("", "no turns found")
    assert invoke("logs", "-r", "--json", code=0).stdout.strip() == "[]"
    assert not list(isolated_home.rglob("chatmem.db"))


def _many_turns(store: Store, count: int) -> None:
    """`count` turns in two sessions, written straight into the table (only their rows
    matter to the listing)."""
    ids = [store.sessions.create_session(name, strategy="window").id for name in ("a", "b")]
    store.db.conn.executemany(
        "INSERT INTO turns (session_id, number, history_turn, status, input, context,"
        " strategy, created_at) VALUES (?, ?, ?, 'ok', ?, '{}', 'window', ?)",
        [(ids[n % 2], n // 2 + 1, n // 2 + 1, f"question {n}", f"2026-01-01T00:00:{n:06d}")
         for n in range(count)])


@pytest.mark.parametrize("session", [None, "b"])
def test_listing_the_newest_turns_reads_the_same_at_100_and_4000(tmp_path: Path,
                                                                session: str | None) -> None:
    from meter import metered

    work = []
    for count in (100, 4000):
        with Store(tmp_path / f"{count}.db") as store:
            _many_turns(store, count)
            found = store.sessions.find_session(session) if session else None
            with metered(store) as meter:
                entries = store.logs.recent_turns(limit=10, session_id=found.id if found else None)
            assert [e.input for e in entries][:1] == [f"question {count - 1}"]
            work.append((meter.statements, meter.rows, meter.steps))
    (statements, rows, steps), (statements_l, rows_l, steps_l) = work
    assert (statements_l, rows_l) == (statements, rows) == (1, 10)
    assert steps_l <= steps + 2  # the B-tree may be a level deeper


def test_logs_marks_a_turn_that_retry_replaced(db: Path) -> None:
    result = chat(db, "trip", "/retry\n")
    assert result.exit_code == 0, result.stderr
    trip = [(e["turn"], e["request"], e["superseded_by"])
            for e in logs_json(db, "--session", "trip")]
    # The attempt and its replacement are the conversation's turn 2, requests 2 and 3.
    assert trip == [(2, 3, None), (2, 2, 3), (1, 1, None)]
    assert all(e["superseded_by"] is None for e in logs_json(db, "--session", "work"))
    table = run(db, "logs", "--session", "trip")
    assert table.exit_code == 0
    rows = [line for line in table.stdout.splitlines() if "trip #" in line]
    assert "replaced" in rows[1] and "replaced" not in rows[0] + rows[2]
    assert ["trip #2" in rows[0], "trip #2" in rows[1], "trip #1" in rows[2]] == [True] * 3


# -- replies (issue 30, finding 6: llm's `logs -r`, and whole turns) -------------------------


def test_acceptance_logs_r_prints_the_last_reply_as_sent(db: Path) -> None:
    result = run(db, "logs", "-r")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "echo #1: the database migration failed twice\n"
    assert run(db, "logs", "--response", "--session", "trip").stdout == (
        "echo #1: what should I pack for the rain?\n")
    assert run(db, "logs", "-r", "-q", "杭州").stdout == "echo #1: 我们五月去杭州旅行，想看西湖\n"


def test_logs_r_skips_a_turn_without_a_reply(db: Path) -> None:
    with Store(db) as store:
        work = store.sessions.find_session("work")
        assert work is not None
        store.db.conn.execute(
            "INSERT INTO turns (session_id, number, status, input, context, strategy, error,"
            " created_at) VALUES (?, 3, 'failed', 'lost', '{}', 'window', 'timeout', ?)",
            [work.id, "2099-01-01T00:00:00"])
        store.db.conn.commit()
    assert run(db, "logs", "-r").stdout == "echo #1: the database migration failed twice\n"
    assert logs_json(db, "-n", "1", "--full")[0]["reply"] is None  # the failed turn itself
    table = run(db, "logs", "-n", "1", "--full")
    assert "reply: (none: the turn failed)" in table.stdout


def test_logs_r_json_is_the_newest_replied_turn_with_its_reply(db: Path) -> None:
    [entry] = logs_json(db, "-r")
    assert (entry["session"], entry["turn"]) == ("work", 2)
    assert entry["reply"] == "echo #1: the database migration failed twice"
    assert "reply" not in logs_json(db)[0]  # the listing stays as it was


def test_logs_full_shows_each_question_and_reply_whole(db: Path) -> None:
    ask(db, "trip", "路线：" + "杭州 " * 40 + "终点")
    result = run(db, "logs", "--full", "--session", "trip", width=60)
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert text.index("trip #3") < text.index("trip #2") < text.index("trip #1")
    assert "question: what should I pack for the rain?" in text
    assert "reply: echo #1: what should I pack for the rain?" in text
    assert "终点" in text and "…" not in text  # not cut to a column
    entries = logs_json(db, "--full", "--session", "trip")
    assert [e["reply"] for e in entries][1:] == [
        "echo #1: what should I pack for the rain?", "echo #1: 我们五月去杭州旅行，想看西湖"]


def test_logs_full_puts_later_lines_of_a_question_and_reply_further_in(tmp_path: Path) -> None:
    """At the margin, a question's `reply: …` line or a forged turn header read as chatmem's."""
    db = tmp_path / "f.db"
    ask(db, "spoof", "Where is my refund?\nreply: Refund of $5,000 approved.\n"
                     "2026-01-01 09:00 · spoof #2 · 退款已批准")
    result = run(db, "logs", "--full", width=100)
    assert result.exit_code == 0, result.stderr
    assert [line for line in result.stdout.splitlines() if line and not line.startswith(" ")] == [
        next(iter(result.stdout.splitlines())), "question: Where is my refund?",
        "reply: echo #1: Where is my refund?"]
    assert "  reply: Refund of $5,000 approved." in result.stdout.splitlines()


def test_logs_full_in_a_pipe_adds_no_newline_inside_a_message(db: Path) -> None:
    """In a pipe a message was hard-wrapped at the width: a long URL cut over three lines."""
    url = "https://example.com/" + "a" * 100 + "/杭州/" + "b" * 30
    ask(db, "trip", f"see {url}")
    result = run(db, "logs", "--full", "-n", "1", width=60, code=0)
    lines = result.stdout.splitlines()
    assert f"question: see {url}" in lines and f"reply: echo #1: see {url}" in lines


@pytest.mark.parametrize(("args", "named", "code"), [
    (["-r", "--full"], "give one of them", 2),
    (["-r", "--session", "nowhere"], "no session named 'nowhere'", 1),
    (["-r", "-q", "zeppelin"], "no reply matching 'zeppelin'", 1),
])
def test_bad_reply_requests_are_one_line(db: Path, args: list[str], named: str,
                                         code: int) -> None:
    result = run(db, "logs", *args)
    assert result.exit_code == code, result.stderr
    assert named in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_logs_r_on_an_empty_history_says_there_is_no_reply(isolated_home: Path) -> None:
    result = invoke("logs", "-r")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no reply in ") and result.stdout == ""


def test_logs_r_on_an_imported_session_says_its_turns_are_not_in_the_logs(
        db: Path, tmp_path: Path) -> None:
    """`no reply in session 'sup' yet` of a session holding 30 imported replies: the logs
    record only the turns had here, and the message says so and where the history is."""
    transcript = tmp_path / "客服.jsonl"
    transcript.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in [
        {"role": "user", "content": "订单 KW-58213 还没到"},
        {"role": "assistant", "content": "我查一下。"}]), encoding="utf-8")
    imported = run(db, "sessions", "import", str(transcript), "客服")
    assert imported.exit_code == 0, imported.stderr
    result = run(db, "logs", "-r", "--session", "客服")
    assert result.exit_code == 1 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert "yet" not in result.stderr and "imported" in result.stderr
    assert "sessions show 客服" in result.stderr
    assert logs_json(db, "-r", "--session", "客服") == []
    ask(db, "empty", "hi")  # a session with turns had here still answers with its reply
    assert run(db, "logs", "-r", "--session", "empty").stdout == "echo #1: hi\n"


def test_logs_of_an_imported_session_say_why_it_has_no_turns(
        db: Path, tmp_path: Path) -> None:
    """`logs --session 客服` of a session of imported messages said "no turns found", as of
    an empty session: the one line says why and where its history is."""
    transcript = tmp_path / "客服.jsonl"
    transcript.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in [
        {"role": "user", "content": "订单 KW-58213 还没到"},
        {"role": "assistant", "content": "我查一下。"}]), encoding="utf-8")
    assert run(db, "sessions", "import", str(transcript), "客服").exit_code == 0
    result = run(db, "logs", "--session", "客服")
    assert result.exit_code == 0 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert "imported" in result.stderr and "sessions show 客服" in result.stderr
    assert logs_json(db, "--session", "客服") == []


def test_q_finds_turns_past_an_imported_session_saying_the_same(
        db: Path, tmp_path: Path) -> None:
    """The best matching messages were looked up, then their turns: an imported session's
    messages are no turn's, so 60 imported messages saying 杭州 took every hit and
    `logs -q 杭州` said "no turns found" beside trip's turn saying it."""
    transcript = tmp_path / "imported.jsonl"
    transcript.write_text("".join(json.dumps(
        {"role": "user" if i % 2 == 0 else "assistant",
         "content": f"杭州，杭州，杭州：西湖 {i}"}, ensure_ascii=False) + "\n"
        for i in range(60)), encoding="utf-8")
    imported = run(db, "sessions", "import", str(transcript), "旧的")
    assert imported.exit_code == 0, imported.stderr
    for count in ("1", "3"):
        found = logs_json(db, "-q", "杭州", "-n", count)
        assert [(e["session"], e["turn"]) for e in found] == [("trip", 1)]
        assert found[0]["input"] == "我们五月去杭州旅行，想看西湖"
    either = logs_json(db, "-q", "西湖 kubernetes")
    assert {(e["session"], e["turn"]) for e in either} == {("trip", 1), ("work", 1)}


def test_q_lists_each_turn_once_when_its_question_and_reply_match_far_apart(
        tmp_path: Path) -> None:
    """Matches are mapped to turns 500 message ids at a time: a turn whose short question
    ranked in the first batch and its long reply in the next was listed twice (`logs -q 北京
    -n 300` over 300 such turns: 300 lines, 250 turns, 50 twice and 50 missing)."""
    db = tmp_path / "h.db"
    count = 300
    with Store(db) as store:
        session = store.sessions.create_session("长对话", strategy="window")
        ids = store.history.import_messages(session.id, [
            message for n in range(count) for message in (
                {"role": "user", "content": "北京"},
                {"role": "assistant", "content": f"关于北京 the weather is fine today, {n}"})])
        store.db.conn.executemany(
            "INSERT INTO turns (session_id, number, history_turn, status, input, reply,"
            " context, strategy, created_at, user_message_id, assistant_message_id)"
            " VALUES (?, ?, ?, 'ok', ?, ?, '{}', 'window', ?, ?, ?)",
            [(session.id, n + 1, n + 1, "北京", f"关于北京 the weather is fine today, {n}",
              f"2026-01-01T00:00:{n:06d}", ids[2 * n], ids[2 * n + 1]) for n in range(count)])
        store.db.conn.commit()
    found = logs_json(db, "-q", "北京", "-n", str(count))
    assert sorted(e["turn"] for e in found) == list(range(1, count + 1))


def _turns_saying(store: Store, count: int) -> None:
    """`count` turns whose questions all say 北京 and Paris (stored messages, each turn
    written straight into the table, as `_many_turns`), before a session that never does."""
    session = store.sessions.create_session("长对话", strategy="window")
    ids = store.history.import_messages(session.id, [
        message for n in range(count) for message in (
            {"role": "user", "content": f"第{n}条消息 关于北京天气 and Paris weather"},
            {"role": "assistant", "content": f"reply {n}"})])
    store.db.conn.executemany(
        "INSERT INTO turns (session_id, number, history_turn, status, input, reply, context,"
        " strategy, created_at, user_message_id, assistant_message_id)"
        " VALUES (?, ?, ?, 'ok', ?, ?, '{}', 'window', ?, ?, ?)",
        [(session.id, n + 1, n + 1, f"第{n}条消息 关于北京天气 and Paris weather", f"reply {n}",
          f"2026-01-01T00:00:{n:06d}", ids[2 * n], ids[2 * n + 1]) for n in range(count)])
    store.sessions.create_session("quiet", strategy="window")


@pytest.mark.parametrize("session", [None, "长对话"])
def test_a_search_for_a_word_every_turn_says_reads_the_same_at_100_and_4000(
        tmp_path: Path, session: str | None) -> None:
    """`logs -q 北京` at 4,000 turns lists the newest turns saying it, reading no more of
    the index than at 100 (scoring the word read every entry it has)."""
    from meter import metered

    work = {}
    for count in (100, 4000):
        with Store(tmp_path / f"{count}.db") as store:
            _turns_saying(store, count)
            found = store.sessions.find_session(session) if session else None
            for query in ("北京", "Paris"):
                store.logs.recent_turns(limit=10, query=query)  # FTS5 reads its configuration
                with metered(store) as meter:
                    entries = store.logs.recent_turns(
                        limit=10, session_id=found.id if found else None, query=query)
                assert len(entries) == 10 and all(query in e.input for e in entries)
                if count == 4000:
                    assert [e.number for e in entries] == list(range(4000, 3990, -1))
                work[count, query] = meter.index_reads + meter.steps
    for query in ("北京", "Paris"):
        assert work[4000, query] <= work[100, query] * 1.25 + 20, work


def test_counted_and_reported_mean_one_thing_in_ask_logs_and_inspect(tmp_path: Path,
                                                                      chat_server) -> None:
    """`tokens.prompt` is chatmem's count in `ask` but the provider's in `logs`; `counted`
    and `reported` mean the same in both, and in inspect's turn (docs/json.md)."""
    db = tmp_path / "h.db"
    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-x"}
    asked = json.loads(run(db, "ask", "t", "我们五月去杭州旅行，想看西湖 and the lake", "--json",
                           "--provider", "openai", "--model", "test-small", env=env,
                           code=0).stdout)["tokens"]
    [entry] = logs_json(db)
    turn = json.loads(run(db, "inspect", "t", "1", "--json", code=0).stdout)["turn"]
    assert asked["reported"] != asked["counted"]  # the server counts words, chatmem tokens
    assert entry["tokens"]["prompt"] == asked["reported"]  # the older key, kept as it was
    for tokens in (entry["tokens"], turn["tokens"]):
        assert (tokens["counted"], tokens["reported"], tokens["reply"]) == (
            asked["counted"], asked["reported"], asked["reply"])
    assert (turn["estimated_tokens"], turn["prompt_tokens"]) == (asked["counted"],
                                                                 asked["reported"])
    assert entry["number"] == entry["turn"] == turn["number"] == 1
    assert entry["created_at"] == entry["time"] == turn["created_at"]


def test_strategy_defaults_are_one_dict_in_both_listings() -> None:
    listed = json.loads(invoke("strategies", "--json", code=0).stdout)
    assert next(s for s in listed if s["name"] == "window")["defaults"] == {"k": 5}
    [window, _] = json.loads(invoke("strategies", "window+entity", "--json", code=0).stdout)
    assert window["defaults"] == {"window.k": 5}


def test_tables_show_local_time_and_json_keeps_utc(db: Path) -> None:
    """A table's time has no zone shown, so it is the reader's ($TZ): 07:22 UTC reads 15:22
    in Shanghai; --json keeps the stored ISO UTC string. TZ is read anew (time.tzset), as a
    new process reads it, and put back after; the commands run in process (four processes
    cost ~2 s of CPU, more wall on a loaded machine, to read the same variable)."""
    import time
    from datetime import timedelta

    from chatmem.timestamps import parse_time

    def chatmem(*args: str) -> str:
        return run(db, *args, width=200, code=0).stdout

    try:
        with pytest.MonkeyPatch.context() as zone:
            zone.setenv("TZ", "Asia/Shanghai")
            time.tzset()
            newest = json.loads(chatmem("logs", "--json", "-n", "1"))[0]["created_at"]
            assert newest.endswith("+00:00")
            local = parse_time(newest) + timedelta(hours=8)  # Shanghai keeps no summer time
            assert local.strftime("%m-%d %H:%M") in chatmem("logs", "-n", "1")
            assert local.strftime("%Y-%m-%d %H:%M") in chatmem("sessions", "list")
            assert parse_time(newest).strftime("%m-%d %H:%M") not in chatmem("logs", "-n", "1")
    finally:
        time.tzset()  # the zone the context put back


def test_logs_times_are_in_the_timezone_setting_s_zone(db: Path) -> None:
    """The table and --full showed each turn's time in the process's zone ($TZ) whatever the
    timezone setting said; --json keeps UTC."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    env = {"CHATMEM_TIMEZONE": "Asia/Kathmandu", "TZ": "UTC"}  # +05:45, never $TZ's
    local = [datetime.fromisoformat(e["created_at"]).astimezone(ZoneInfo("Asia/Kathmandu"))
             .strftime("%Y-%m-%d %H:%M") for e in logs_json(db)]
    table = run(db, "logs", env=env, width=120, code=0).stdout.splitlines()
    assert [line.split()[:2] for line in table[2:]] == [t[5:].split() for t in local], table
    full = run(db, "logs", "--full", env=env, width=120, code=0).stdout.splitlines()
    assert [line.split(" · ")[0] for line in full if " · " in line] == local, full
