"""Transcripts: the three formats, line-numbered errors, writing and reading back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmem.errors import TranscriptError
from chatmem.transcripts.format import Probe, Transcript, TranscriptMessage
from chatmem.transcripts.reader import parse_transcript, read_transcript
from chatmem.transcripts.writer import to_jsonl, to_markdown

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"


def jsonl(*lines: object) -> str:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def test_jsonl_with_header_messages_and_probes() -> None:
    text = jsonl(
        {"chatmem": 1, "title": "t", "system": "Be brief."},
        {"role": "user", "content": "我的订单号是 KW-1", "id": "u1", "ts": "2026-01-01T00:00:00Z"},
        {"role": "assistant", "content": "好的"},
        {"probe": "订单号？", "expect_ids": ["u1"], "expect_text": ["KW-1"]},
    )
    t = parse_transcript(text, "x.jsonl")
    assert (t.title, t.system) == ("t", "Be brief.")
    assert t.messages == [
        TranscriptMessage("user", "我的订单号是 KW-1", "u1", "2026-01-01T00:00:00Z", 2),
        TranscriptMessage("assistant", "好的", None, None, 3),
    ]
    assert t.probes == [Probe("订单号？", ("u1",), ("KW-1",), 4)]
    assert t.has_replies() and t.user_turns() == 1


def test_openai_messages_object_takes_the_leading_system_message_as_system_prompt() -> None:
    text = json.dumps({"messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [{"type": "text", "text": "hel"}, {"type": "text",
                                                                       "text": "lo"}]},
        {"role": "assistant", "content": "hi", "name": "bot"},
    ]}, indent=1)
    t = parse_transcript(text, "o.json")
    assert t.system == "You are terse."
    assert [(m.role, m.content) for m in t.messages] == [("user", "hello"), ("assistant", "hi")]


def test_one_rule_for_a_leading_system_message_in_json_lines_and_json() -> None:
    """Without a header it is the system prompt, in JSON Lines as in a JSON list (JSON Lines
    kept it as a message); after a header (chatmem's export, whose own "system" is the
    prompt) or a document's "system" it stays a message."""
    persona = {"role": "system", "content": "你是 Luna。"}
    hello = {"role": "user", "content": "hi"}
    for t in (parse_transcript(jsonl(persona, hello), "g.jsonl"),
              parse_transcript(json.dumps([persona, hello]), "g.json")):
        assert t.system == "你是 Luna。" and [m.role for m in t.messages] == ["user"]
    for t in (parse_transcript(jsonl({"chatmem": 1, "system": "Be brief."}, persona, hello),
                               "h.jsonl"),
              parse_transcript(json.dumps({"chatmem": 1, "system": "Be brief.",
                                           "messages": [persona, hello]}), "h.json"),
              parse_transcript(json.dumps({"system": "Be brief.",
                                           "messages": [persona, hello]}), "o.json")):
        assert t.system == "Be brief." and [m.role for m in t.messages] == ["system", "user"]
    bare_header = parse_transcript(jsonl({"chatmem": 1}, persona, hello), "e.jsonl")
    assert bare_header.system is None
    assert [m.role for m in bare_header.messages] == ["system", "user"]


def test_plain_json_list_and_its_error_lines() -> None:
    good = parse_transcript('[{"role": "user", "content": "a"},\n {"role": "assistant",'
                            ' "content": "b"}]', "l.json")
    assert [m.line for m in good.messages] == [1, 2]
    bad = '[\n  {"role": "user", "content": "a"},\n\n  {"role": "robot", "content": "b"}\n]'
    with pytest.raises(TranscriptError) as e:
        parse_transcript(bad, "l.json")
    assert str(e.value) == ("l.json:4: role must be user, assistant, system or developer"
                            " (got 'robot')")


