"""`chatmem eval`: recall at the probes, per strategy, with thresholds for CI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_runner import invoke, output

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
LONG = str(SESSIONS / "long-chat.jsonl")


def test_long_chat_ranks_strategies_as_checked_by_hand() -> None:
    result = invoke("eval", LONG, "-s", "buffer", "-s", "window:k=2", "-s",
                    "window", "--provider", "scripted", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["probes"] == 15
    rows = {s["strategy"]["label"]: s["eval"] for s in data["strategies"]}
    # See tests/test_replay.py for why: 15 one-fact probes; k=2 keeps 3, k=5 keeps 6.
    assert (rows["buffer"]["id_recall"], rows["buffer"]["text_recall"]) == (1.0, 1.0)
    assert (rows["window k=2"]["id_recall"], rows["window k=2"]["text_recall"]) == (0.2, 0.2)
    assert (rows["window"]["id_recall"], rows["window"]["text_recall"]) == (0.4, 0.4)
    assert rows["buffer"]["context_tokens"]["max"] > 10 * rows["window k=2"]["context_tokens"][
        "max"]
    assert all(s["strategy_model_calls"] == 0 for s in data["strategies"])
    first = rows["window k=2"]["per_probe"][0]
    assert first == {"question": "What is my sister's name?", "after_turn": 4,
                     "expect_ids": ["t3u"], "found_ids": ["t3u"], "expect_text": ["Ingrid"],
                     "found_text": ["Ingrid"], "tokens": first["tokens"], "answer": None,
                     "answer_found": None, "answer_in_question": None, "answer_error": None,
                     "replaced_ids": [], "replaced_text": []}


def test_table_view_lists_strategies_and_probes() -> None:
    result = invoke("eval", LONG, "-s", "buffer", "-s", "window:k=2",
                    "--provider", "scripted")
    assert result.exit_code == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("│")]
    buffer_row = next(line for line in lines if line.startswith("│ buffer "))
    window_row = next(line for line in lines if line.startswith("│ window k=2"))
    assert [c.strip() for c in buffer_row.split("│")[2:5]] == ["15", "1.00", "1.00"]
    assert [c.strip() for c in window_row.split("│")[2:5]] == ["15", "0.20", "0.20"]
    assert "per probe" in result.stdout and "What is my sister's name?" in result.stdout


def test_min_recall_fails_below_the_threshold() -> None:
    low = invoke("eval", LONG, "-s", "buffer", "-s", "window:k=2", "--provider",
                 "scripted", "--min-recall", "0.5", "--json")
    assert low.exit_code == 1
    assert low.stderr == "recall below 0.5: window k=2 (0.20)\n"
    assert json.loads(low.stdout)["probes"] == 15  # the report is still printed
    ok = invoke("eval", LONG, "-s", "buffer", "-s", "window:k=2", "--provider",
                "scripted", "--min-recall", "0.2")
    # buffer has no budget of its own: the context budget's warning, said once.
    assert ok.exit_code == 0 and ok.stderr == (
        "buffer: 94 contexts of 215 over the budget of 4,000 (the largest 6,845 tokens)\n")


def test_min_recall_can_gate_id_or_text_recall_alone(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [
        {"role": "user", "content": "我叫李雷。", "id": "u1"},
        {"role": "assistant", "content": "好的。"},
        {"probe": "我是谁？", "expect_ids": ["u1"], "expect_text": ["李雷", "韩梅梅"]},
    ]), encoding="utf-8")
    args = ("eval", str(transcript), "-s", "buffer", "--provider", "scripted", "--json")
    assert invoke(*args, "--min-recall", "0.8", code=1).stderr == (
        "recall below 0.8: buffer (0.50)\n")
    invoke(*args, "--min-recall", "id=0.8", code=0)
    assert invoke(*args, "--min-recall", "id=1", "--min-recall", "text=0.75",
                  code=1).stderr == "text recall below 0.75: buffer (0.50)\n"


def test_min_recall_compares_the_exact_recall_and_shows_it_below(tmp_path: Path) -> None:
    """2 of 3 texts was rounded to 0.6667 before the check, so it passed 0.66667, and a
    failure read `recall below 0.667: buffer (0.67)`, a figure above the bar."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [
        {"role": "user", "content": "我叫李雷，住在杭州。", "id": "u1"},
        {"role": "assistant", "content": "好的。", "id": "a1"},
        {"probe": "我是谁？", "expect_ids": ["u1"], "expect_text": ["李雷", "杭州", "上海"]},
    ]), encoding="utf-8")
    close = invoke("eval", str(transcript), "-s", "buffer", "--provider", "scripted",
                   "--min-recall", "0.66667", "--json")
    assert close.exit_code == 1
    assert close.stderr == "recall below 0.66667: buffer (0.666667)\n"
    assert json.loads(close.stdout)["strategies"][0]["eval"]["text_recall"] == 0.6667
    rounded_up = invoke("eval", str(transcript), "-s", "buffer", "--provider", "scripted",
                        "--min-recall", "0.667", "--json")
    assert rounded_up.exit_code == 1
    assert rounded_up.stderr == "recall below 0.667: buffer (0.6667)\n"
    invoke("eval", str(transcript), "-s", "buffer", "--provider", "scripted",
           "--min-recall", "0.6666", "--json", code=0)


