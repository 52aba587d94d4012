"""`chatmem sessions export` and `sessions import`: lossless round trips, clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import invoke

from chatmem.store import Store
from chatmem.transcripts.reader import MOST_TRANSCRIPT_BYTES

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"


@pytest.mark.parametrize(("sample", "name"), [
    ("support.jsonl", "support"), ("travel-zh.jsonl", "travel-zh"),
    ("long-chat.jsonl", "long-chat"),
])
def test_export_then_import_round_trips_losslessly(tmp_path: Path, sample: str,
                                                   name: str) -> None:
    first, second = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    imported = invoke("sessions", "import", str(SESSIONS / sample), "--db", first)
    assert imported.exit_code == 0, imported.stderr
    exported = tmp_path / "out.jsonl"
    assert invoke("sessions", "export", name, "-o", str(exported), "--db",
                  first).exit_code == 0
    again = invoke("sessions", "import", str(exported), "--db", second)
    assert again.exit_code == 0, again.stderr
    back = invoke("sessions", "export", name, "--db", second)
    assert back.exit_code == 0
    assert back.stdout == exported.read_text(encoding="utf-8")
    # Every line of the sample after its header (messages with ids and timestamps, probes)
    # survived both trips byte for byte; the header gains the session's strategy and profile.
    text = (SESSIONS / sample).read_text("utf-8")
    assert back.stdout.splitlines()[1:] == text.splitlines()[1:]
    source = [json.loads(line) for line in text.splitlines()]
    messages = [line for line in source if "role" in line]
    assert {k: v for k, v in json.loads(back.stdout.splitlines()[0]).items()
            if k not in ("strategy", "params", "user")} == source[0]
    with Store(second) as store:
        session = store.sessions.session(name)
        assert session.system == source[0]["system"]
        stored = store.history.messages(session.id)
        assert [m.external_id for m in stored] == [m["id"] for m in messages]


def test_import_reports_what_it_did_and_keeps_probes(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    result = invoke("sessions", "import", str(SESSIONS / "support.jsonl"),
                    "--name", "desk", "--db", db)
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [
        "imported 60 messages and 6 probes into session desk",
        "the transcript sets the session's system prompt, which the model follows: 'You are "
        "Ava, a support agent for Kettleworks, a kitchen appliance shop. Be conc…' (/system "
        "in the chat changes it)"]
    with Store(db) as store:
        session = store.sessions.session("desk")
        assert store.history.turn_count(session.id) == 30
        # Asked after turn 10 (message 20) and, five of them, after turn 30 (message 60).
        assert [p["after_position"] for p in store.sessions.probes(session.id)] == [20] + [60] * 5
    evaluated = invoke("eval", "desk", "-s", "window", "--db", db, "--json")
    assert evaluated.exit_code == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["strategies"][0]["eval"]["probes"] == 6


def test_import_openai_style_and_plain_list(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    openai = tmp_path / "chat.json"
    openai.write_text(json.dumps({"messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"}]}),
        encoding="utf-8")
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    assert invoke("sessions", "import", str(openai), "--db", db).exit_code == 0
    assert invoke("sessions", "import", str(listed), "--db", db).exit_code == 0
    with Store(db) as store:
        chat = store.sessions.session("chat")  # named after the file when there is no title
        assert chat.system == "You are terse."
        assert [m.content for m in store.history.messages(chat.id)] == ["你好", "你好！"]
        listed = store.sessions.session("list")
        assert [m.content for m in store.history.messages(listed.id)] == ["hi"]


def test_a_leading_system_message_is_the_system_prompt_in_json_lines_as_in_a_json_list(
        tmp_path: Path) -> None:
    """The same character chat as JSON Lines (no header) came in with its persona as turn 1,
    quoted as data, and under window it fell out; as a JSON list it was the system prompt."""
    db = str(tmp_path / "x.db")
    chat = [{"role": "system", "content": "你是客栈老板 Luna。"},
            {"role": "assistant", "content": "Welcome! Stew is venison."},
            {"role": "user", "content": "A room please."}]
    (tmp_path / "g.jsonl").write_text(
        "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in chat), encoding="utf-8")
    (tmp_path / "g.json").write_text(json.dumps(chat, ensure_ascii=False), encoding="utf-8")
    invoke("sessions", "import", str(tmp_path / "g.jsonl"), "a", "--db", db, code=0)
    invoke("sessions", "import", str(tmp_path / "g.json"), "b", "--db", db, code=0)
    with Store(db) as store:
        for name in ("a", "b"):
            session = store.sessions.session(name)
            assert session.system == "你是客栈老板 Luna。", name
            assert [m.role for m in store.history.messages(session.id)] == [
                "assistant", "user"], name


def test_bad_file_imports_nothing(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "ok"}\n{"role": "bot", "content": "x"}\n',
                   encoding="utf-8")
    result = invoke("sessions", "import", str(bad), "--db", str(db))
    assert result.exit_code == 2
    assert result.stderr == (f"error: {bad}:2: role must be user, assistant, system or developer "
                             "(got 'bot')\n")
    assert not db.exists()


def test_name_conflicts_and_bad_formats_are_usage_errors(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    sample = str(SESSIONS / "support.jsonl")
    assert invoke("sessions", "import", sample, "--db", db).exit_code == 0
    clash = invoke("sessions", "import", sample, "--db", db)
    assert clash.exit_code == 2
    # The way on said: the file was exported from this history, or imported before.
    assert clash.stderr == ("error: a session named 'support' already exists; import it under"
                            f" another name: chatmem sessions import {sample} NAME\n")
    assert invoke("sessions", "import", sample, "support-2", "--db", db).exit_code == 0
    fmt = invoke("sessions", "export", "support", "--format", "pdf", "--db", db)
    assert fmt.exit_code == 2
    assert fmt.stderr == "error: --format must be one of jsonl, json, markdown, got 'pdf'\n"
    missing = invoke("sessions", "export", "nope", "--db", db)
    assert missing.exit_code == 1 and missing.stderr == (
        f"error: no session named 'nope' in {db} (`chatmem sessions list` lists them)\n")


def test_markdown_export(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    invoke("sessions", "import", str(SESSIONS / "travel-zh.jsonl"), "--db", db)
    # Times in the timezone setting's zone, with the offset: a document says its zone.
    result = invoke("sessions", "export", "travel-zh", "--format", "markdown",
                    "--db", db, env={"CHATMEM_TIMEZONE": "Asia/Shanghai"})
    assert result.exit_code == 0
    assert result.stdout.startswith("# travel-zh\n")
    assert "### user · `t3u` · 2026-03-09 17:06 +08:00\n\n总预算是两万元人民币" in result.stdout


def test_a_markdown_export_given_to_import_is_told_it_is_for_reading(tmp_path: Path) -> None:
    """It was '家庭记录.md:1: not valid JSON (Expecting value at column 1)'."""
    db = str(tmp_path / "x.db")
    invoke("sessions", "import", str(SESSIONS / "travel-zh.jsonl"), "家庭", "--db", db, code=0)
    written = tmp_path / "家庭记录.md"
    invoke("sessions", "export", "家庭", "-o", str(written), "--db", db, code=0)
    told = (f"error: {written}: a Markdown export is for reading; sessions import and replay "
            "read .jsonl and .json exports (chatmem sessions export SESSION -o FILE.jsonl)\n")
    assert invoke("sessions", "import", str(written), "x", "--db", db, code=2).stderr == told
    # Piped in, the heading tells it; nothing was stored either way.
    piped = invoke("sessions", "import", "-", "x", "--db", db, input=written.read_text("utf-8"),
                   code=2)
    assert "standard input: a Markdown export is for reading" in piped.stderr
    assert "x" not in invoke("sessions", "list", "--json", "--db", db, code=0).stdout.split('"')


def test_an_undated_message_keeps_the_conversations_clock(tmp_path: Path) -> None:
    """A 2024 conversation whose last reply has no `ts`: the reply is dated as the message
    before it, not when it was imported, so recall finds May 2024 where it was; a transcript
    that dates nothing is stamped when stored."""
    lines = [
        {"role": "user", "content": "We had dinner at the Golden Dragon. 金龙餐厅", "ts":
         "2024-05-12T19:00:00Z"},
        {"role": "assistant", "content": "Sounds lovely.", "ts": "2024-05-12T19:01:00Z"},
        {"role": "user", "content": "And Chez Marie in September.", "ts": "2024-09-20T19:00:00Z"},
        {"role": "assistant", "content": "Noted."},
    ]
    source = tmp_path / "t.jsonl"
    source.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in lines) + "\n",
                      encoding="utf-8")
    db = str(tmp_path / "h.db")
    invoke("sessions", "import", str(source), "dinners", "--db", db, code=0)
    with Store(db) as store:
        times = [m.created_at for m in
                 store.history.messages(store.sessions.session("dinners").id)]
    assert times[-1].startswith("2024-09-20T19:00:00")
    # --next is asked now: "last May" would be this year's.
    shown = json.loads(invoke("inspect", "dinners", "--next", "Where did we eat in May 2024?",
                              "-s", "retrieval", "--json", "--db", db, code=0).stdout)
    recalled = [m["content"] for p in shown["context"]["parts"] if p["kind"] == "recalled"
                for m in p["messages"]]
    assert recalled and recalled[0].startswith("We had dinner at the Golden Dragon")
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"role": "user", "content": "hi"}\n', encoding="utf-8")
    invoke("sessions", "import", str(plain), "plain", "--db", db, code=0)
    with Store(db) as store:
        [stamped] = store.history.messages(store.sessions.session("plain").id)
    assert not stamped.created_at.startswith("2024")


def test_a_transcript_whose_times_go_back_is_imported_with_a_warning_naming_the_line(
        tmp_path: Path) -> None:
    lines = [{"role": "user", "content": "九月的晚饭", "ts": "2024-09-20T19:00:00Z"},
             {"role": "assistant", "content": "好", "ts": "2024-09-20T19:01:00Z"},
             {"role": "user", "content": "Dinner in May", "ts": "2024-05-12T19:00:00Z"},
             {"role": "assistant", "content": "Noted."}]
    source = tmp_path / "pasted.jsonl"
    source.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in lines) + "\n",
                      encoding="utf-8")
    db = str(tmp_path / "h.db")
    done = invoke("sessions", "import", str(source), "pasted", "--db", db, code=0)
    assert done.stderr.splitlines()[0] == (
        f"warning: {source}:3: a message dated before one above it; recall by a named time "
        "(\"last May\") reads a conversation in time order")
    in_order = tmp_path / "in-order.jsonl"
    in_order.write_text("\n".join(json.dumps(m, ensure_ascii=False)
                                  for m in [lines[2], lines[0]]) + "\n", encoding="utf-8")
    quiet = invoke("sessions", "import", str(in_order), "in-order", "--db", db, code=0)
    assert "warning" not in quiet.stderr
    # A day, then a time on that day: in order (a date alone is not its noon).
    by_day = tmp_path / "by-day.jsonl"
    by_day.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in [
        {"role": "user", "content": "三月七日的日记", "ts": "2026-03-07"},
        {"role": "assistant", "content": "好", "ts": "2026-03-07T09:00:00Z"}]) + "\n",
        encoding="utf-8")
    quiet = invoke("sessions", "import", str(by_day), "by-day", "--db", db, code=0)
    assert "warning" not in quiet.stderr


def test_an_archive_restores_names_whose_letters_carry_combining_marks(tmp_path: Path) -> None:
    import unicodedata
    import zipfile

    first, second = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    names = ["हिन्दी", "ไม้", "ab\u0300", "ab", "Tiếng-Việt", "中文"]
    # Typed decomposed, as a macOS file name would be: stored and restored composed.
    typed = [*names[:4], unicodedata.normalize("NFD", "Tiếng-Việt"), "中文"]
    for name in typed:
        invoke("chat", name, "--provider", "scripted", "--db", first, input="你好\n", code=0)
    archive = tmp_path / "all.zip"
    invoke("sessions", "export", "--all", "-o", str(archive), "--db", first, code=0)
    with zipfile.ZipFile(archive) as zf:
        members = sorted(n for n in zf.namelist() if n.startswith("sessions/"))
        zf.extractall(tmp_path / "out")
    assert members == sorted(f"sessions/{name}.jsonl" for name in names)
    said = [invoke("sessions", "import", str(tmp_path / "out" / member), "--db", second,
                   code=0).stderr.splitlines()[0] for member in members]
    assert said == [f"imported 2 messages into session {member[9:-6]}" for member in members]
    with Store(second) as store:
        assert sorted(s.name for s in store.sessions.list_sessions()) == sorted(names)


def test_a_name_made_from_a_decomposed_file_name_keeps_its_accents(tmp_path: Path) -> None:
    import unicodedata

    db = str(tmp_path / "h.db")
    file = tmp_path / f"{unicodedata.normalize('NFD', 'café')}.jsonl"
    file.write_text('{"role": "user", "content": "咖啡"}\n', encoding="utf-8")
    done = invoke("sessions", "import", str(file), "--db", db, code=0)
    assert done.stderr == "imported 1 message into session café\n"


@pytest.mark.parametrize(("header", "said"), [
    ({"strategy": "No such"}, "h.jsonl:1: in the header: unknown strategy 'No such' (valid: "),
    ({"strategy": "window", "params": {"k": -3}},
     "h.jsonl:1: in the header: parameter k=-3 of strategy 'window' must be at least 0"),
    # Dropped, the session ran on the configured strategy's settings, the file's unused.
    ({"params": {"k": 2}}, "h.jsonl:1: in the header: 'params' without 'strategy'"),
])
def test_a_bad_header_strategy_is_one_line_naming_the_file_and_line(
        tmp_path: Path, header: dict[str, object], said: str) -> None:
    source = tmp_path / "h.jsonl"
    source.write_text(json.dumps({"chatmem": 1, "title": "旅行", **header}) + "\n"
                      + json.dumps({"role": "user", "content": "你好"}, ensure_ascii=False)
                      + "\n", encoding="utf-8")
    result = invoke("sessions", "import", str(source), "--db", str(tmp_path / "h.db"))
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {tmp_path / said}")
    listed = invoke("sessions", "list", "--json", "--db", str(tmp_path / "h.db"))
    assert listed.exit_code != 0 or json.loads(listed.stdout) == []


def test_a_json_export_imports_back_as_the_session_it_came_from(tmp_path: Path) -> None:
    """The .json export dropped probes and system prompt changes, and its first system
    message (data) came back as the session's system prompt (an instruction)."""
    source = tmp_path / "sp.jsonl"
    source.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in [
        {"chatmem": 1, "title": "系统"},
        {"role": "system", "content": "系统通知：会话开始", "id": "z0"},
        {"role": "user", "content": "我想去西湖", "id": "x1"},
        {"role": "assistant", "content": "好", "id": "x2"},
        {"system_prompt": "Answer in English only."},
        {"role": "user", "content": "预算五千元", "id": "x3"},
        {"role": "assistant", "content": "OK", "id": "x4"},
        {"probe": "预算多少？", "expect_ids": ["x3"], "expect_text": ["五千元"]}]) + "\n",
        encoding="utf-8")
    db = str(tmp_path / "h.db")
    invoke("sessions", "import", str(source), "sp", "--db", db, "--no-index", code=0)
    exported = tmp_path / "sp.json"
    invoke("sessions", "export", "sp", "-o", str(exported), "--db", db, code=0)
    invoke("sessions", "import", str(exported), "sp2", "--db", db, "--no-index", code=0)
    again = tmp_path / "sp2.jsonl"
    invoke("sessions", "export", "sp2", "-o", str(again), "--db", db, code=0)
    first = tmp_path / "sp1.jsonl"
    invoke("sessions", "export", "sp", "-o", str(first), "--db", db, code=0)
    # Everything after the header is the same: messages, the prompt change, the probe.
    assert again.read_text(encoding="utf-8").splitlines()[1:] == \
        first.read_text(encoding="utf-8").splitlines()[1:]
    with Store(db) as store:
        assert store.sessions.session("sp2").system == "Answer in English only."
        assert len(store.sessions.probes(store.sessions.session("sp2").id)) == 1