@pytest.mark.parametrize(("line", "message"), [
    ({"role": "bot", "content": "x"}, "x.jsonl:3: role must be user, assistant, system or "
                                      "developer (got 'bot')"),
    ({"content": "x"}, "x.jsonl:3: role must be user, assistant, system or developer (got "
                       "missing)"),
    ({"role": "user"}, "x.jsonl:3: message has no content"),
    ({"role": "user", "content": 5}, "x.jsonl:3: content must be a string"),
    ({"role": "user", "content": "x", "id": "u1"}, "x.jsonl:3: id 'u1' is used twice"),
    ({"probe": "q", "expect_ids": ["nope"]},
     "x.jsonl:3: expect_ids 'nope' names no message before this probe"),
    ({"probe": "q"}, "x.jsonl:3: probe needs expect_ids or expect_text"),
    # Read as a message: "role must be user, assistant, system or developer (got missing)".
    ({"expect_ids": ["u1"], "expect_text": ["李雷"]},
     'x.jsonl:3: a probe line needs "probe", the question to ask'),
    ({"probe": "q", "expect_text": "x"}, "x.jsonl:3: expect_text must be a list of strings"),
    # "" is in every context and a repeat counts twice: either would be recall never had.
    ({"probe": "q", "expect_text": ["", "李雷"]},
     "x.jsonl:3: expect_text holds an empty string ''"),
    ({"probe": "q", "expect_text": [" "]}, "x.jsonl:3: expect_text holds an empty string ' '"),
    ({"probe": "q", "expect_text": ["你好", "你好"]},
     "x.jsonl:3: expect_text names '你好' twice (it would count twice)"),
    ({"probe": "q", "expect_ids": ["u1", "u1"]},
     "x.jsonl:3: expect_ids names 'u1' twice (it would count twice)"),
    # Scoring folds width, case, accents and zero-width characters: judged in that form,
    # a lone mark is blank and a folded variant a repeat.
    ({"probe": "q", "expect_text": ["李雷", "\u200b"]},
     "x.jsonl:3: expect_text holds '\\u200b', nothing once folded (zero-width characters and"
     " accents are not compared)"),
    ({"probe": "q", "expect_text": ["\u0301"]},
     "x.jsonl:3: expect_text holds '\\u0301', nothing once folded (zero-width characters and"
     " accents are not compared)"),
    ({"probe": "q", "expect_text": ["Ada", "李雷", "ada"]},
     "x.jsonl:3: expect_text names 'Ada' and 'ada', the same once case, width and accents"
     " are folded (it would count twice)"),
    ({"probe": "q", "expect_text": ["ORD7731", "ＯＲＤ７７３１"]},
     "x.jsonl:3: expect_text names 'ORD7731' and 'ＯＲＤ７７３１', the same once case, width"
     " and accents are folded (it would count twice)"),
    ({"probe": "q", "expect_text": ["李\u200b雷", "李雷"]},
     "x.jsonl:3: expect_text names '李\\u200b雷' and '李雷', the same once case, width and"
     " accents are folded (it would count twice)"),
    ({"chatmem": 1}, "x.jsonl:3: the chatmem header must be the first line"),
    ([1, 2], "x.jsonl:3: expected a JSON object"),
])
def test_each_bad_line_names_file_and_line(line: object, message: str) -> None:
    text = jsonl({"role": "user", "content": "hi", "id": "u1"}, {"role": "assistant",
                                                                 "content": "yo"}, line)
    with pytest.raises(TranscriptError) as e:
        parse_transcript(text, "x.jsonl")
    assert str(e.value) == message


