"""`chatmem models`, [aliases], `-o KEY=VALUE` and money cost from [prices] (issue 21, Build 6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_runner import invoke

from chatmem.config.options import Cost, Price, Spent, parse_options, price_of
from chatmem.errors import UsageError
from chatmem.render import cost_text
from chatmem.render.logs import spent_parts

PRICED = """
[aliases]
fast = "test-small"
"小" = "test-small"

[prices."test-small"]
input = 0.15
output = 0.60
"""


def config(tmp_path: Path, text: str = PRICED) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def served(server: Any, *args: str, config_path: Path | None = None) -> Any:
    extra = ["--config", str(config_path)] if config_path else []
    return invoke(*args, *extra, env={"OPENAI_BASE_URL": server.base_url,
                                       "OPENAI_API_KEY": "sk-test-key-1234"})


# -- models ------------------------------------------------------------------------


def test_models_lists_what_the_server_serves_with_the_aliases(tmp_path: Path,
                                                             chat_server) -> None:
    result = served(chat_server, "models", config_path=config(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["test-large", "test-small  (alias: fast, 小)"]


def test_models_json(tmp_path: Path, chat_server) -> None:
    result = served(chat_server, "models", "--json", config_path=config(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {
        "command": "models", "provider": "openai", "models": ["test-large", "test-small"],
        "aliases": {"fast": "test-small", "小": "test-small"}}


def test_models_on_a_server_that_refuses_the_key_is_one_line_exit_3ish(chat_server) -> None:
    chat_server.plan = ["401"]
    result = served(chat_server, "models")
    assert result.exit_code != 0
    assert "sk-test-key-1234" not in result.stderr + result.stdout
    assert len(result.stderr.strip().splitlines()) == 1
    assert "refused the API key (401)" in result.stderr


def test_models_shows_control_characters_in_ids_and_names_the_json_keeps_them(
        tmp_path: Path, chat_server) -> None:
    hostile = "gpt\x1b]0;PWNED\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07\u202e"
    chat_server.models = [hostile, "模型"]
    path = config(tmp_path, '[aliases]\n"a\\u001b[2J" = "模型"\nb = "x\\u009b31m"\n')
    result = served(chat_server, "models", config_path=path)
    assert result.exit_code == 0, result.stderr
    assert not any(c in result.stdout for c in "\x1b\x07\x9b\u202e")
    assert result.stdout.splitlines() == [
        "gpt␛]0;PWNED␇␛[2J␛]52;c;cHduZWQ=␇\\u202e", "模型  (alias: a␛[2J)",
        "b → x\\u009b31m  (alias of a model not served here)"]
    data = json.loads(served(chat_server, "models", "--json", config_path=path).stdout)
    assert data["models"] == [hostile, "模型"]
    assert data["aliases"] == {"a\x1b[2J": "模型", "b": "x\x9b31m"}


def test_models_of_the_scripted_provider_is_its_name() -> None:
    result = invoke("models", "--provider", "scripted", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["models"] == ["scripted"]


# -- aliases --------------------------------------------------------------------------


def test_an_alias_names_its_model_in_the_request(tmp_path: Path, chat_server) -> None:
    result = served(chat_server, "ask", "你好", "--model", "小", "--plain",
                    config_path=config(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert chat_server.requests[-1]["model"] == "test-small"


def test_an_alias_in_the_config_must_name_a_model(tmp_path: Path) -> None:
    path = config(tmp_path, '[aliases]\nfast = ""\n')
    result = invoke("ask", "hi", "--provider", "scripted", "--config", str(path))
    assert result.exit_code == 2
    assert "aliases.fast" in result.stderr and str(path) in result.stderr


KEY = "sk-proj-Abc123SECRETxyz7890abcdefghijKLMNOP"


@pytest.mark.parametrize("where", ["--model", "CHATMEM_MODEL", "model", "helper_model"])
def test_the_api_key_given_as_the_model_is_refused_before_it_is_sent_or_stored(
        tmp_path: Path, chat_server, where: str) -> None:
    # `-m "$OPENAI_API_KEY"` (arguments mixed up) was sent as the model, repeated whole in
    # the endpoint's 404 ("answered 404 for model 'sk-…'") and stored as the session's and
    # each turn's model, which logs, sessions list and exports then showed.
    db = tmp_path / "h.db"
    text = f'{where} = "{KEY}"\n' if where in ("model", "helper_model") else ""
    flags = ["--model", KEY] if where == "--model" else []
    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": KEY,
           **({"CHATMEM_MODEL": KEY} if where == "CHATMEM_MODEL" else {})}
    result = invoke("ask", "trip", "你好", *flags, "--db", str(db),
                    "--config", str(config(tmp_path, text)), env=env)
    assert result.exit_code == 2
    assert "SECRET" not in result.stdout + result.stderr and "API key" in result.stderr
    assert where.lstrip("-") in result.stderr
    assert chat_server.requests == [] and not db.exists()


@pytest.mark.parametrize("where", ["session", "CHATMEM_USER", "user"])
def test_the_api_key_given_as_a_session_s_name_or_the_user_is_refused_before_it_is_stored(
        tmp_path: Path, chat_server, where: str) -> None:
    # `ask "$OPENAI_API_KEY" 你好` (the key where the session's name goes) stored the key as
    # the session's name, which `sessions list`, logs and exports then showed; a user set to
    # it was stored as each turn's speaker.
    db = tmp_path / "h.db"
    text = f'user = "{KEY}"\n' if where == "user" else ""
    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": KEY,
           **({"CHATMEM_USER": KEY} if where == "CHATMEM_USER" else {})}
    name = KEY if where == "session" else "trip"
    result = invoke("ask", name, "你好", "--model", "m", "--db", str(db),
                    "--config", str(config(tmp_path, text)), env=env)
    assert result.exit_code == 2
    assert "SECRET" not in result.stdout + result.stderr and "API key" in result.stderr
    assert ("name" if where == "session" else "user") in result.stderr
    assert chat_server.requests == []
    if db.exists():  # nothing of it stored
        assert KEY.encode() not in db.read_bytes()


def test_a_model_that_only_looks_like_a_key_is_still_sent(chat_server) -> None:
    result = served(chat_server, "ask", "hello", "--model", "Meta-Llama-3-8B-Instruct")
    assert result.exit_code == 0, result.stderr
    assert chat_server.requests[-1]["model"] == "Meta-Llama-3-8B-Instruct"


# -- -o KEY=VALUE ---------------------------------------------------------------------


def test_options_reach_the_server_in_the_request_body(chat_server) -> None:
    result = served(chat_server, "ask", "hello", "--model", "m", "-o", "temperature=0.2",
                    "-o", "top_p=0.9", "-o", "seed=7", "-o", "max_reply_tokens=64")
    assert result.exit_code == 0, result.stderr
    body = chat_server.requests[-1]
    assert body["temperature"] == 0.2 and body["top_p"] == 0.9 and body["seed"] == 7
    assert body["max_tokens"] == 64


def test_without_options_the_server_chooses(chat_server) -> None:
    assert served(chat_server, "ask", "hello", "--model", "m").exit_code == 0
    assert not {"temperature", "top_p", "seed"} & set(chat_server.requests[-1])


@pytest.mark.parametrize(("option", "named"), [
    ("temperature=5", "-o temperature must be between 0 and 2, got '5'"),
    ("temperature=warm", "-o temperature must be a number, got 'warm'"),
    ("seed=1.5", "-o seed must be a whole number, got '1.5'"),
    ("max_reply_tokens=0", "-o max_reply_tokens must be between 1 and"),
    ("model=gpt-4o", "-o model: chatmem sets model itself (use -m/--model)"),
    ("max_tokens=9", "-o max_tokens: chatmem sets max_tokens itself (use -o max_reply_tokens)"),
    ("a b=1", "-o a b: not an option name"),
    ("temperature", "-o 'temperature' must be KEY=VALUE"),
    # A tool-calls answer was reported as "sent an empty reply" (serve refuses them too).
    ('tools=[{"type": "function", "function": {"name": "rm"}}]',
     "-o tools: tool calls are not taken as chatmem turns"),
    ("tool_choice=required", "-o tool_choice: tool calls are not taken as chatmem turns"),
    ('functions=[{"name": "rm"}]', "-o functions: tool calls are not taken"),
    ("function_call=auto", "-o function_call: tool calls are not taken"),
])
def test_a_bad_option_is_one_line_naming_it_and_exit_2(chat_server, option: str,
                                                       named: str) -> None:
    result = served(chat_server, "ask", "hello", "--model", "m", "-o", option)
    assert result.exit_code == 2
    assert named in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert chat_server.requests == []  # nothing was sent


def test_acceptance_short_model_flag_and_llms_option_form_over_http(chat_server) -> None:
    # Issue 30, finding 6: llm's `-m MODEL` and `-o KEY VALUE` (only --model and -o k=v
    # worked); the request the server received carries both.
    result = served(chat_server, "ask", "-m", "test-large", "-o", "temperature", "0.2", "hi")
    assert result.exit_code == 0, result.stderr
    body = chat_server.requests[-1]
    assert (body["model"], body["temperature"]) == ("test-large", 0.2)
    assert body["messages"][-1] == {"role": "user", "content": "hi"}


def test_an_option_chatmem_does_not_know_reaches_the_endpoint_as_a_body_field(
        chat_server) -> None:
    result = served(chat_server, "ask", "hello", "-m", "m", "-o", "top_k", "40",
                    "-o", "repeat_penalty=1.1", "-o", "stop", '["\\n\\n"]',
                    "-o", "mirostat_mode", "off", "-o", "temperature", "0.5")
    assert result.exit_code == 0, result.stderr
    body = chat_server.requests[-1]
    assert body["top_k"] == 40 and body["repeat_penalty"] == 1.1
    assert body["stop"] == ["\n\n"] and body["mirostat_mode"] == "off"
    assert body["temperature"] == 0.5
    assert body["messages"][-1]["content"] == "hello"  # no option word became the question


def test_a_known_option_in_the_two_word_form_is_still_checked(chat_server) -> None:
    result = served(chat_server, "ask", "hello", "-m", "m", "-o", "top_k", "-3")
    assert result.exit_code == 2
    assert "-o top_k must be between 0 and 1e+06, got '-3'" in result.stderr
    assert chat_server.requests == []


def test_two_word_options_only_join_for_chat_and_ask(tmp_path: Path) -> None:
    from chatmem.cli.options import joined_model_options

    assert joined_model_options(["ask", "-o", "seed", "7", "hi"]) == ["ask", "-o", "seed=7",
                                                                     "hi"]
    assert joined_model_options(["chat", "s", "--option", "a=1", "-o", "b", "2"]) == [
        "chat", "s", "--option", "a=1", "-o", "b=2"]
    assert joined_model_options(["ask", "--", "-o", "a", "b"]) == ["ask", "--", "-o", "a", "b"]
    # sessions export's -o is its output file.
    assert joined_model_options(["sessions", "export", "x", "-o", "f", "g"]) == [
        "sessions", "export", "x", "-o", "f", "g"]


def test_parse_options_types_the_values() -> None:
    assert parse_options(["temperature=1", "seed=3", "top_p=0.5"]) == {
        "temperature": 1.0, "seed": 3, "top_p": 0.5}
    assert isinstance(parse_options(["temperature=1"])["temperature"], float)
    with pytest.raises(UsageError):
        parse_options(["top_p=nan"])


# -- cost -----------------------------------------------------------------------------


def test_the_token_line_shows_the_cost_of_a_priced_model(tmp_path: Path, chat_server) -> None:
    result = served(chat_server, "ask", "hello", "--model", "fast", "--plain",
                    config_path=config(tmp_path))
    assert result.exit_code == 0, result.stderr
    # The server reported 6 prompt tokens and 5 of reply: (6 × 0.15 + 5 × 0.60) / 10⁶.
    line = next(line for line in result.stderr.splitlines() if "tokens" in line)
    assert "(provider reported 6) · $0.0000039 ·" in line


def test_no_price_no_cost(chat_server) -> None:
    result = served(chat_server, "ask", "hello", "--model", "test-small", "--plain")
    assert result.exit_code == 0, result.stderr
    assert "$" not in result.stderr


def test_price_arithmetic_is_per_million_tokens() -> None:
    price = price_of({"m": {"input": 0.15, "output": 0.60}}, "m")
    assert price == Price(0.15, 0.60)
    assert price.cost(1_000_000, 500_000) == Cost(0.45)
    assert price_of({"m": {"input": 1, "output": 2}}, "other") is None
    assert cost_text(Cost(0.45)) == "$0.45"
    assert cost_text(Cost(0.000123)) == "$0.000123"
    assert cost_text(Cost(3, "¥")) == "¥3.00"
    assert cost_text(Cost(0.0)) == "$0.00"
    assert cost_text(Cost(1234.5)) == "$1,234.50"


def test_the_running_total_adds_tokens_and_cost() -> None:
    spent = Spent().plus(1000, 200, Price(1.0, 2.0)).plus(500, 100, Price(1.0, 2.0))
    assert spent.tokens == 1800
    assert len(spent.costs) == 1 and spent.costs[0].amount == pytest.approx(0.0021)
    assert spent_parts(spent) == ("total 1,800 tokens", "$0.0021")
    unpriced = spent.plus(10, 0, None)
    assert unpriced.unpriced and spent_parts(unpriced) == ("total 1,810 tokens", "$0.0021+")
    assert spent_parts(Spent().plus(10, 5, None)) == ("total 15 tokens", None)


def test_a_total_in_two_currencies_keeps_one_sum_per_currency() -> None:
    """$19 and €35 were shown as €54.00: the second currency took over the first's sum."""
    yuan, dollar = Price(1_000_000.0, 0.0, "¥"), Price(1_000_000.0, 0.0, "$")
    spent = Spent().plus(19, 0, yuan).plus(35, 0, dollar).plus(1, 0, yuan)
    assert spent.costs == (Cost(20.0, "¥"), Cost(35.0, "$"))
    assert spent_parts(spent) == ("total 55 tokens", "¥20.00 + $35.00")
    assert spent_parts(spent.plus(4, 0, None)) == ("total 59 tokens", "¥20.00 + $35.00+")
    with pytest.raises(ValueError, match="cannot add"):
        Cost(1.0, "¥") + Cost(1.0, "$")


