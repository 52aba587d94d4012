"""`chatmem replay` end to end: real SQLite file, real tokenizer, scripted model."""

from __future__ import annotations

import io
import json
import re
from itertools import accumulate
from pathlib import Path

import pytest
from cli_runner import invoke, output

from chatmem.store import Store

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
SUPPORT = str(SESSIONS / "support.jsonl")


def test_acceptance_replay_prints_table_and_chart(tmp_path: Path) -> None:
    result = invoke("replay", SUPPORT, "--strategy", "buffer", "--strategy", "window",
                    "--strategy", "tokens", "--keep-replies",
                    "--provider", "scripted", "--db", str(tmp_path / "x.db"))
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "replay of" in out and "prompt tokens per turn" in out
    # Table rows: buffer and tokens (2000 is never reached) cost the same, window less.
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in out.splitlines() if line.startswith("│")}
    assert rows["buffer"][:4] == ["30", "20,829", "694.3", "1,250"]
    assert rows["tokens"][:4] == ["30", "20,829", "694.3", "1,250"]
    assert rows["window"][:4] == ["30", "7,001", "233.4", "306"]
    assert "● buffer" in out and "▲ window" in out and "■ tokens" in out
    assert "turn 1" in out and "turn 30" in out
    # Nothing is stored without --save-as.
    assert not (tmp_path / "x.db").exists()


def test_json_numbers_show_quadratic_buffer_and_linear_window() -> None:
    result = invoke("replay", SUPPORT, "-s", "buffer", "-s", "window",
                    "--provider", "scripted", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["keep_replies"] is True and data["turns"] == 30
    per_turn = {s["strategy"]["label"]: s["prompt_tokens"]["per_turn"]
                for s in data["strategies"]}
    totals = {k: list(accumulate(v)) for k, v in per_turn.items()}
    second = {k: [c - 2 * b + a for a, b, c in zip(t, t[1:], t[2:], strict=False)]
              for k, t in totals.items()}
    assert min(second["buffer"]) > 0
    mean_buffer = sum(second["buffer"]) / len(second["buffer"])
    window_tail = second["window"][6:]
    assert abs(sum(window_tail) / len(window_tail)) < mean_buffer / 5
    assert data["strategies"][0]["prompt_tokens"]["total"] == totals["buffer"][-1] == 20829
    assert "eval" in data["strategies"][0]  # the sample has probes


def test_report_writes_self_contained_html(tmp_path: Path) -> None:
    report = tmp_path / "r.html"
    # Wide enough for the path on one line (a pytest-xdist worker's temporary path is long).
    result = invoke("replay", SUPPORT, "-s", "buffer", "-s", "window:k=2", "--provider",
                    "scripted", "--report", str(report), width=400)
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    html = report.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html>")
    assert "<script" not in html and "<link" not in html
    assert "window k=2" in html and "prompt tokens per turn" in html and "20,829" in html
    assert f"wrote {report}" in result.stderr  # type: ignore[attr-defined]


@pytest.mark.parametrize(("line", "message"), [
    ('{"role": "robot", "content": "x"}',
     "{path}:7: role must be user, assistant, system or developer (got 'robot')"),
    ('{"role": "user"}', "{path}:7: message has no content"),
    ('{"role": "user", "content": "unterminated', "{path}:7: not valid JSON "
                                                  "(Unterminated string starting at column 29)"),
])
def test_bad_transcript_gives_one_line_exit_2_and_writes_nothing(
    tmp_path: Path, line: str, message: str
) -> None:
    lines = [json.dumps({"role": "user" if i % 2 else "assistant", "content": f"m{i}"})
             for i in range(1, 7)]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([*lines, line]) + "\n", encoding="utf-8")
    db = tmp_path / "x.db"
    result = invoke("replay", str(path), "-s", "buffer", "--provider", "scripted", "--save-as",
                 "kept", "--db", str(db))
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert result.stderr == f"error: {message.format(path=path)}\n"  # type: ignore[attr-defined]
    assert result.stdout == ""  # type: ignore[attr-defined]
    assert not db.exists()