@pytest.mark.parametrize(("extra", "message"), [
    # A misspelled key left the probe without what it named: exit 0, text recall null.
    ({"expected_text": ["NOT-THERE"]}, "x.jsonl:3: unknown probe key 'expected_text' (a probe"
     " takes probe, expect_ids and expect_text); did you mean 'expect_text'?"),
    ({"expect_id": ["u1"]}, "x.jsonl:3: unknown probe key 'expect_id' (a probe takes probe,"
     " expect_ids and expect_text); did you mean 'expect_ids'?"),
    ({"Expect_Text": ["李雷"]}, "x.jsonl:3: unknown probe key 'Expect_Text' (a probe takes"
     " probe, expect_ids and expect_text); did you mean 'expect_text'?"),
    ({"expectations": ["李雷"]}, "x.jsonl:3: unknown probe key 'expectations' (a probe takes"
     " probe, expect_ids and expect_text)"),
    # Read as a probe, the line's message was dropped.
    ({"role": "user", "content": "我叫李雷"}, "x.jsonl:3: a line is a probe or a message, not"
     " both (it has 'probe' and 'role'); give the probe a line of its own"),
    # true was expected as the text "True".
    ({"expect_text": [True]}, "x.jsonl:3: expect_text must be a list of strings"),
    ({"expect_ids": [False]}, "x.jsonl:3: expect_ids must be a list of strings"),
])
def test_a_probe_key_it_would_go_without_is_refused_naming_it(extra: dict[str, Any],
                                                               message: str) -> None:
    text = jsonl({"role": "user", "content": "hi", "id": "u1"}, {"role": "assistant",
                                                                 "content": "yo"},
                 {"probe": "q?", "expect_ids": ["u1"], **extra})
    with pytest.raises(TranscriptError) as e:
        parse_transcript(text, "x.jsonl")
    assert str(e.value) == message


def test_a_probes_own_labels_are_read_past() -> None:
    """Keys of the writer's own that are no probe key's misspelling group probes (the LoCoMo
    set's `category`, benchmarks/recall_data.py's `kind` and `lang`) and are not scored."""
    text = jsonl({"role": "user", "content": "hi", "id": "u1"},
                 {"probe": "q?", "expect_ids": ["u1"], "category": "temporal", "kind": "single",
                  "lang": "zh", "类别": "时间"})
    assert parse_transcript(text, "x.jsonl").probes == [Probe("q?", ("u1",), (), 2)]


def test_broken_json_on_line_7() -> None:
    lines = [json.dumps({"role": "user" if i % 2 else "assistant", "content": f"m{i}"})
             for i in range(1, 7)]
    text = "\n".join([*lines, '{"role": "user", "content": "unterminated'])
    with pytest.raises(TranscriptError) as e:
        parse_transcript(text, "sessions/x.jsonl")
    assert str(e.value).startswith("sessions/x.jsonl:7: not valid JSON (")


@pytest.mark.parametrize("first", ['{"role":"user"', '{"role": "user", "content": "你好"',
                                   '  {"role": "user", "content": "你好",'])
def test_a_broken_first_line_of_json_lines_is_blamed_not_the_second(first: str) -> None:
    """The whole-document parse ran on into line 2 and named it; line 1 is the broken one."""
    text = first + '\n{"role":"assistant","content":"x"}\n'
    with pytest.raises(TranscriptError) as e:
        parse_transcript(text, "b5.jsonl")
    assert str(e.value).startswith("b5.jsonl:1: not valid JSON (")


def test_a_messages_document_missing_a_comma_is_blamed_where_it_breaks() -> None:
    """One message a line inside {"messages": [...]}: the break is at line 3, not line 1."""
    text = ('{"messages": [\n{"role": "user", "content": "a"}\n'
            '{"role": "assistant", "content": "b"}\n]}')
    with pytest.raises(TranscriptError) as e:
        parse_transcript(text, "doc.json")
    assert str(e.value).startswith("doc.json:3: not valid JSON (Expecting ',' delimiter")


