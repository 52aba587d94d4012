"""The user's own API key (or history key) typed into a turn is neither sent nor stored.

Attack, stop 62: `chatmem ask k "my key is $OPENAI_API_KEY"` stored the key as typed in
`messages` and `turns`, though README says the key never reaches the database and the same
key in a reply is masked `[api key]`.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cli_runner import chat, invoke
from conftest import needs_sqlcipher

from chatmem.app import Workspace
from chatmem.app.conversations import record_on, recording_engine
from chatmem.config.settings import Settings
from chatmem.notices import CredentialInInput
from chatmem.store import Store

KEY = "sk-test-TYPED-9f8e7d6c5b4a3210"
HISTORY_KEY = "correct-horse-battery-staple-42"
SAID = {"en": ("my key is {key}, keep it", "my key is [api key], keep it"),
        "zh": ("我的密钥是{key}，请记住", "我的密钥是[api key]，请记住")}


def no_byte_of(secrets: list[str], where: Path) -> None:
    for path in where.rglob("*"):
        if path.is_file():
            for secret in secrets:
                assert secret.encode() not in path.read_bytes(), (path, secret)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_api_key_typed_into_a_turn_is_masked_in_what_is_sent_and_stored(
        tmp_path: Path, chat_server, language: str) -> None:
    db = tmp_path / "k.db"
    typed, masked = SAID[language]
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": chat_server.base_url, "CHATMEM_KEY": None}
    result = invoke("ask", "k", typed.format(key=KEY), "--db", str(db), "--provider", "openai",
                    "-m", "m1", env=env, code=0)
    assert "the input held your api key; it was replaced by [api key]" in result.stderr
    assert KEY not in result.output
    # What the model read is what inspect shows: the masked input.
    assert chat_server.requests[0]["messages"][-1]["content"] == masked
    with Store(db) as store:
        sid = store.sessions.session("k").id
        assert store.history.messages(sid)[0].content == masked
        assert store.turns.turns(sid)[0].input == masked
    no_byte_of([KEY, base64.b64encode(KEY.encode()).decode()], tmp_path)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_recorded_turn_masks_the_keys_in_its_input_and_its_reply(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, language: str) -> None:
    """MCP record_turn (and replay, eval's recorded turns): the input and the recorded reply
    hold the API key and the history key; neither is stored."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("CHATMEM_KEY", HISTORY_KEY)
    typed, masked = SAID[language]
    db = tmp_path / "r.db"
    with Workspace(Settings(db=str(db), provider="scripted"), create=True) as ws:
        engine = recording_engine(ws, "对话")
        try:
            result = record_on(engine, typed.format(key=KEY),
                               f"ok: {KEY} / {HISTORY_KEY}")
        finally:
            engine.finish()
        assert result.notices[0] == CredentialInInput(("[api key]", "[history key]"))
        sid = ws.store.sessions.session("对话").id
        assert [m.content for m in ws.store.history.messages(sid)] == [
            masked, "ok: [api key] / [history key]"]
    no_byte_of([KEY, HISTORY_KEY], tmp_path)


def test_a_placeholder_key_is_not_masked_in_what_the_user_types(
        tmp_path: Path, chat_server) -> None:
    """A local server's placeholder key (`ollama`, `EMPTY`) is a word: the user's stays."""
    db = tmp_path / "p.db"
    env = {"OPENAI_API_KEY": "ollama", "OPENAI_BASE_URL": chat_server.base_url,
           "CHATMEM_KEY": None}
    result = invoke("ask", "p", "I run ollama locally", "--db", str(db), "--provider", "openai",
                    "-m", "m1", env=env, code=0)
    assert "replaced" not in result.stderr
    with Store(db) as store:
        sid = store.sessions.session("p").id
        assert store.history.messages(sid)[0].content == "I run ollama locally"


def _imported_with_the_key(tmp_path: Path, lines: list[dict[str, object]]) -> Path:
    """`lines` imported as session 导入 with $OPENAI_API_KEY set: the masking notice said, the
    transcript then deleted (so no byte of the key is left but what chatmem stored)."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n"
                                  for line in lines), encoding="utf-8")
    db = tmp_path / "i.db"
    result = invoke("sessions", "import", str(transcript), "导入", "--db", str(db),
                    env={"OPENAI_API_KEY": KEY, "CHATMEM_KEY": None}, code=0)
    assert "the input held your api key; it was replaced by [api key]" in result.stderr
    transcript.unlink()
    return db


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_imported_transcript_holding_the_key_is_stored_masked(
        tmp_path: Path, language: str) -> None:
    """A chat exported elsewhere with the key pasted in, imported here: the key is no more
    stored than it is from a turn typed here."""
    typed, masked = SAID[language]
    db = _imported_with_the_key(tmp_path, [{"role": "user", "content": typed.format(key=KEY)},
                                           {"role": "assistant", "content": f"收到 {KEY}"}])
    with Store(db) as store:
        sid = store.sessions.session("导入").id
        assert [m.content for m in store.history.messages(sid)] == [masked, "收到 [api key]"]
    no_byte_of([KEY], tmp_path)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_imported_transcript_s_system_prompts_holding_the_key_are_stored_masked(
        tmp_path: Path, language: str) -> None:
    """Its header's system prompt and one changed in the middle: stored in session_prompts,
    sent with the turns after them."""
    typed, masked = SAID[language]
    db = _imported_with_the_key(tmp_path, [
        {"chatmem": 1, "system": typed.format(key=KEY)},
        {"role": "user", "content": "你好"}, {"role": "assistant", "content": "好"},
        {"system_prompt": f"now: {typed.format(key=KEY)}"},
        {"role": "user", "content": "again"}, {"role": "assistant", "content": "ok"}])
    with Store(db) as store:
        session = store.sessions.session("导入")
        assert store.sessions.system_prompts(session.id) == [(1, masked), (2, f"now: {masked}")]
        assert session.system == f"now: {masked}"
    no_byte_of([KEY], tmp_path)


def test_an_imported_transcript_s_title_and_user_holding_the_key_are_stored_masked(
        tmp_path: Path) -> None:
    """attack69: its messages were masked, not its title (the session's name is made from
    it) nor its user (the profile it is filed under, which its export writes back)."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [
        {"chatmem": 1, "title": f"调试 {KEY}", "user": f"ann {KEY}"},
        {"role": "user", "content": "你好"}]), encoding="utf-8")
    db = tmp_path / "i.db"
    result = invoke("sessions", "import", str(transcript), "--db", str(db),
                    env={"OPENAI_API_KEY": KEY, "CHATMEM_KEY": None}, code=0)
    assert KEY not in result.output
    transcript.unlink()
    with Store(db) as store:
        [listed] = store.sessions.list_sessions()
        session = store.sessions.session(listed.name)
        assert session.user == "ann [api key]"
        assert KEY not in session.name and "api-key" in session.name
    out = invoke("sessions", "export", session.name, "--format", "jsonl", "--db", str(db),
                 code=0).stdout
    assert KEY not in out and json.loads(out.splitlines()[0])["user"] == "ann [api key]"
    no_byte_of([KEY], tmp_path)


