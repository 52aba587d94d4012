"""Named templates: `-t NAME` on chat and ask, `/template NAME` in the REPL, from the config's
[templates.NAME] or a templates/NAME.toml file (issue 21, Build 5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_runner import invoke

from chatmem.config.loader import load_settings
from chatmem.config.templates import Template, find_template, known_templates
from chatmem.errors import UsageError
from chatmem.store import Store

CONFIG = """
[aliases]
fast = "test-small"

[templates.brief]
system = "Answer in one sentence."
model = "fast"
strategy = "window:k=1"
options = { temperature = 0.2, seed = 7 }
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG, encoding="utf-8")
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "翻译.toml").write_text('system = "把用户的话翻译成英文。"\n'
                                      'options = { top_p = 0.5 }\n', encoding="utf-8")
    return path


def served(server: Any, config: Path, *args: str, input: str = "") -> Any:
    return invoke(*args, "--config", str(config), input=input,
                  env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-x"})


def system_of(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "system")


def test_ask_with_a_template_sends_its_system_model_and_options(config: Path,
                                                                 chat_server) -> None:
    result = served(chat_server, config, "ask", "-t", "brief", "hello", "--json")
    assert result.exit_code == 0, result.stderr
    body = chat_server.requests[-1]
    assert body["model"] == "test-small"  # the template's alias, resolved
    assert body["temperature"] == 0.2 and body["seed"] == 7
    assert system_of(body) == "Answer in one sentence."
    strategy = json.loads(result.stdout)["strategy"]  # the template's strategy
    assert (strategy["name"], strategy["params"]) == ("window", {"k": 1})


def test_flags_win_over_the_template(config: Path, chat_server) -> None:
    result = served(chat_server, config, "ask", "-t", "brief", "hello", "--model", "m2",
                    "-o", "temperature=0.9", "--system", "Be loud.", "-s", "buffer", "--plain")
    assert result.exit_code == 0, result.stderr
    body = chat_server.requests[-1]
    assert body["model"] == "m2" and body["temperature"] == 0.9 and body["seed"] == 7
    assert system_of(body) == "Be loud."


def test_param_flags_win_over_the_templates_strategy(config: Path, tmp_path: Path,
                                                    chat_server) -> None:
    # The template's window:k=1 held over -p k=3: the flag was dropped without a word.
    result = served(chat_server, config, "ask", "-t", "brief", "hello", "-p", "k=3", "--json")
    assert result.exit_code == 0, result.stderr
    strategy = json.loads(result.stdout)["strategy"]
    assert (strategy["name"], strategy["params"]) == ("window", {"k": 3})
    db = tmp_path / "h.db"
    (config.parent / "templates" / "both.toml").write_text(
        'strategy = "window+entity:window.k=1,max_facts=5"\n', encoding="utf-8")
    result = served(chat_server, config, "chat", "notes", "-t", "both", "-p", "window.k=4",
                    "--model", "m", "--db", str(db), input="hello\n")
    assert result.exit_code == 0, result.stderr
    with Store(db) as store:
        session = store.sessions.find_session("notes")
        assert session is not None
        assert session.strategy == "window+entity"
        assert (session.params["window.k"], session.params["entity.max_facts"]) == (4, 5)


def test_a_template_file_beside_the_config_chinese_name(config: Path, chat_server) -> None:
    result = served(chat_server, config, "ask", "-t", "翻译", "你好，世界", "--model", "m",
                    "--plain")
    assert result.exit_code == 0, result.stderr
    body = chat_server.requests[-1]
    assert system_of(body) == "把用户的话翻译成英文。" and body["top_p"] == 0.5


def test_chat_with_a_template_keeps_it_as_the_sessions_own(config: Path, tmp_path: Path,
                                                          chat_server) -> None:
    db = tmp_path / "h.db"
    result = served(chat_server, config, "chat", "notes", "-t", "brief", "--db", str(db),
                    input="hello\n")
    assert result.exit_code == 0, result.stderr
    with Store(db) as store:
        session = store.sessions.find_session("notes")
        assert session is not None
        assert (session.strategy, session.system) == ("window", "Answer in one sentence.")
        assert session.params == {"k": 1}
    assert chat_server.requests[-1]["temperature"] == 0.2


def test_template_in_the_repl_switches_for_the_next_turns(config: Path, tmp_path: Path,
                                                          chat_server) -> None:
    db = tmp_path / "h.db"
    result = served(chat_server, config, "chat", "notes", "--model", "m", "--db", str(db),
                    input="first\n/template brief\nsecond\n/template\n")
    assert result.exit_code == 0, result.stderr
    first, second = chat_server.requests
    assert "temperature" not in first and first["model"] == "m"
    assert second["temperature"] == 0.2 and second["model"] == "test-small"
    assert system_of(second) == "Answer in one sentence."
    with Store(db) as store:
        turns = store.turns.turns(store.sessions.session("notes").id)
    assert [(t.model, t.strategy, t.params) for t in turns][1] == (
        "test-small", "window", {"k": 1})
    assert "templates: brief, 翻译" in result.stderr


def test_an_unknown_template_lists_the_known_ones_and_exits_2(config: Path,
                                                               chat_server) -> None:
    result = served(chat_server, config, "ask", "-t", "brif", "hello")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: no template 'brif' (known: brief, 翻译;")
    assert len(result.stderr.strip().splitlines()) == 1
    assert chat_server.requests == []


def test_an_unknown_template_in_the_repl_keeps_the_chat_going(config: Path, tmp_path: Path,
                                                               chat_server) -> None:
    result = served(chat_server, config, "chat", "n", "--model", "m", "--db",
                    str(tmp_path / "h.db"), input="/template nope\nhello\n")
    assert "no template 'nope' (known: brief, 翻译;" in result.stderr
    assert len(chat_server.requests) == 1


@pytest.mark.parametrize(("text", "named"), [
    ("system = 3\n", "key 'system' must be a string"),
    ("sytem = 'x'\n", "unknown key 'sytem'"),
    ("options = { temperature = 9 }\n", "options.temperature must be between 0 and 2"),
    ("options = { stream = false }\n", "options.stream: chatmem sets stream itself"),
    ("system = \n", "not valid TOML"),
    (b'system = "caf\xe9"\n', ":1: not UTF-8 text (byte 0xe9)"),
    (b"options = " + b"[" * 3000 + b"]" * 3000, "nested too deeply"),
    ("strategy = 'window:k=-3'\n", "key 'strategy': parameter k='-3' of strategy 'window'"),
    ("strategy = 'windw'\n", "key 'strategy': unknown strategy 'windw'"),
])
def test_a_bad_template_file_is_one_line_naming_the_file(config: Path, chat_server,
                                                         text: str | bytes, named: str) -> None:
    path = config.parent / "templates" / "bad.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    result = served(chat_server, config, "ask", "-t", "bad", "hello", "--model", "m")
    assert result.exit_code == 2
    assert named in result.stderr and str(path) in result.stderr
    assert chat_server.requests == []


def test_a_bad_template_in_the_config_is_named_when_the_config_is_read(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[templates.x]\noptions = { top_p = 2 }\n", encoding="utf-8")
    result = invoke("ask", "hi", "--provider", "scripted", "--config", str(path))
    assert result.exit_code == 2
    assert "templates.x" in result.stderr and "top_p must be between 0 and 1" in result.stderr


@pytest.mark.parametrize(("strategy", "said"), [
    ("window:x=2", "unknown parameter 'x' for strategy 'window'"),
    # A typo of a known name; one near none may be an uninstalled plugin's, let be so the
    # commands that need none run (test_plugin_failures).
    ("entiti", "unknown strategy 'entiti'"),
])
def test_a_templates_bad_strategy_is_named_when_the_config_is_read(
        tmp_path: Path, strategy: str, said: str) -> None:
    # It was found only when -t used it, as an unknown strategy naming no template or file.
    path = tmp_path / "c.toml"
    path.write_text(f'[templates.x]\nstrategy = "{strategy}"\n', encoding="utf-8")
    result = invoke("config", "show", "--config", str(path), code=2)
    assert result.stderr.startswith(f"error: {path}: key 'templates.x.strategy': {said}")
    assert len(result.stderr.strip().splitlines()) == 1


def test_templates_in_the_user_config_directory(isolated_home: Path) -> None:
    folder = isolated_home / ".config" / "chatmem" / "templates"
    folder.mkdir(parents=True)
    (folder / "coder.toml").write_text('strategy = "buffer"\n', encoding="utf-8")
    settings = load_settings()
    assert known_templates(settings) == ["coder"]
    assert find_template(settings, "coder") == Template("coder", strategy="buffer")
    with pytest.raises(UsageError, match="known: coder"):
        find_template(settings, "../coder")


def test_a_key_given_as_the_template_s_name_is_not_repeated(tmp_path: Path,
                                                              config: Path) -> None:
    # `-t "$OPENAI_API_KEY"` repeated the key three times: the name, the table and the file
    # to add it as.
    key = "sk-proj-Abc123SECRETxyz7890abcdefghijKLMNOP"
    result = invoke("ask", "hi", "-t", key, "--provider", "scripted",
                    "--db", str(tmp_path / "h.db"), "--config", str(config))
    assert result.exit_code == 2 and "template" in result.stderr
    assert "SECRET" not in result.stdout + result.stderr and "brief" in result.stderr