@pytest.mark.parametrize(("text", "named"), [
    ('[prices."m"]\ninput = -1\noutput = 1\n', "prices.\"m\".input' must be a number of 0"),
    ('[prices."m"]\ninput = 1\n', "lacks output"),
    ('[prices."m"]\ninput = 1\noutput = 1\nouput = 2\n', "unknown key 'prices.\"m\".ouput'"),
    ('prices = 3\n', "key 'prices' must be a table"),
])
def test_a_bad_price_is_one_line_naming_the_key(tmp_path: Path, text: str, named: str) -> None:
    path = config(tmp_path, text)
    result = invoke("ask", "hi", "--provider", "scripted", "--config", str(path))
    assert result.exit_code == 2
    assert named in result.stderr


def test_chat_options_and_a_model_alias_in_the_repl(tmp_path: Path, chat_server) -> None:
    result = invoke("chat", "c", "--model", "m", "-o", "temperature=0.2", "--db",
                    str(tmp_path / "h.db"), "--config", str(config(tmp_path)),
                    input="hello\n/model 小\n再说一次\n",
                    env={"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-x"})
    assert result.exit_code == 0, result.stderr
    first, second = chat_server.requests
    assert (first["model"], first["temperature"]) == ("m", 0.2)
    assert second["model"] == "test-small"  # the alias, resolved by /model
    assert "$" in result.stderr.splitlines()[-1]  # test-small is priced: its turn shows cost


def test_models_of_the_local_provider_names_its_file_without_starting_it(
        tmp_path: Path) -> None:
    model = tmp_path / "tiny-model.gguf"
    model.write_bytes(b"GGUF")  # never loaded: listing reads no model
    path = config(tmp_path, f'provider = "local"\n[local]\nmodel_path = "{model}"\n')
    result = invoke("models", "--json", "--config", str(path))
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["models"] == ["tiny-model"]