def test_a_probe_stays_on_its_side_of_a_prompt_change(tmp_path: Path) -> None:
    """Export wrote the probe before the system_prompt line it followed, so `eval SESSION`
    scored it under the old prompt while `eval FILE` used the new one. A probe written
    above a system_prompt line stays above it, under the prompt it was asked with."""
    source, at = tmp_path / "sp.jsonl", "2024-05-01T10:0{}:00.000+00:00"
    source.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in [
        {"chatmem": 1, "title": "sp", "system": "你是助手。"},
        {"role": "user", "content": "我的航班是CA1234。", "id": "u1", "ts": at.format(0)},
        {"role": "assistant", "content": "好的。", "id": "a1", "ts": at.format(1)},
        {"system_prompt": "你现在是一位非常详细、啰嗦的旅行顾问，回答要很长。"},
        {"probe": "我的航班？", "expect_ids": ["u1"], "expect_text": ["CA1234"]},
        {"role": "user", "content": "谢谢", "id": "u2", "ts": at.format(2)},
        {"role": "assistant", "content": "不客气。", "id": "a2", "ts": at.format(3)},
        {"probe": "还记得航班吗？", "expect_ids": ["u1"], "expect_text": ["CA1234"]},
        {"system_prompt": "简短回答。"},
        {"probe": "航班号？", "expect_ids": ["u1"], "expect_text": ["CA1234"]}]) + "\n",
        encoding="utf-8")
    db = str(tmp_path / "h.db")
    invoke("sessions", "import", str(source), "sp", "--db", db, "--no-index", code=0)
    exported = tmp_path / "out.jsonl"
    invoke("sessions", "export", "sp", "-o", str(exported), "--db", db, code=0)
    assert exported.read_text(encoding="utf-8").splitlines()[1:] == \
        source.read_text(encoding="utf-8").splitlines()[1:]
    from_file = invoke("eval", str(source), "-s", "buffer", "--json", "--db", db, code=0)
    from_session = invoke("eval", "sp", "-s", "buffer", "--json", "--db", db, code=0)
    tokens = [[p["tokens"] for p in json.loads(out.stdout)["strategies"][0]["eval"]["per_probe"]]
              for out in (from_file, from_session)]
    # The probe above the last line was asked under the long prompt, the one below not.
    assert tokens[0] == tokens[1] and tokens[0][1] > tokens[0][2]
    invoke("sessions", "fork", "sp", "sp2", "--db", db, code=0)
    forked = invoke("sessions", "export", "sp2", "--db", db, code=0)
    assert forked.stdout.splitlines()[1:] == exported.read_text(encoding="utf-8").splitlines()[1:]