@pytest.mark.parametrize("what_if", [[], ["--strategy", "tokens"]], ids=["next", "what-if"])
def test_inspect_shows_the_input_masked_as_a_turn_sends_it(
        tmp_path: Path, what_if: list[str]) -> None:
    db = tmp_path / "n.db"
    env = {"OPENAI_API_KEY": KEY, "CHATMEM_KEY": None}
    invoke("ask", "n", "你好", "--db", str(db), "--provider", "scripted", env=env, code=0)
    shown = invoke("inspect", "n", "--next", f"钥匙 {KEY} 在这", *what_if, "--db", str(db),
                   "--json", env=env, code=0)
    assert KEY not in shown.output
    seen = json.loads(shown.stdout)
    assert seen["input"] == seen["messages"][-1]["content"] == "钥匙 [api key] 在这"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_api_key_in_a_system_prompt_given_is_masked_in_what_is_sent_and_stored(
        tmp_path: Path, chat_server, monkeypatch: pytest.MonkeyPatch, language: str) -> None:
    """`--system`, the REPL's /system and a served request's own system messages are sent
    and stored as a turn's input is: `ask x hi --system "my key $K"` stored the key as typed
    in the session's system prompt (final reading, stop 62)."""
    db = tmp_path / "s.db"
    typed, masked = SAID[language]
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": chat_server.base_url, "CHATMEM_KEY": None}
    result = invoke("ask", "s", "hi", "--system", typed.format(key=KEY), "--db", str(db),
                    "--provider", "openai", "-m", "m1", env=env, code=0)
    assert "the system prompt held your api key; it was replaced by [api key]" in result.stderr
    assert chat_server.requests[0]["messages"][0] == {"role": "system", "content": masked}
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with Workspace(Settings(db=str(db), provider="scripted")) as ws:
        assert ws.store.sessions.session("s").system == masked
        engine = recording_engine(ws, "s")
        try:
            engine.use_system(typed.format(key=KEY))  # a served request's own
            assert engine.system_prompt == masked
            engine.set_system(f"{typed.format(key=KEY)}!")  # /system
            assert engine.session.system == f"{masked}!"
        finally:
            engine.finish()
    no_byte_of([KEY, base64.b64encode(KEY.encode()).decode()], tmp_path)