def test_a_messages_document_broken_on_line_57_is_said_to_be_broken_there() -> None:
    """{"messages": [...]} over many lines, as OpenAI's format is often written: the whole
    document's parse names the line (JSON Lines would blame `{"messages": [` on line 1)."""
    lines = ['{"messages": [']
    lines += [json.dumps({"role": "user" if i % 2 else "assistant", "content": f"第{i}条"})
              + "," for i in range(1, 80)]
    lines[56] = '{"role": "user", "content": "broken\there"},'
    lines.append('{"role": "user", "content": "last"}]}')
    with pytest.raises(TranscriptError) as e:
        parse_transcript("\n".join(lines), "doc.json")
    assert str(e.value) == "doc.json:57: not valid JSON (Invalid control character at column 36)"
    jsonl = "\n".join(lines[1:-1]).replace("},", "}")
    with pytest.raises(TranscriptError) as e:
        parse_transcript(jsonl, "doc.jsonl")
    assert str(e.value) == "doc.jsonl:56: not valid JSON (Invalid control character at column 36)"


def test_unsupported_version_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match=r"^h.jsonl:1: transcript format 2 is not supported"):
        parse_transcript(jsonl({"chatmem": 2}), "h.jsonl")
    with pytest.raises(TranscriptError):  # not an OSError: one line, exit 2
        read_transcript(tmp_path / "missing.jsonl")
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TranscriptError, match="not UTF-8 text"):
        read_transcript(binary)
    gbk = tmp_path / "gbk.jsonl"
    gbk.write_bytes(b'{"role": "user", "content": "hi"}\n'
                    + '{"role": "user", "content": "你好"}\n'.encode("gbk"))
    with pytest.raises(TranscriptError) as caught:
        read_transcript(gbk)
    assert str(caught.value) == (f"{gbk}:2: not UTF-8 text (byte 0xc4); save the transcript "
                                 "as UTF-8 (it reads as Chinese in GBK; iconv -f gb18030 -t "
                                 "utf-8 converts it)")


def test_a_transcript_whose_lines_end_in_a_lone_cr_reads(tmp_path: Path) -> None:
    """Classic Mac OS line ends: 'cr.jsonl:1: not valid JSON (Extra data at column 155)'."""
    lines = [{"chatmem": 1, "title": "旧 Mac"}, {"role": "user", "content": "第一行\r\n第二行 hi"},
             {"role": "assistant", "content": "好的"}]
    cr = tmp_path / "cr.jsonl"
    cr.write_bytes("\r".join(json.dumps(line, ensure_ascii=False) for line in lines).encode())
    read = read_transcript(cr)
    assert read.title == "旧 Mac"
    assert [(m.content, m.line) for m in read.messages] == [("第一行\r\n第二行 hi", 2),
                                                            ("好的", 3)]
    document = json.dumps({"messages": lines[1:]}, ensure_ascii=False, indent=1)
    messages = parse_transcript(document.replace("\n", "\r"), "d.json").messages
    assert [(m.content, m.line) for m in messages] == [("第一行\r\n第二行 hi", 3), ("好的", 7)]
    with pytest.raises(TranscriptError) as caught:
        parse_transcript("\r".join([json.dumps(lines[1]), '{"role": "user", "content": }']),
                         "cr.jsonl")
    assert str(caught.value).startswith("cr.jsonl:2: not valid JSON")
    # A byte that is not UTF-8 is named on its line too (third reading: it said line 1).
    cr.write_bytes(b'{"role":"user","content":"a"}\r\n{"role":"assistant","content":"b"}\r'
                   b'{"role":"user","content":"caf\xe9"}\r')
    with pytest.raises(TranscriptError) as caught:
        read_transcript(cr)
    assert str(caught.value).startswith(f"{cr}:3: not UTF-8 text (byte 0xe9)")


message_strategy = st.builds(
    TranscriptMessage,
    role=st.sampled_from(["user", "assistant", "system"]),
    content=st.text(st.characters(blacklist_categories=["Cs"]), max_size=40),
    id=st.none() | st.text("abc123", min_size=1, max_size=6),
    ts=st.none() | st.just("2026-03-09T09:00:00+00:00"),
)