def test_a_transcript_piped_in_as_dash_imports_and_replays(tmp_path: Path) -> None:
    support = (Path(__file__).resolve().parents[2] / "sessions" / "support.jsonl")
    piped = support.read_text(encoding="utf-8")
    db = str(tmp_path / "x.db")
    imported = invoke("sessions", "import", "-", "x", "--db", db, input=piped)
    assert imported.exit_code == 0, imported.stderr
    with Store(db) as store:
        assert len(store.history.messages(store.sessions.session("x").id)) == 60
    replayed = invoke("replay", "-", "-s", "window:k=2", "--json", "--provider", "scripted",
                      input=piped)
    assert replayed.exit_code == 0, replayed.stderr
    data = json.loads(replayed.stdout)
    assert data["source"] == "-" and data["turns"] == 30 and data["title"] == "support"
    # Nothing to name the session after: no file name, and a header with no title.
    untitled = invoke("sessions", "import", "-", "--db", db,
                      input='{"role": "user", "content": "你好"}\n')
    assert untitled.exit_code == 2 and "give SESSION" in untitled.stderr
    garbled = invoke("sessions", "import", "-", "y", "--db", db,
                     input=b"\xff")  # type: ignore[arg-type]
    assert garbled.exit_code == 2
    assert garbled.stderr == ("error: standard input:1: not UTF-8 text (byte 0xff); save the "
                              "transcript as UTF-8\n")