@pytest.mark.parametrize("where", ["CHATMEM_SYSTEM", "config"])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_api_key_in_the_configured_system_prompt_is_masked_in_what_is_sent_and_stored(
        tmp_path: Path, chat_server, language: str, where: str) -> None:
    """`--system` was masked, the configured one a new session starts with (`system = …` in
    the config, $CHATMEM_SYSTEM) not: sent to the model and stored in the session, its
    prompts and each turn's context as written (attack69)."""
    db, config = tmp_path / "history" / "s.db", tmp_path / "config.toml"
    db.parent.mkdir()
    typed, masked = SAID[language]
    config.write_text(f"system = {json.dumps(typed.format(key=KEY), ensure_ascii=False)}\n"
                      if where == "config" else "", encoding="utf-8")
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": chat_server.base_url, "CHATMEM_KEY": None,
           **({"CHATMEM_SYSTEM": typed.format(key=KEY)} if where != "config" else {})}
    result = invoke("ask", "s", "hi", "--db", str(db), "--config", str(config),
                    "--provider", "openai", "-m", "m1", env=env, code=0)
    assert "the system prompt held your api key; it was replaced by [api key]" in result.stderr
    assert chat_server.requests[0]["messages"][0] == {"role": "system", "content": masked}
    with Store(db) as store:
        assert store.sessions.session("s").system == masked
    no_byte_of([KEY, base64.b64encode(KEY.encode()).decode()], db.parent)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_api_key_in_an_attached_file_is_masked_in_what_is_sent_and_stored(
        tmp_path: Path, chat_server, language: str) -> None:
    """A file holding the key (a .env, a config pasted in) attached to a turn: sent and
    stored as the input is, the key replaced (stop 62's late pass left attachments)."""
    typed, masked = SAID[language]
    attached = tmp_path / "notes.txt"
    attached.write_text(f"OPENAI_API_KEY={KEY}\n{typed.format(key=KEY)}\n", encoding="utf-8")
    db = tmp_path / "data" / "a.db"
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": chat_server.base_url, "CHATMEM_KEY": None}
    result = invoke("ask", "a", "see the file", "-a", str(attached), "--db", str(db),
                    "--provider", "openai", "-m", "m1", env=env, code=0)
    assert "the input held your api key; it was replaced by [api key]" in result.stderr
    sent = json.dumps(chat_server.requests[0]["messages"], ensure_ascii=False)
    assert KEY not in sent
    assert "OPENAI_API_KEY=[api key]" in sent and masked in sent
    attached.unlink()
    no_byte_of([KEY, base64.b64encode(KEY.encode()).decode()], tmp_path)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_api_key_remembered_as_a_fact_is_stored_masked(tmp_path: Path,
                                                             language: str) -> None:
    """The REPL's /remember (and an MCP client's remember tool: app.facts.remember) stored
    the key as typed, in the facts table and in the facts block every later turn sends:
    `/remember api: $K` (attack, stop 63)."""
    typed, _ = SAID[language]
    db = tmp_path / "r.db"
    env = {"OPENAI_API_KEY": KEY, "CHATMEM_KEY": None}
    result = chat(db, "f", [f"/remember api: {KEY}", f"/remember --user {typed.format(key=KEY)}",
                            "hello"], "-s", "entity", env=env, code=0)
    assert KEY not in result.output + result.stderr
    listed = invoke("facts", "list", "--db", str(db), "--json", code=0)
    values = sorted(f["value"] for f in json.loads(listed.stdout))
    assert values == ["[api key]", "[api key]"]  # api, and the key the statement names
    shown = invoke("inspect", "f", "--db", str(db), "--json", code=0)
    assert "[api key]" in shown.stdout and KEY not in shown.stdout
    no_byte_of([KEY, base64.b64encode(KEY.encode()).decode()], tmp_path)