def test_text_recall_matches_within_one_message(tmp_path: Path) -> None:
    """The memory was searched as one text joined by newlines, so "ABC\\nDEF" was found
    across two messages, though neither says it."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [
        {"role": "user", "content": "密码前半段是ABC", "id": "u1"},
        {"role": "assistant", "content": "DEF是后半段", "id": "a1"},
        {"probe": "密码？", "expect_ids": ["u1"],
         "expect_text": ["ABC\nDEF", "是ABC", "DEF是后半段", "ABC DEF"]},
    ]), encoding="utf-8")
    result = invoke("eval", str(transcript), "-s", "buffer", "--provider", "scripted",
                    "--json", code=0)
    probe = json.loads(result.stdout)["strategies"][0]["eval"]["per_probe"][0]
    assert probe["found_text"] == ["是ABC", "DEF是后半段"]


def test_traditional_chinese_is_recalled_for_a_probe_in_simplified(tmp_path: Path) -> None:
    """臺北 in the context did not count for an expected 台北 (text recall 0.00 with every
    string there), and bm25 found nothing for 礼金 in a message that says 禮金."""
    transcript = tmp_path / "ts.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [
        {"role": "user", "content": "表妹的婚禮在臺北，禮金包兩萬元。", "id": "t1u"},
        {"role": "assistant", "content": "記下了。", "id": "t1a"},
        {"role": "user", "content": "孩子的牙医预约在人民医院。", "id": "t2u"},
        {"role": "assistant", "content": "好的。", "id": "t2a"},
        {"probe": "礼金准备了多少？婚礼在哪个城市？", "expect_ids": ["t1u"],
         "expect_text": ["两万元", "台北", "婚礼"]},
    ]), encoding="utf-8")
    result = invoke("eval", str(transcript), "-s", "buffer", "-s",
                    "retrieval:mode=bm25,recent=0,top_k=1", "--provider", "scripted", "--json",
                    code=0)
    rows = [row["eval"] for row in json.loads(result.stdout)["strategies"]]
    assert [(row["id_recall"], row["text_recall"]) for row in rows] == [(1.0, 1.0), (1.0, 1.0)]


def test_answer_asks_the_model_and_checks_its_answer(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line) + "\n" for line in [
        {"role": "user", "content": "My order is KW-58213.", "id": "u1"},
        {"role": "assistant", "content": "Noted."},
        {"probe": "Order number?", "expect_ids": ["u1"], "expect_text": ["KW-58213"]},
        {"probe": "City?", "expect_text": ["Oslo"]},
    ]), encoding="utf-8")
    row = _answered(tmp_path, transcript, "It is KW-58213.\nI don't know.\n")
    assert [(p["answer"], p["answer_found"]) for p in row["per_probe"]] == [
        ("It is KW-58213.", ["KW-58213"]), ("I don't know.", [])]
    assert row["answer_recall"] == 0.5 and row["text_recall"] == 0.5


def test_answer_is_folded_as_text_recall_folds_the_context(tmp_path: Path) -> None:
    """The answer was only casefolded: ＯＲＤ７７３１ and Zürich in it were not ORD7731 and
    zurich, though the same words in the context counted for text recall."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [
        {"role": "user", "content": "订单号是ＯＲＤ７７３１，我住在Zürich。", "id": "u1"},
        {"role": "assistant", "content": "记下了。"},
        {"probe": "编号和城市？", "expect_ids": ["u1"],
         "expect_text": ["ORD7731", "zurich", "订单号"]},
    ]), encoding="utf-8")
    row = _answered(tmp_path, transcript, "订单号ＯＲＤ７７３１，城市ZÜRICH。\n")
    assert row["per_probe"][0]["answer_found"] == ["ORD7731", "zurich", "订单号"]
    assert row["answer_recall"] == 1.0 and row["text_recall"] == 1.0