def test_export_all_counts_in_words_that_agree_with_the_number(tmp_path: Path) -> None:
    """`0 summary versions and 1 facts`: one of anything is said in the singular."""
    db = str(tmp_path / "h.db")
    invoke("chat", "一个", "--provider", "scripted", "--db", db, input="/remember 名字=安\n你好\n",
           code=0)
    done = invoke("sessions", "export", "--all", "-o", str(tmp_path / "all.zip"), "--db", db,
                  code=0)
    assert done.stderr.startswith("exported 1 session (2 messages), 0 summary versions and "
                                  "1 fact to ")


def test_a_session_s_export_and_import_count_as_every_other_count(tmp_path: Path) -> None:
    """One message is `1 message` (it was `1 messages`), and thousands are grouped as the
    sessions table groups them: `1,200 messages`."""
    db = str(tmp_path / "h.db")
    one = tmp_path / "一.jsonl"
    one.write_text('{"role": "user", "content": "你好"}\n', encoding="utf-8")
    invoke("sessions", "import", str(one), "--db", db, code=0)
    done = invoke("sessions", "export", "一", "-o", str(tmp_path / "一-out.jsonl"), "--db", db,
                  code=0)
    assert done.stderr.startswith("exported 1 message to ")
    big = tmp_path / "大.jsonl"
    big.write_text("".join(json.dumps({"role": role, "content": f"第{n}轮"}, ensure_ascii=False)
                           + "\n" for n in range(600) for role in ("user", "assistant")),
                   encoding="utf-8")
    done = invoke("sessions", "import", str(big), "--db", db, "--no-index", code=0)
    assert done.stderr.splitlines()[0] == "imported 1,200 messages into session 大"
    done = invoke("sessions", "export", "大", "-o", str(tmp_path / "大-out.jsonl"), "--db", db,
                  code=0)
    assert done.stderr.startswith("exported 1,200 messages to ")