@needs_sqlcipher
@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_history_key_from_key_command_typed_into_a_turn_is_masked(
        tmp_path: Path, language: str) -> None:
    """The key of an encrypted history that key_command gave (no $CHATMEM_KEY) was stored and
    sent as typed in a turn, a system prompt and an import: only $CHATMEM_KEY was masked."""
    db, config = tmp_path / "h.db", tmp_path / "config.toml"
    Store(db, key=HISTORY_KEY).close()
    config.write_text(f"key_command = {f'printf %s {HISTORY_KEY}'!r}\n", encoding="utf-8")
    typed = {"en": "the history key is {key}", "zh": "历史的钥匙是{key}"}[language]
    env = {"CHATMEM_CONFIG": str(config), "CHATMEM_KEY": None, "OPENAI_API_KEY": None}
    result = invoke("ask", "钥", typed.format(key=HISTORY_KEY), "--db", str(db),
                    "--provider", "scripted", "--system", f"k {HISTORY_KEY}", env=env, code=0)
    assert "held your history key; it was replaced by [history key]" in result.stderr
    assert HISTORY_KEY not in result.output
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"role": "user", "content": typed.format(
        key=HISTORY_KEY)}, ensure_ascii=False) + "\n", encoding="utf-8")
    invoke("sessions", "import", str(transcript), "导入", "--db", str(db), env=env, code=0)
    with Store(db, key=HISTORY_KEY) as store:
        for name in ("钥", "导入"):
            session = store.sessions.session(name)
            contents = [m.content for m in store.history.messages(session.id)]
            assert contents[0] == typed.format(key="[history key]"), contents
            assert HISTORY_KEY not in "".join([*contents, session.system or ""])
        assert store.sessions.session("钥").system == "k [history key]"