def test_an_answer_repeating_the_question_does_not_answer_it(tmp_path: Path) -> None:
    """A reply repeating the question scored answer recall 1.00 for strings only the
    question said (text recall 0.00): they are not scored in the answer, as the question
    does not count in the context."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [
        {"role": "user", "content": "Hello there.", "id": "u1"},
        {"role": "assistant", "content": "Hi."},
        {"probe": "Was invoice INV-0004 paid in Lisbon?", "expect_text": ["INV-0004", "Lisbon"]},
        {"probe": "发票INV-0005在哪里付的？", "expect_text": ["inv-0005", "里斯本"]},
    ]), encoding="utf-8")
    row = _answered(tmp_path, transcript, "Was invoice INV-0004 paid in Lisbon?\n"
                                          "发票INV-0005在里斯本付的。\n")
    assert [(p["answer_found"], p["answer_in_question"]) for p in row["per_probe"]] == [
        ([], ["INV-0004", "Lisbon"]), (["里斯本"], ["inv-0005"])]
    assert row["answer_recall"] == 1.0 and row["text_recall"] == 0.0
    # Every expected string in the question: the answer is not scored at all.
    one = tmp_path / "one.jsonl"
    one.write_text(transcript.read_text(encoding="utf-8").rsplit("\n", 2)[0] + "\n",
                   encoding="utf-8")
    assert _answered(tmp_path, one, "Lisbon, yes.\n")["answer_recall"] is None


def _answered(tmp_path: Path, transcript: Path, replies: str) -> dict[str, Any]:
    """`eval --answer` of `transcript` with buffer, the model answering `replies` in turn:
    the strategy's eval figures."""
    script = tmp_path / "replies.txt"
    script.write_text(replies, encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text(f'provider = "scripted"\n[scripted]\nscript = "{script}"\n',
                      encoding="utf-8")
    result = invoke("eval", str(transcript), "-s", "buffer", "--answer",
                    "--config", str(config), "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["strategies"][0]["eval"]  # type: ignore[no-any-return]


def test_a_source_without_probes_is_a_usage_error(tmp_path: Path) -> None:
    plain = tmp_path / "p.jsonl"
    plain.write_text('{"role": "user", "content": "hi"}\n', encoding="utf-8")
    result = invoke("eval", str(plain), "-s", "buffer", "--provider", "scripted")
    assert result.exit_code == 2
    assert result.stderr == (f'error: {plain}: no probe lines to evaluate (add {{"probe": ..., '
                             f'"expect_text": [...]}})\n')


def test_eval_report_is_html(tmp_path: Path) -> None:
    report = tmp_path / "e.html"
    result = invoke("eval", LONG, "-s", "window:k=2", "--provider", "scripted",
                    "--report", str(report))
    assert result.exit_code == 0, result.stderr
    html = report.read_text(encoding="utf-8")
    assert "eval" in html and "0.20" in html and "<script" not in html


def test_probes_only_scores_the_same_and_measures_no_turn(tmp_path: Path) -> None:
    strategies = ("-s", "window:k=2", "-s", "summary-buffer", "--provider", "scripted")
    full = json.loads(output("eval", LONG, *strategies, "--json"))
    report = tmp_path / "quick.html"
    quick = json.loads(output("eval", LONG, *strategies, "--json", "--probes-only",
                              "--report", str(report)))
    for whole, only in zip(full["strategies"], quick["strategies"], strict=True):
        assert only["eval"] == whole["eval"]
        assert only["turns"] == whole["turns"] == 200
        assert (only["probes_only"], whole["probes_only"]) == (True, False)
        assert only["prompt_tokens"] == {"total": None, "mean": None, "max": None,
                                         "per_turn": None}
        assert whole["prompt_tokens"]["total"] > 0
    html = report.read_text(encoding="utf-8")
    # The cost table says why it has no tokens, and no chart of them is drawn.
    assert "no prompt tokens per turn measured" in html
    assert "contexts built at the probes only" in html
    assert "Prompt tokens per turn" not in html and "0.20" in html


# -- a mode that fell back (issue 21, Build 9) ---------------------------------------------

TRAVEL = str(SESSIONS / "travel-zh.jsonl")


def no_embedder(tmp_path: Path) -> str:
    config = tmp_path / "none.toml"
    config.write_text('[embeddings]\nprovider = "none"\n', encoding="utf-8")
    return str(config)


def test_eval_and_replay_mark_a_fallen_back_mode_and_say_the_notice_once(
    tmp_path: Path
) -> None:
    from chatmem.render.notices import NO_EMBEDDER

    for command in ("eval", "replay"):
        result = invoke(command, TRAVEL, "-s", "retrieval:mode=hybrid",
                        "-s", "retrieval:mode=dense", "-s", "window",
                        "--config", no_embedder(tmp_path),
                        width=120)
        assert result.exit_code == 0, result.stderr
        rows = [line for line in result.stdout.splitlines() if line.startswith("│ ")]
        labels = [row.split("│")[1].strip() for row in rows[:3]]
        assert labels == ["retrieval mode=hybrid → words only",
                          "retrieval mode=dense → words only", "window"], command
        assert "→ words only: no embedder, so its figures are mode=bm25's" in result.stdout
        # One notice for both strategies, each named once, the strategy not said twice.
        assert result.stderr.replace("\n", " ").count("no embedder") == 1, command
        assert " ".join(result.stderr.split()) == " ".join(
            f"retrieval mode=hybrid, retrieval mode=dense: {NO_EMBEDDER}".split())
        assert "retrieval: retrieval" not in result.stderr
    # --json and the report word it the same way: the label is not followed by its name again.
    result = invoke("eval", TRAVEL, "-s", "retrieval", "--json", "--config",
                    no_embedder(tmp_path))
    assert json.loads(result.stdout)["strategies"][0]["notices"] == [NO_EMBEDDER]


def test_nothing_is_marked_when_the_embedder_is_there(tmp_path: Path) -> None:
    config = tmp_path / "hash.toml"
    config.write_text('[embeddings]\nprovider = "hash"\n', encoding="utf-8")
    result = invoke("eval", TRAVEL, "-s", "retrieval:mode=dense", "--config",
                    str(config), width=120)
    assert result.exit_code == 0, result.stderr
    assert "→ words only" not in result.stdout and "no embedder" not in result.stderr


def test_ctrl_c_during_the_eval_of_one_file_says_interrupted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The interrupt reaches the command's handler mid-run: one line says so, exit 130 (it
    was a silent exit, told from nothing by nothing)."""
    import chatmem.app.evaluation as evaluation

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluation, "compare_strategies", interrupted)
    result = invoke("eval", LONG, "-s", "window", "--provider", "scripted")
    assert result.exit_code == 130
    assert result.stderr.splitlines()[-1] == "interrupted"
    assert result.stdout == ""


def test_eval_verbose_lists_what_its_hint_says_it_lists() -> None:
    """eval's notice ends "(--verbose lists each version)": eval takes --verbose."""
    counted = invoke("eval", LONG, "-s", "summary-buffer", "--provider", "scripted")
    assert counted.exit_code == 0 and "(--verbose lists each version)" in counted.stderr
    listed = invoke("eval", LONG, "-s", "summary-buffer", "--provider", "scripted",
                    "--verbose")
    assert listed.exit_code == 0, listed.stderr
    assert "(--verbose lists each version)" not in listed.stderr
    assert len(listed.stderr.splitlines()) > len(counted.stderr.splitlines())


def test_eval_of_a_file_and_of_its_import_agree_when_a_prompt_change_splits_a_turn(
        tmp_path: Path, db_path: Path) -> None:
    lines = [
        {"chatmem": 1, "title": "mid", "system": "你是导游"},
        {"role": "user", "content": "我想去西湖，预算五千元", "id": "y1",
         "ts": "2024-05-01T09:00:00+08:00"},
        {"system_prompt": "Answer in English only."},
        {"role": "assistant", "content": "好的，五千元够了", "id": "y2",
         "ts": "2024-05-01T09:00:05+08:00"},
        {"role": "user", "content": "住哪里？", "id": "y3", "ts": "2024-05-01T09:01:00+08:00"},
        {"role": "assistant", "content": "湖边酒店", "id": "y4", "ts": "2024-05-01T09:01:05+08:00"},
        {"probe": "预算多少？", "expect_ids": ["y1", "y2"], "expect_text": ["五千元"]},
    ]
    source = tmp_path / "spmid.jsonl"
    source.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                      encoding="utf-8")
    invoke("sessions", "import", str(source), "西湖", "--db", str(db_path), code=0)
    results = []
    for target in (str(source), "西湖"):
        result = invoke("eval", target, "-s", "buffer", "--db", str(db_path),
                        "--provider", "scripted", "--json", code=0)
        run = json.loads(result.stdout)["strategies"][0]
        results.append((run["chat_model_calls"], run["turns"], run["prompt_tokens"],
                        run["eval"]["context_tokens"]))
    assert results[0] == results[1]
    assert results[0][:2] == (0, 2)