@given(st.lists(message_strategy, max_size=12, unique_by=lambda m: m.id or object()),
       st.none() | st.text(max_size=20), st.none() | st.text(max_size=20))
def test_write_then_read_gives_the_same_transcript(
    messages: list[TranscriptMessage], title: str | None, system: str | None
) -> None:
    original = Transcript(list(messages), title, system, "window", {"k": 3})
    back = parse_transcript(to_jsonl(original), "r.jsonl")
    assert [(m.role, m.content, m.id, m.ts) for m in back.messages] == [
        (m.role, m.content, m.id, m.ts) for m in messages
    ]
    assert (back.title, back.system, back.strategy, back.params) == (title, system, "window",
                                                                      {"k": 3})
    assert to_jsonl(back) == to_jsonl(original)


def test_markdown_export_shows_every_message() -> None:
    t = Transcript([TranscriptMessage("user", "五千元的预算", "u1"),
                    TranscriptMessage("assistant", "明白")], "旅行", "Be brief.")
    text = to_markdown(t)
    assert text.startswith("# 旅行\n")
    assert "### user · `u1`\n\n五千元的预算" in text and "### assistant\n\n明白" in text


def test_markdown_export_writes_times_in_the_zone_given_with_their_offset() -> None:
    """A document is read where its zone is not known: each time in the zone given (the
    timezone setting's), to the minute, with its offset; a time without a zone read as UTC,
    as everywhere else (not left as written beside converted ones); a date alone, and an
    exporter's zero time, as the transcript gave them (that day in every zone)."""
    from zoneinfo import ZoneInfo

    t = Transcript([TranscriptMessage("user", "几点了？", ts="2026-05-04T08:20:31.512+00:00"),
                    TranscriptMessage("assistant", "下午", ts="2026-05-04T16:40:00+08:00"),
                    TranscriptMessage("user", "谢谢", ts="2026-05-04T09:00:00"),
                    TranscriptMessage("assistant", "不客气", ts="2026-05-05"),
                    TranscriptMessage("user", "零", ts="0001-01-01T00:00:00")])
    headings = [line for line in to_markdown(t, ZoneInfo("America/St_Johns")).splitlines()
                if line.startswith("### ")]
    assert headings == ["### user · 2026-05-04 05:50 -02:30",
                        "### assistant · 2026-05-04 06:10 -02:30",
                        "### user · 2026-05-04 06:30 -02:30",
                        "### assistant · 2026-05-05",
                        "### user · 0001-01-01T00:00:00"]


@pytest.mark.parametrize(("name", "turns", "probes"), [
    ("support.jsonl", 30, 6), ("travel-zh.jsonl", 60, 7), ("long-chat.jsonl", 200, 15),
])
def test_sample_sessions_read_cleanly(name: str, turns: int, probes: int) -> None:
    t = read_transcript(SESSIONS / name)
    assert t.user_turns() == turns and len(t.probes) == probes
    by_id = {m.id: m for m in t.messages}
    for probe in t.probes:
        # Every expected text is in one of the expected messages: the probe is answerable.
        for text in probe.expect_text:
            assert any(text.casefold() in by_id[i].content.casefold() for i in probe.expect_ids)


NESTED = """{"metadata": {"messages": [], "source": "export"}, "title": "旅行计划", "messages": [
  {"role": "user", "content": "我们三月十五日出发，预算两万元"},
  {"role": "assistant", "content": "好的，记下了"}
]}
"""


def test_a_messages_key_nested_before_the_top_level_one_is_not_taken_for_it() -> None:
    t = parse_transcript(NESTED, "nested.json")
    assert t.title == "旅行计划"
    assert [(m.content, m.line) for m in t.messages] == [
        ("我们三月十五日出发，预算两万元", 2), ("好的，记下了", 3)]