@needs_sqlcipher
@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_history_key_from_key_command_remembered_as_a_fact_is_stored_masked(
        tmp_path: Path, language: str) -> None:
    """/remember (app.facts.remember, MCP's remember tool too) masked the settings' keys
    alone: the key key_command opened the history with, remembered, was stored in facts
    and sent with every later turn's facts block, where a turn's input masks it."""
    typed = {"en": "the history key is {key}", "zh": "历史的钥匙是{key}"}[language]
    db, config = tmp_path / "h.db", tmp_path / "config.toml"
    Store(db, key=HISTORY_KEY).close()
    config.write_text(f"key_command = {f'printf %s {HISTORY_KEY}'!r}\n", encoding="utf-8")
    env = {"CHATMEM_CONFIG": str(config), "CHATMEM_KEY": None, "OPENAI_API_KEY": None}
    result = chat(db, "f", [f"/remember hk: {HISTORY_KEY}",
                            f"/remember {typed.format(key=HISTORY_KEY)}", "hello"],
                  "-s", "entity", env=env, code=0)
    assert HISTORY_KEY not in result.output + result.stderr
    with Store(db, key=HISTORY_KEY) as store:
        session = store.sessions.session("f")
        values = [f.value for f in store.facts.facts(session_id=session.id)]
    assert "[history key]" in values and HISTORY_KEY not in "".join(values), values
    # The facts block of the turn after: what was sent.
    shown = invoke("inspect", "f", "--db", str(db), "--json", env=env, code=0)
    assert "[history key]" in shown.stdout and HISTORY_KEY not in shown.stdout


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_transcript_s_probes_holding_the_key_are_masked_in_eval_and_import(
        tmp_path: Path, chat_server, language: str) -> None:
    """A transcript whose probe question and expect_text held the user's API key: `eval
    --answer` sent the question upstream and wrote both to its report; `sessions import`
    stored both in the session's probes."""
    typed, _ = SAID[language]
    question = {"en": "what is my key {key}?", "zh": "我的密钥{key}是什么？"}[language]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in [
        {"role": "user", "content": typed.format(key=KEY), "id": "u1"},
        {"role": "assistant", "content": "ok"},
        {"probe": question.format(key=KEY), "expect_ids": ["u1"], "expect_text": [KEY]},
    ]) + "\n", encoding="utf-8")
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": chat_server.base_url, "CHATMEM_KEY": None}
    report = tmp_path / "r.html"
    result = invoke("eval", str(transcript), "-s", "buffer", "--answer", "--provider",
                    "openai", "-m", "m1", "--report", str(report), "--json",
                    "--db", str(tmp_path / "e.db"), env=env, code=0)
    assert "the input held your api key; it was replaced by [api key]" in result.stderr
    assert KEY not in result.output
    assert chat_server.requests, "the probe was asked"
    assert KEY not in json.dumps(chat_server.requests, ensure_ascii=False)
    db = tmp_path / "i.db"
    invoke("sessions", "import", str(transcript), "导入", "--db", str(db), env=env, code=0)
    transcript.unlink()
    with Store(db) as store:
        [probe] = store.sessions.probes(store.sessions.session("导入").id)
    assert (probe["question"], list(probe["expect_text"])) == (
        question.format(key="[api key]"), ["[api key]"])
    no_byte_of([KEY], tmp_path)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_history_key_typed_base64_or_percent_encoded_is_masked_as_the_api_key_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, language: str) -> None:
    """An API key's base64 and percent-encoded forms were masked in what the user types (and
    in replies), the history key's only as itself: pasted from a Basic header or a URL, it
    was sent and stored."""
    from urllib.parse import quote

    history_key = "历史钥匙+horse/battery=42"
    monkeypatch.setenv("CHATMEM_KEY", history_key)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    forms = [base64.b64encode(history_key.encode()).decode(), quote(history_key, safe="")]
    typed = {"en": "it is {} and {}", "zh": "它是{}和{}"}[language]
    db = tmp_path / "h.db"
    with Workspace(Settings(db=str(db), provider="scripted"), create=True) as ws:
        engine = recording_engine(ws, "钥匙")
        try:
            result = record_on(engine, typed.format(*forms), f"ok: {forms[1]} {forms[0]}")
        finally:
            engine.finish()
        assert result.notices[0] == CredentialInInput(("[history key]",))
        sid = ws.store.sessions.session("钥匙").id
        assert [m.content for m in ws.store.history.messages(sid)] == [
            typed.format("[history key]", "[history key]"),
            "ok: [history key] [history key]"]
