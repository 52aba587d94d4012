"""`scripted`: deterministic replies from a script, then the echo rule; a request log."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from registered import create_provider

from chatmem.config.sections import ScriptedSection
from chatmem.config.settings import Settings
from chatmem.errors import ConfigError
from chatmem.providers.scripted import RULES, ScriptedProvider


def test_echo_rule_and_streamed_words() -> None:
    provider = ScriptedProvider()
    reply = provider.stream([{"role": "user", "content": "我的订单 ORD-7731"}])
    assert list(reply) == ["echo ", "#1: ", "我的订单 ", "ORD-7731"]
    # The reply's tokens as the prompt's are counted, not its four deltas.
    assert reply.usage.completion_tokens == provider.token_counter().count_text(
        "echo #1: 我的订单 ORD-7731") > 4
    assert reply.usage.prompt_tokens == provider.token_counter().count_messages(
        [{"role": "user", "content": "我的订单 ORD-7731"}])
    assert "".join(provider.stream([{"role": "user", "content": "again"}])) == "echo #2: again"


def test_script_file_text_and_jsonl_then_echo(tmp_path: Path) -> None:
    script = tmp_path / "replies.txt"
    script.write_text('first reply\n\n{"reply": "第二个回复"}\n', encoding="utf-8")
    provider = ScriptedProvider(script=script)
    said = ["".join(provider.stream([{"role": "user", "content": f"u{i}"}])) for i in range(3)]
    assert said == ["first reply", "第二个回复", "echo #3: u2"]


def test_bad_script_line_names_file_and_line(tmp_path: Path) -> None:
    script = tmp_path / "replies.jsonl"
    script.write_text('{"reply": "ok"}\n{"text": "wrong key"}\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        ScriptedProvider(script=script)
    assert str(caught.value) == f'{script}:2: expected {{"reply": "..."}} or a line of text'
    with pytest.raises(ConfigError, match=r"missing\.txt: cannot read reply script"):
        ScriptedProvider(script=tmp_path / "missing.txt")


def test_log_records_every_request(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    provider = ScriptedProvider(log_path=log)
    messages = [{"role": "system", "content": "简洁"}, {"role": "user", "content": "hi"}]
    list(provider.stream(messages))
    provider.complete(messages, purpose="some-purpose-without-a-rule")
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert entries == [{"purpose": "chat", "messages": messages},
                       {"purpose": "some-purpose-without-a-rule", "messages": messages}]
    assert "简洁" in log.read_text(encoding="utf-8")  # stored as UTF-8, not escaped


def test_rules_answer_by_purpose(monkeypatch) -> None:
    monkeypatch.setitem(RULES, "test-purpose", lambda messages: f"{len(messages)} messages")
    provider = ScriptedProvider()
    assert provider.complete([{"role": "user", "content": "x"}], purpose="test-purpose") == (
        "1 messages")
    assert provider.calls == 0  # rule answers are not chat replies


def test_created_from_settings_and_environment(tmp_path: Path, monkeypatch) -> None:
    log = tmp_path / "env.jsonl"
    monkeypatch.setenv("CHATMEM_SCRIPTED_LOG", str(log))
    provider = create_provider(Settings(provider="scripted"))
    assert isinstance(provider, ScriptedProvider) and provider.log_path == log
    scripted = ScriptedSection(log=str(tmp_path / "cfg.jsonl"))
    configured = create_provider(Settings(provider="scripted", scripted=scripted))
    assert isinstance(configured, ScriptedProvider)
    assert configured.log_path == tmp_path / "cfg.jsonl"


def test_a_script_is_read_as_every_text_file_is(tmp_path: Path) -> None:
    script = tmp_path / "replies.jsonl"
    script.write_bytes(b"\xef\xbb\xbf" + '{"reply": "带 BOM 的脚本"}\nsecond\n'.encode())
    provider = ScriptedProvider(script=script)
    assert provider.replies == ["带 BOM 的脚本", "second"]

    script.write_bytes(b"first\n" + '{"reply": "国标编码"}\n'.encode("gbk"))
    with pytest.raises(ConfigError) as caught:
        ScriptedProvider(script=script)
    assert str(caught.value) == (f"{script}:2: not UTF-8 text (byte 0xb9); save the reply "
                                 "script as UTF-8 (it reads as Chinese in GBK; iconv -f "
                                 "gb18030 -t utf-8 converts it)")


def test_paths_from_settings_and_environment_expand_the_home_folder(
        isolated_home: Path, monkeypatch) -> None:
    (isolated_home / "replies.txt").write_text("来自家目录\n", encoding="utf-8")
    monkeypatch.setenv("CHATMEM_SCRIPTED_LOG", "~/env.jsonl")
    provider = create_provider(Settings(provider="scripted",
                                        scripted=ScriptedSection(script="~/replies.txt")))
    assert isinstance(provider, ScriptedProvider)
    assert provider.log_path == isolated_home / "env.jsonl"
    assert "".join(provider.stream([{"role": "user", "content": "hi"}])) == "来自家目录"
    assert (isolated_home / "env.jsonl").exists()


def test_the_log_is_its_owners_alone_and_one_it_cannot_write_is_one_error(
        tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    ScriptedProvider(log_path=log).complete([{"role": "user", "content": "我的密码"}])
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    nowhere = tmp_path / "no folder" / "log.jsonl"
    with pytest.raises(ConfigError) as caught:
        ScriptedProvider(log_path=nowhere).complete([{"role": "user", "content": "hi"}])
    assert str(caught.value) == (f"{nowhere}: cannot write the request log: "
                                 "No such file or directory")