def test_an_unknown_provider_in_the_header_names_the_file_and_line(tmp_path: Path) -> None:
    source = tmp_path / "hs4.jsonl"
    source.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [
        {"chatmem": 1, "title": "旅行", "provider": "nosuchprov"},
        {"role": "user", "content": "你好"},
        {"probe": "你好吗？", "expect_text": ["你好"]}]), encoding="utf-8")
    result = invoke("eval", str(source), "-s", "buffer", "--db", str(tmp_path / "h.db"))
    assert result.exit_code == 2
    assert result.stderr == (f"error: {source}:1: in the header: recorded with provider "
                             "'nosuchprov', which no installed plugin provides now; install "
                             "its plugin, or choose another with --provider NAME (valid: auto,"
                             " local, openai, scripted)\n")


def test_a_session_named_like_a_json_file_is_evaluated_and_replayed_by_name(
        tmp_path: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no file of that name here
    invoke("sessions", "import", str(SESSIONS / "travel-zh.jsonl"), "客服.json",
           "--db", str(db_path), code=0)
    for command in ("eval", "replay"):
        result = invoke(command, "客服.json", "-s", "buffer", "--db", str(db_path),
                        "--provider", "scripted", "--json", code=0)
        assert json.loads(result.stdout)["strategies"][0]["turns"] > 0
    # Neither a file nor a session: the file is what was meant.
    result = invoke("eval", "无此.jsonl", "-s", "buffer", "--db", str(db_path))
    assert result.exit_code == 2 and result.stderr == "error: 无此.jsonl: no such transcript file\n"


def test_eval_says_the_time_zone_its_days_were_read_in(tmp_path: Path) -> None:
    """"On 5 March" is another day in another zone: recall 0.00 in UTC, 1.00 in Shanghai,
    and neither the table, the JSON nor the report said which zone was used."""
    transcript = tmp_path / "tz.jsonl"
    lines: list[dict[str, Any]] = []
    for day, food in enumerate(("noodles", "dumplings", "porridge", "congee", "rice", "bao",
                                "tofu", "fish", "soup", "salad"), 1):
        lines += [{"role": "user", "content": f"For breakfast I had {food} and it was fine.",
                   "id": f"u{day}", "ts": f"2024-03-{day:02}T07:30:00+08:00"},
                  {"role": "assistant", "content": "Sounds tasty.",
                   "ts": f"2024-03-{day:02}T07:31:00+08:00"}]
    lines.append({"probe": "What did I have for breakfast on 5 March 2024?",
                  "expect_ids": ["u5"], "expect_text": ["rice"]})
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    args = ("eval", str(transcript), "-s", "retrieval:max_tokens=90,recent=0",
            "--provider", "scripted")
    report = tmp_path / "r.html"
    for zone, recall in (("UTC", 0.0), ("Asia/Shanghai", 1.0)):
        env = {"CHATMEM_TIMEZONE": zone}
        data = json.loads(invoke(*args, "--json", "--report", str(report), env=env,
                                 code=0).stdout)
        assert (data["timezone"], data["strategies"][0]["eval"]["id_recall"]) == (zone, recall)
        assert f"days read in time zone <b>{zone}</b>" in report.read_text(encoding="utf-8")
        table = invoke(*args, env=env, width=200, code=0).stdout
        assert f"tokenizer cl100k_base (exact); days read in time zone {zone}" in table
    replayed = invoke("replay", str(transcript), "-s", "buffer", "--provider", "scripted",
                      "--json", env={"CHATMEM_TIMEZONE": "Europe/Paris"}, code=0)
    assert json.loads(replayed.stdout)["timezone"] == "Europe/Paris"


def test_a_gate_on_a_recall_no_probe_measures_is_said_not_scored_zero(tmp_path: Path) -> None:
    # The table shows id recall as "–" when no probe expects an id: a gate on it failed as
    # "id recall below 0.5: buffer (0.00)", a figure the table says is not there.
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [
        {"role": "user", "content": "我的订单号是 KW-1234。", "id": "u1"},
        {"role": "assistant", "content": "好的。", "id": "a1"},
        {"probe": "我的订单号是什么？", "expect_text": ["KW-1234"]},
    ]), encoding="utf-8")
    args = ("eval", str(transcript), "-s", "buffer", "--provider", "scripted", "--json")
    assert invoke(*args, "--min-recall", "id=0.5", code=2).stderr == (
        "--min-recall id=0.5: no id recall was measured (no probe expects what it counts):"
        " buffer\n")
    invoke(*args, "--min-recall", "text=0.5", code=0)
    invoke(*args, "--min-recall", "0.5", code=0)