def test_a_transcript_is_read_no_further_than_an_archive_s_member(tmp_path: Path) -> None:
    """`sessions import /dev/zero` grew until out of memory (a MemoryError traceback)."""
    db = tmp_path / "x.db"
    big = tmp_path / "大.jsonl"
    with big.open("wb") as f:
        f.truncate(MOST_TRANSCRIPT_BYTES + 1)
    result = invoke("sessions", "import", str(big), "x", "--db", str(db))
    assert (result.exit_code, result.stderr) == (2, (
        f"error: {big}: 67,108,865 bytes; a transcript of at most 67,108,864 bytes is read\n"))
    result = invoke("sessions", "import", "/dev/zero", "x", "--db", str(db))
    assert (result.exit_code, result.stderr) == (2, (
        "error: /dev/zero: more than 67,108,864 bytes; a transcript of at most 67,108,864 "
        "bytes is read\n"))
    root = Path(__file__).resolve().parents[2]
    with open("/dev/zero", "rb") as endless:
        piped = subprocess.run([sys.executable, "-m", "chatmem", "sessions", "import", "-", "x",
                                "--db", str(db)], stdin=endless, capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": str(root)}, timeout=120)
    assert (piped.returncode, piped.stderr) == (2, (
        "error: standard input: more than 67,108,864 bytes; a transcript of at most "
        "67,108,864 bytes is read\n"))
    assert not db.exists()


def test_export_takes_its_file_as_the_chats_export_does(tmp_path: Path) -> None:
    # `/export trip.md` in the chat, `sessions export trip trip.md` the morning after: the
    # second word is the file in both, not "unexpected extra argument".
    db = str(tmp_path / "x.db")
    assert invoke("sessions", "import", str(SESSIONS / "travel-zh.jsonl"), "旅行",
                  "--db", db).exit_code == 0
    out = tmp_path / "旅行.md"
    result = invoke("sessions", "export", "旅行", str(out), "--db", db)
    assert result.exit_code == 0, result.stderr
    assert out.read_text(encoding="utf-8").startswith("# 旅行\n")
    again = invoke("sessions", "export", "旅行", str(out), "--db", db)
    assert again.exit_code == 2 and out.read_text(encoding="utf-8").startswith("# 旅行\n")
    assert invoke("sessions", "export", "旅行", str(out), "--force", "--db", db).exit_code == 0
    other = str(tmp_path / "b.md")
    both = invoke("sessions", "export", "旅行", str(out), "-o", other, "--db", db)
    assert both.exit_code == 2
    assert both.stderr == f"error: two files given: {str(out)!r} and -o {other!r}; give one\n"
    assert not (tmp_path / "b.md").exists()


def test_an_export_says_which_attached_files_it_leaves_out(tmp_path: Path) -> None:
    """A transcript holds no files (README): the invoice a turn attached went to the model,
    but the export wrote only "what is the total?", and said nothing of it."""
    db, invoice = str(tmp_path / "h.db"), tmp_path / "发票.txt"
    invoice.write_text("Total: 42 EUR\n", encoding="utf-8")
    for args in (["你好"], ["what is the total?", "-a", str(invoice)], ["thanks"]):
        invoke("ask", "账单", *args, "--provider", "scripted", "--db", db, code=0)
    said = (f"not in the transcript: 1 file attached to turn 2 ({invoice}): a transcript"
            " holds no files (chatmem sessions copy --to FILE.db copies them)")
    written = invoke("sessions", "export", "账单", "-o", str(tmp_path / "账单.jsonl"),
                     "--db", db, code=0)
    assert written.stderr.splitlines() == ["exported 6 messages to "
                                           f"{tmp_path / '账单.jsonl'} (jsonl)", said]
    shown = invoke("sessions", "export", "账单", "--db", db, code=0)
    assert "Total: 42 EUR" not in shown.stdout and shown.stderr.splitlines() == [said]
    chatted = invoke("chat", "账单", "--provider", "scripted", "--db", db,
                     input=f"/export {tmp_path / 'r.md'}\n", code=0)
    assert said in chatted.stderr.splitlines()
    invoke("ask", "plain", "hi", "--provider", "scripted", "--db", db, code=0)
    assert invoke("sessions", "export", "plain", "--db", db, code=0).stderr == ""


def test_an_export_of_everything_says_which_sessions_attached_files_it_leaves_out(
        tmp_path: Path) -> None:
    """`sessions export --all` wrote the invoice's turn as "what is the total?" and said only
    how many sessions and messages it exported: the file that turn sent was gone unsaid."""
    db, invoice = str(tmp_path / "h.db"), tmp_path / "发票.txt"
    invoice.write_text("Total: 42 EUR\n", encoding="utf-8")
    for args in (["what is the total?", "-a", str(invoice)], ["再看一次", "-a", str(invoice)]):
        invoke("ask", "账单", *args, "--provider", "scripted", "--db", db, code=0)
    invoke("ask", "plain", "hi", "--provider", "scripted", "--db", db, code=0)
    written = invoke("sessions", "export", "--all", "-o", str(tmp_path / "all.zip"),
                     "--db", db, code=0)
    assert written.stderr.splitlines()[-1] == (
        "not in the archive: 2 files attached to turns of 1 session (账单): a transcript"
        " holds no files (chatmem sessions copy --to FILE.db copies them)")
    invoke("sessions", "delete", "账单", "--yes", "--db", db, code=0)
    alone = invoke("sessions", "export", "--all", "-o", str(tmp_path / "plain.zip"),
                   "--db", db, code=0)
    assert "not in the archive" not in alone.stderr