def test_save_as_stores_one_session_per_strategy(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    result = invoke("replay", SUPPORT, "-s", "buffer", "-s", "window:k=2", "--provider",
                 "scripted", "--save-as", "cmp", "--db", str(db))
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    assert "cmp-window-k-2" in result.stdout  # type: ignore[attr-defined]
    with Store(db) as store:
        assert {s.name: s.turns for s in store.sessions.list_sessions()} == {
            "cmp-buffer": 30, "cmp-window-k-2": 30}
    again = invoke("replay", SUPPORT, "-s", "buffer", "-s", "window:k=2", "--provider",
                "scripted", "--save-as", "cmp", "--db", str(db))
    assert again.exit_code == 2  # type: ignore[attr-defined]
    assert again.stderr == ("error: a session named 'cmp-buffer' already exists; "  # type: ignore[attr-defined]
                            "pick another --save-as\n")


def test_a_stored_session_replays_by_name(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    assert invoke("sessions", "import", SUPPORT, "--db", db).exit_code == 0  # type: ignore[attr-defined]
    result = invoke("replay", "support", "-s", "window:k=1", "--provider", "scripted", "--json",
                 "--db", db)
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    data = json.loads(result.stdout)  # type: ignore[attr-defined]
    assert data["turns"] == 30 and data["strategies"][0]["strategy"]["label"] == "window k=1"
    assert data["strategies"][0]["eval"]["probes"] == 6  # probes survive the import


def test_a_saved_replay_evaluates_by_name_and_inspect_names_what_eval_found(
        tmp_path: Path) -> None:
    """`replay --save-as` kept no probe (`eval SAVED`: "no probe lines to evaluate") and no
    transcript id, and inspect and sessions show gave only row ids: eval's found_ids
    ("u1") could not be matched with any message they show."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [
        {"chatmem": 1, "title": "导游"},
        {"role": "user", "content": "我的航班是 MU5137", "id": "u1"},
        {"role": "assistant", "content": "记下了", "id": "a1"},
        {"role": "user", "content": "I booked the Lakeside hotel", "id": "u2"},
        {"role": "assistant", "content": "Noted.", "id": "a2"},
        {"probe": "航班号？", "expect_ids": ["u1"], "expect_text": ["MU5137"]},
    ]), encoding="utf-8")
    db = str(tmp_path / "x.db")
    output("replay", str(transcript), "-s", "window:k=1", "--save-as", "存档", "--provider",
           "scripted", "--db", db)
    data = json.loads(output("eval", "存档", "-s", "buffer", "--provider", "scripted",
                             "--json", "--db", db))
    assert data["probes"] == 1
    assert data["strategies"][0]["eval"]["per_probe"][0]["found_ids"] == ["u1"]
    shown = json.loads(output("sessions", "show", "存档", "--json", "--db", db))
    assert [(m["id"] is not None, m["external_id"]) for m in shown["messages"]] == [
        (True, "u1"), (True, "a1"), (True, "u2"), (True, "a2")]
    seen = json.loads(output("inspect", "存档", "--strategy", "buffer", "--next", "航班号？",
                             "--json", "--db", db))
    history, = (p for p in seen["context"]["parts"] if p["kind"] == "history")
    assert [m["external_id"] for m in history["messages"]] == ["u1", "a1", "u2", "a2"]
    # Rebuilt in a scratch store (a strategy that keeps a summary): read from its copy.
    rebuilt = json.loads(output("inspect", "存档", "--strategy", "summary-buffer", "--next",
                                "航班号？", "--provider", "scripted", "--json", "--db", db))
    assert rebuilt["replayed"] is not None
    assert [m["external_id"] for p in rebuilt["context"]["parts"] for m in p["messages"]
            if p["kind"] == "history"] == ["u1", "a1", "u2", "a2"]
    recorded = json.loads(output("inspect", "存档", "2", "--json", "--db", db))
    assert [(m["role"], m["external_id"]) for p in recorded["context"]["parts"]
            for m in p["messages"]] == [("user", "u1"), ("assistant", "a1"), ("user", None)]


@pytest.mark.parametrize(("args", "message"), [
    (["-s", "nope"], "error: unknown strategy 'nope' (valid: "),
    (["-s", "window:k=x"], "error: parameter k='x' of strategy 'window' must be a whole number"),
    (["-s", "buffer", "-s", "buffer"], "error: each --strategy must differ"),
    (["-s", "buffer", "-p", "k=2"], "error: unknown parameter 'k' for strategy 'buffer'"),
])
def test_bad_strategies_are_usage_errors(args: list[str], message: str) -> None:
    result = invoke("replay", SUPPORT, *args, "--provider", "scripted")
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert result.stderr.startswith(message)  # type: ignore[attr-defined]
    assert result.stderr.count("\n") == 1  # type: ignore[attr-defined]


def test_unknown_source_names_it(tmp_path: Path) -> None:
    result = invoke("replay", "nowhere", "-s", "buffer", "--provider", "scripted", "--db",
                 str(tmp_path / "x.db"))
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert result.stderr == "error: nowhere: no such transcript file or session\n"  # type: ignore[attr-defined]
    missing = invoke("replay", "gone.jsonl", "-s", "buffer", "--provider", "scripted")
    assert missing.stderr == "error: gone.jsonl: no such transcript file\n"  # type: ignore[attr-defined]


def test_long_replays_show_a_progress_bar_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rich.console import Console

    import chatmem.cli.comparing as command

    screen = Screen()
    terminal = Console(file=screen, force_terminal=True, width=100)
    monkeypatch.setattr(command, "consoles", lambda: (Console(file=io.StringIO()), terminal))
    with command.progress_bar(100) as advance:
        assert advance is not None
        advance("window", 50, 100)
    assert "replaying with window" in screen.getvalue()
    with command.progress_bar(10) as short:
        assert short is None  # short replays stay quiet


def test_forced_colour_draws_no_bar_into_a_file() -> None:
    """FORCE_COLOR=1 made Rich call stderr a terminal: a long replay's bar went into the
    file, frame after frame (cursor hidden, each line erased and redrawn)."""
    result = invoke("replay", str(SESSIONS / "long-chat.jsonl"), "-s", "window",
                    "--provider", "scripted", env={"FORCE_COLOR": "1"}, code=0)
    assert "\x1b[?25l" not in result.stderr and "\x1b[2K" not in result.stderr
    assert "\r" not in result.stderr


class Screen(io.StringIO):
    """A terminal the test can read: what isatty() says of one."""

    def isatty(self) -> bool:
        return True


def test_summary_progress_is_one_line_per_strategy_unless_verbose(tmp_path: Path) -> None:
    args = ["replay", SUPPORT, "-s", "summary", "-s", "window", "--provider", "scripted"]
    quiet = invoke(*args, width=200)
    assert quiet.exit_code == 0, quiet.stderr
    lines = quiet.stderr.splitlines()
    summary = [line for line in lines if line.startswith("summary:")]
    assert len(summary) == 1 and "/summary" not in quiet.stderr
    assert summary[0].startswith("summary: 30 summary versions, the last covering turns 1–30")
    assert summary[0].endswith("(--verbose lists each version)")
    loud = invoke(*args, "--verbose", width=200)
    versions = [line for line in loud.stderr.splitlines() if " now covers " in line]
    assert len(versions) == 30 and "/summary shows the diff" not in loud.stderr
    assert versions[0].startswith("summary: summary v1 now covers turn 1: +")



def test_replay_without_a_strategy_compares_the_default_set_as_eval_does(
        tmp_path: Path) -> None:
    # Issue 30, finding 5: `replay FILE` alone failed with "missing option --strategy".
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line) + "\n" for line in [
        {"role": "user", "content": "My order is KW-58213."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "And the colour is teal."},
        {"role": "assistant", "content": "Teal it is."},
    ]), encoding="utf-8")
    config = tmp_path / "c.toml"
    config.write_text('[embeddings]\nprovider = "hash"\n', encoding="utf-8")
    data = json.loads(output("replay", str(transcript), "--provider", "scripted", "--json",
                             "--config", str(config)))
    names = [s["strategy"]["name"] for s in data["strategies"]]
    assert names == ["buffer", "window", "tokens", "summary-buffer", "entity", "retrieval"]
    assert all(s["prompt_tokens"]["total"] > 0 for s in data["strategies"])


def test_contexts_over_their_budget_are_said_once_per_strategy(tmp_path: Path) -> None:
    """What `inspect` warns of at each turn, a replay says once: how many of its contexts
    went over, and the largest; a strategy that kept within says nothing of it."""
    db = str(tmp_path / "h.db")
    invoke("chat", "s", "--provider", "scripted", "--db", db, input=(
        "My name is Ada and I live in Paris.\n我叫李雷，住在北京，订单号是 A12345。\n"
        "I am allergic to peanuts.\n我下个月三月十五日去上海。\n"), code=0)
    data = json.loads(output("replay", "s", "-s", "tokens:max_tokens=25", "-s", "window",
                             "--json", "--db", db))
    tight, roomy = data["strategies"]
    over = [t for t in tight["prompt_tokens"]["per_turn"] if t > 25]
    assert over and tight["notices"] == [
        f"{len(over)} contexts of 4 over the budget of 25 (the largest {max(over)} tokens)"]
    assert not any("over the budget" in n for n in roomy["notices"])


def test_a_saved_replay_of_a_transcript_without_a_provider_records_the_one_that_answered(
        tmp_path: Path) -> None:
    """It recorded provider "auto", model "auto": a later replay of the saved session
    ignored the configured provider and looked for a local model file named auto."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        '{"chatmem": 1, "title": "导游", "system": "你是导游"}\n'
        '{"role": "user", "content": "我想去西湖"}\n'
        '{"role": "user", "content": "有什么推荐？"}\n', encoding="utf-8")
    config = tmp_path / "c.toml"
    config.write_text('provider = "scripted"\n', encoding="utf-8")
    db = str(tmp_path / "h.db")
    saved = invoke("replay", str(transcript), "-s", "summary", "--save-as", "导游",
                   "--db", db, "--config", str(config))
    assert saved.exit_code == 0, saved.stderr
    with Store(db) as store:
        session = store.sessions.session("导游")
    assert (session.provider, session.model) == ("scripted", "scripted")
    again = invoke("replay", "导游", "-s", "summary", "--db", db, "--config", str(config),
                   "--json")
    assert again.exit_code == 0, again.stderr
    assert "GGUF" not in again.stderr and "summary is behind" not in again.stderr


@pytest.mark.parametrize("command", ["replay", "eval"])
def test_turns_counts_the_turns_replayed_not_the_user_messages(tmp_path: Path,
                                                               command: str) -> None:
    """A user message followed by another is stored as it is, not replayed, yet the top
    level `turns` (and the report's header) counted it: 3 beside each run's 2."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [
        {"role": "user", "content": "我叫李雷。", "id": "u1"},
        {"role": "assistant", "content": "你好，李雷。", "id": "a1"},
        {"role": "user", "content": "我住在杭州，", "id": "u2"},
        {"role": "user", "content": "下个月去上海。", "id": "u3"},
        {"role": "assistant", "content": "记下了。", "id": "a3"},
        {"probe": "我住哪儿？", "expect_ids": ["u2"], "expect_text": ["杭州"]},
    ]), encoding="utf-8")
    report = tmp_path / "r.html"
    result = invoke(command, str(transcript), "-s", "buffer", "--provider", "scripted",
                    "--json", "--report", str(report), code=0)
    data = json.loads(result.stdout)
    assert data["turns"] == data["strategies"][0]["turns"] == 2
    assert "2 user turns" in report.read_text(encoding="utf-8")


def test_a_config_table_restating_defaults_leaves_the_labels_as_without_it(
        tmp_path: Path) -> None:
    """config.example.toml's `[strategies.window] k = 5` (the default) labelled the run
    `window k=5`, so at 80 columns the table lost its rules and the legend differed from
    docs/compare.md's; a label names the parameters that differ from their defaults, as
    `sessions list` does, whether the config or -s gave them."""
    config = tmp_path / "c.toml"
    config.write_text("[strategies.window]\nk = 5\n\n[strategies.tokens]\nmax_tokens = 2000\n"
                      "\n[strategies.summary-buffer]\nmax_tokens = 300\n", encoding="utf-8")
    data = json.loads(output("replay", SUPPORT, "-s", "window", "-s", "tokens",
                             "-s", "summary-buffer", "-s", "window:k=3", "--provider",
                             "scripted", "--json", "--config", str(config)))
    assert [s["strategy"]["label"] for s in data["strategies"]] == [
        "window", "tokens", "summary-buffer max_tokens=300", "window k=3"]
    assert data["strategies"][0]["strategy"]["params"]["k"] == 5
    table = invoke("replay", SUPPORT, "-s", "buffer", "-s", "window", "-s", "tokens",
                   "--provider", "scripted", "--config", str(config))
    assert table.exit_code == 0, table.stderr
    assert "┃ strategy ┃" in table.stdout
    assert "▲ window  ■ tokens" in table.stdout


@pytest.mark.parametrize("command", ["replay", "eval"])
def test_a_scripted_reply_file_gives_every_strategy_the_same_replies_in_either_order(
        tmp_path: Path, command: str) -> None:
    """One scripted model answered every strategy's turns and probes in turn: the second
    strategy got the replies after the first one's (buffer 742 prompt tokens after
    window k=2, 567 before it; its probe answered `r2`), so the numbers depended on the
    order of -s. Each strategy runs on a model of its own."""
    transcript = tmp_path / "t.jsonl"
    lines: list[dict[str, object]] = [{"chatmem": 1, "provider": "scripted"}]
    for n in range(1, 8):
        lines += [{"role": "user", "content": f"事实 {n}：my code is ALPHA{n}", "id": f"u{n}"},
                  {"role": "assistant", "content": f"ok {n}"}]
    lines.append({"probe": "code 1?", "expect_ids": ["u1"], "expect_text": ["ALPHA1"]})
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n"
                                  for line in lines), encoding="utf-8")
    script = tmp_path / "replies.txt"
    script.write_text("r1\nr2\nALPHA1 it is\nr4\nr5\nr6\nr7\n", encoding="utf-8")
    config = tmp_path / "c.toml"
    config.write_text(f'[scripted]\nscript = "{script}"\n', encoding="utf-8")
    extra = ["--regenerate"] if command == "replay" else ["--answer"]

    def figures(*specs: str) -> dict[str, object]:
        args = [a for spec in specs for a in ("-s", spec)]
        data = json.loads(output(command, str(transcript), *args, *extra, "--provider",
                                 "scripted", "--config", str(config), "--json"))
        return {s["strategy"]["label"]: (s["prompt_tokens"]["per_turn"],
                                         [p.get("answer") for p in s["eval"]["per_probe"]])
                for s in data["strategies"]}

    first = figures("window:k=2", "buffer")
    assert first == figures("buffer", "window:k=2")
    assert first == {**figures("window:k=2"), **figures("buffer")}


def test_regenerate_leaves_out_what_only_the_recorded_replies_held(tmp_path: Path) -> None:
    """With --regenerate, buffer (which keeps everything) showed id recall 0.57 and text
    recall 0.80: the probes' expected ids naming recorded assistant messages, and a
    string only one of them said, can be found by no strategy. They are left out of the
    score and one line says so; a string a kept message also says is still scored."""
    transcript = tmp_path / "edge.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [
        {"role": "assistant", "content": "欢迎！我是礼宾Gretchen。", "id": "g0"},
        {"role": "user", "content": "Hi, my locker code is 4471.", "id": "u1"},
        {"role": "system", "content": "Note: the tier is Platinum.", "id": "s1"},
        {"role": "assistant", "content": "Noted, locker 4471.", "id": "r1"},
        {"role": "user", "content": "And my dog is Biscuit.", "id": "u3"},
        {"role": "assistant", "content": "Biscuit, lovely.", "id": "r3"},
        {"probe": "礼宾叫什么？", "expect_ids": ["g0"], "expect_text": ["gretchen"]},
        {"probe": "Tier?", "expect_ids": ["s1"], "expect_text": ["Platinum"]},
        {"probe": "Dog?", "expect_ids": ["u3", "r3"], "expect_text": ["Biscuit"]},
        {"probe": "Locker?", "expect_ids": ["u1", "r1"], "expect_text": ["4471"]},
    ]), encoding="utf-8")
    regenerated = invoke("replay", str(transcript), "-s", "buffer", "-s", "window:k=1",
                         "--regenerate", "--provider", "scripted", "--json", code=0)
    buffer, window = json.loads(regenerated.stdout)["strategies"]
    assert (buffer["eval"]["id_recall"], buffer["eval"]["text_recall"]) == (1.0, 1.0)
    assert (window["eval"]["id_recall"], window["eval"]["text_recall"]) == (0.3333, 0.3333)
    said = ("3 expected ids name recorded replies that --regenerate replaced; "
            "1 expected text only they said: not scored")
    assert buffer["notices"] == window["notices"] == [said]
    assert [(p["replaced_ids"], p["replaced_text"]) for p in buffer["eval"]["per_probe"]] == [
        (["g0"], ["gretchen"]), ([], []), (["r3"], []), (["r1"], [])]
    shown = invoke("replay", str(transcript), "-s", "buffer", "-s", "window:k=1",
                   "--regenerate", "--provider", "scripted", code=0)
    assert " ".join(shown.stderr.split()) == f"buffer, window k=1: {said}"
    # The probe left with nothing to measure is no pass in the report (it showed ✓, 0 of 0).
    report = tmp_path / "report.html"
    invoke("replay", str(transcript), "-s", "buffer", "--regenerate", "--provider", "scripted",
           "--report", str(report), code=0)
    cells = re.findall(r'<span class="(\w+)"[^>]*>([^<]*)</span>', report.read_text("utf-8"))
    assert [cell for cell in cells if cell[1] in ("✓", "✗", "–") or "/" in cell[1]][-4:] == [
        ("muted", "–"), ("good", "✓"), ("good", "✓"), ("good", "✓")]
    # Kept replies: everything is scored, nothing said.
    kept = json.loads(invoke("replay", str(transcript), "-s", "buffer", "--provider",
                             "scripted", "--json", code=0).stdout)["strategies"][0]
    assert (kept["eval"]["id_recall"], kept["eval"]["text_recall"], kept["notices"]) == (
        1.0, 1.0, [])


@pytest.mark.parametrize("one_off", ["Answer in one word.", "只用一个词回答。"])
def test_a_stored_sessions_replay_sends_each_turn_the_system_prompt_it_was_sent_with(
        tmp_path: Path, one_off: str) -> None:
    """An `ask --system` holds for that question only, and the turn records it; a replay of
    the session (README: the numbers reproduce) sent that turn the session's prompt
    instead (`ask s 二 --system 短`: recorded 30 tokens, replayed under buffer as 33)."""
    db = str(tmp_path / "x.db")
    for text, extra in [("一", ()), ("二", ("--system", one_off)), ("三", ())]:
        output("ask", "s", text, "-s", "buffer", *extra, "--provider", "scripted", "--db", db)
    sent = [json.loads(output("inspect", "s", str(n), "--json", "--db", db))
            for n in (1, 2, 3)]
    assert [m["content"] for m in sent[1]["messages"] if m["role"] == "system"] == [one_off]
    data = json.loads(output("replay", "s", "-s", "buffer", "--json", "--db", db))
    assert data["strategies"][0]["prompt_tokens"]["per_turn"] == [
        turn["turn"]["estimated_tokens"] for turn in sent]


def test_a_replay_or_eval_whose_memory_updates_failed_exits_1_saying_so_once(
        tmp_path: Path) -> None:
    """The summarizer's server gone: replay printed its figures, said "summary is behind"
    once per turn (30 lines) and exited 0, so a script took a summary that never moved for a
    result; eval the same, and eval of a folder said nothing at all."""
    config = tmp_path / "c.toml"
    config.write_text('max_retries = 0\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n',
                      encoding="utf-8")
    folder = tmp_path / "对话"
    folder.mkdir()
    transcript = folder / "旅行.jsonl"
    lines = [{"role": role, "content": f"{text} {role}"}
             for text in ("预算五千元 budget", "三月十五日出发 leave", "订单 ORD-7731")
             for role in ("user", "assistant")]
    lines.append({"probe": "预算多少?", "expect_text": ["五千元"]})
    transcript.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines)
                          + "\n", encoding="utf-8")
    common = ["--provider", "openai", "--config", str(config), "--db", str(tmp_path / "h.db")]
    line = ("error: summary: 3 memory updates failed in 3 turns: its figures are of a memory"
            " that did not keep up")
    replayed = invoke("replay", str(transcript), "-s", "summary", "-s", "window", *common,
                      code=1)
    assert "│ summary" in replayed.stdout and "│ window" in replayed.stdout
    said = replayed.stderr.splitlines()
    assert said[-1] == line
    behind = [s for s in said if "summary is behind" in s]
    assert len(behind) == 1 and "turns 1–3" in behind[0] and "3 times in 3 turns" in behind[0]
    as_json = invoke("replay", str(transcript), "-s", "summary", "--json", *common, code=1)
    assert json.loads(as_json.stdout)["turns"] == 3
    assert as_json.stderr.splitlines() == [line]
    assert invoke("eval", str(transcript), "-s", "summary", *common,
                  code=1).stderr.splitlines()[-1] == line
    assert (f"error: 旅行.jsonl: {line.removeprefix('error: ')}"
            in invoke("eval", str(folder), "-s", "summary", "-j", "1", *common,
                      code=1).stderr.splitlines())
    # A strategy that makes no model call is not behind: the same command exits 0.
    assert invoke("replay", str(transcript), "-s", "window", *common, code=0).stderr == ""


def test_a_replays_last_failed_update_is_not_said_to_be_retried_next_turn(
        tmp_path: Path) -> None:
    """A replay kept in memory has no turn after its last, yet its end notices said "the
    next turn catches up" / "will retry next turn"; a saved replay's session does get a next
    turn (when it is continued), so there it stays true."""
    config = tmp_path / "c.toml"
    config.write_text('max_retries = 0\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n',
                      encoding="utf-8")
    transcript = tmp_path / "旅行.jsonl"
    transcript.write_text("\n".join(json.dumps({"role": role, "content": f"{text} {role}"},
                                               ensure_ascii=False)
                                    for text in ("预算五千元 budget", "订单 ORD-7731")
                                    for role in ("user", "assistant")) + "\n", encoding="utf-8")
    common = ["--provider", "openai", "--config", str(config), "--db", str(tmp_path / "h.db")]

    def said(*args: str) -> dict[str, str]:
        lines = invoke("replay", str(transcript), "-s", "summary", "-s", "entity", *args,
                       *common, code=1).stderr.splitlines()
        return {label: next(line for line in lines if line.startswith(f"{label}: "))
                for label in ("summary", "entity")}

    in_memory = said()
    assert "summary is behind" in in_memory["summary"]
    assert "memory update failed" in in_memory["entity"]
    for line in in_memory.values():
        assert "next turn" not in line and "replay ended" in line, line
        assert line.endswith("; 2 times in 2 turns"), line  # still one line each
    saved = said("--save-as", "旅")
    assert saved["summary"].endswith("the next turn catches up; 2 times in 2 turns")
    assert "will retry next turn" in saved["entity"]