def test_a_probe_answer_that_fails_loses_no_other_answer(tmp_path: Path, chat_server) -> None:
    """The model failing one probe's answer (an error mid-reply on the second of three)
    ended the whole eval: the answers already paid for were thrown away, the later probes
    never asked. Each answer stands; the failed one is said, not scored, and the exit code
    says the run was not whole."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [
        {"role": "user", "content": "My sister is Ingrid, I live in Lisbon, 我的猫叫小白。",
         "id": "u1"},
        {"role": "assistant", "content": "Noted."},
        {"probe": "Sister?", "expect_text": ["Ingrid"]},
        {"probe": "City?", "expect_text": ["Lisbon"]},
        {"probe": "猫叫什么？", "expect_text": ["小白"]},
    ]), encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text(f'base_url = "{chat_server.base_url}"\nmodel = "m"\nmax_retries = 0\n',
                      encoding="utf-8")
    chat_server.plan = ["ok", "error-event", "ok"]
    chat_server.reply_words = ["Ingrid, Lisbon, 小白."]
    result = invoke("eval", str(transcript), "-s", "buffer", "--answer", "--provider",
                    "openai", "--config", str(config), "--json")
    assert len(chat_server.requests) == 3  # every probe asked, each once
    assert result.exit_code == 1, result.stderr
    row = json.loads(result.stdout)["strategies"][0]["eval"]
    assert [p["answer"] for p in row["per_probe"]] == [
        "Ingrid, Lisbon, 小白.", None, "Ingrid, Lisbon, 小白."]
    assert [p["answer_found"] for p in row["per_probe"]] == [["Ingrid"], None, ["小白"]]
    failed = row["per_probe"][1]["answer_error"]
    assert "the model ran out of memory" in failed
    assert row["answer_recall"] == 1.0
    assert result.stderr == ("error: buffer: probe 2 got no answer, 1 of 3 left out of answer"
                             f" recall: {failed}\n"), result.stderr
    # A folder's transcript likewise: scored, its unanswered probe said, exit 1.
    folder = tmp_path / "corpus"
    folder.mkdir()
    transcript.rename(folder / "t.jsonl")
    chat_server.plan = ["ok", "error-event", "ok"]
    result = invoke("eval", str(folder), "-s", "buffer", "--answer", "--provider", "openai",
                    "--config", str(config), "--json", "--jobs", "1")
    assert result.exit_code == 1, result.stderr
    data = json.loads(result.stdout)
    assert data["errors"] == [] and len(data["transcripts"]) == 1
    assert "error: t.jsonl: buffer: probe 2 got no answer" in result.stderr, result.stderr


def test_a_strategy_whose_plugin_fails_is_told_failed_and_the_others_are_scored(
        installed: Any) -> None:
    """`eval FILE -s window -s boom` stopped whole on boom's failure: window's scores,
    computed, were lost. Now boom is failed (typed in --json, one line on stderr), the
    others are scored, and the exit says something failed."""
    from plugin_site import BUILD_FAILS

    installed("chatmemtest-boom", "chatmemtest_boom", BUILD_FAILS, name="boom")
    args = ("eval", LONG, "-s", "window", "-s", "boom", "-s", "buffer", "--provider", "scripted")
    result = invoke(*args, "--json", code=1)
    data = json.loads(result.stdout)
    assert [s["strategy"]["label"] for s in data["strategies"]] == ["window", "buffer"]
    assert data["strategies"][0]["eval"]["id_recall"] == 0.4
    [failed] = data["failed"]
    assert failed["strategy"] == "boom"
    assert failed["error"].startswith(
        "strategy 'boom' failed in its build: RuntimeError: 上下文炸了")
    assert "chatmemtest-boom" in failed["error"]  # whom to tell
    [line] = result.stderr.splitlines()
    assert line == f"error: {failed['error']}"
    shown = invoke(*args, code=1, width=200)
    assert "window" in shown.stdout and "buffer" in shown.stdout
    assert shown.stderr.count("strategy 'boom' failed") == 1


def test_a_session_without_probes_is_told_how_to_add_some(tmp_path: Path) -> None:
    # "eval yesterday's chat": a chat's session has no probes, and nowhere to type one; the
    # error says the way that works (export, add probe lines, eval the file).
    db = str(tmp_path / "x.db")
    plain = tmp_path / "p.jsonl"
    plain.write_text('{"role": "user", "content": "我住在上海"}\n', encoding="utf-8")
    assert invoke("sessions", "import", str(plain), "旅行", "--db", db).exit_code == 0
    result = invoke("eval", "旅行", "-s", "buffer", "--provider", "scripted", "--db", db)
    assert result.exit_code == 2
    assert result.stderr == (
        "error: session 旅行 has no probe lines to evaluate: export it (chatmem sessions export"
        ' 旅行 旅行.jsonl), add {"probe": ..., "expect_text": [...]} lines, and eval that file\n')