def test_an_error_after_a_decodable_nested_messages_key_names_its_own_line() -> None:
    text = ('{"meta": {"messages": [{"role": "user", "content": "旧"},\n'
            '                       {"role": "assistant", "content": "旧"}]},\n'
            ' "messages": [\n'
            '  {"role": "user", "content": "你好"},\n\n\n\n'
            '  {"role": "robot", "content": "嗨"}\n]}\n')
    with pytest.raises(TranscriptError) as e:
        parse_transcript(text, "nested3.json")
    assert str(e.value) == ("nested3.json:8: role must be user, assistant, system or developer"
                            " (got 'robot')")


class CountingText(str):
    """Text that adds up how many characters its newline counts scan."""

    scanned = 0

    def count(self, sub: str, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        begin = 0 if start is None else start
        stop = len(self) if end is None else end
        CountingText.scanned += max(0, stop - begin)
        return super().count(sub, begin, stop)


@pytest.mark.parametrize("shape", ["object", "list"])
def test_reading_a_json_document_scans_its_text_for_line_numbers_once(
        shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatmem.transcripts import reader

    messages = [{"role": "user" if i % 2 else "assistant", "content": f"第{i}条消息"}
                for i in range(2000)]
    whole: Any = {"title": "长对话", "messages": messages} if shape == "object" else messages
    text = CountingText(json.dumps(whole, ensure_ascii=False, indent=1))
    monkeypatch.setattr(CountingText, "scanned", 0)
    transcript = reader._parse_json_document(text, whole, "big.json")
    assert len(transcript.messages) == 2000
    # Counting from the start for each element scanned about 2000/2 times the text.
    assert CountingText.scanned <= len(text)


def test_fine_tuning_json_lines_say_what_they_are_and_what_is_read() -> None:
    text = jsonl({"messages": [{"role": "system", "content": "你是助手"},
                               {"role": "user", "content": "你好"},
                               {"role": "assistant", "content": "你好！"}]},
                 {"messages": [{"role": "user", "content": "在吗"},
                               {"role": "assistant", "content": "在"}]})
    with pytest.raises(TranscriptError) as e:
        parse_transcript(text, "ft.jsonl")
    assert str(e.value) == (
        'ft.jsonl:1: a whole {"messages": [...]} conversation on one line (OpenAI fine-tuning'
        ' JSON Lines); chatmem reads one conversation per file: one message per line, or a'
        ' single {"messages": [...]} document')
    # One such line alone is one document, and read.
    assert len(parse_transcript(text.split("\n")[0], "ft1.jsonl").messages) == 2


@pytest.mark.parametrize("times, back", [
    (["2026-03-07", "2026-03-07T09:00:00Z"], None),
    (["2026-03-07T09:00:00Z", "2026-03-07"], None),
    (["2026-03-07T23:30:00+13:00", "2026-03-07"], None),  # 10:30 UTC on the 7th: its day
    (["2026-03-07", "2026-03-07T09:00:00+13:00", "2026-03-07T10:00:00+13:00"], None),
    (["2026-03-07", "20260308", "2026-03-08T00:00:00-10:00"], None),
    (["2026-03-08", "2026-03-07T23:00:00Z"], 1),
    (["2026-03-08T01:00:00+13:00", "2026-03-07"], 1),
    (["2026-03-08", "2026-03-07"], 1),
    (["2026-03-07T20:00:00Z", "2026-03-07", "2026-03-07T09:00:00Z"], 2),
    (["2026-03-07", "2026-03-09T10:00:00Z", "2026-03-08"], 2),
])
def test_a_date_alone_goes_back_only_to_an_earlier_day(times: list[str],
                                                         back: int | None) -> None:
    # A date names a day, not its noon: 2026-03-07 then 09:00 on the 7th is in order.
    transcript = parse_transcript(jsonl(
        *({"role": ("user", "assistant")[i % 2], "content": f"第{i}条", "ts": ts}
          for i, ts in enumerate(times))), "t.jsonl")
    found = transcript.dated_back()
    assert (found and found.content) == (None if back is None else f"第{back}条")
