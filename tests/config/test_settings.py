"""Settings: defaults < config file < environment < flags; every mistake named."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_runner import invoke
from registered import REGISTRIES

from chatmem.config.loader import load_settings, read_config_file
from chatmem.config.paths import example_config
from chatmem.config.sections import EmbeddingsSection, LocalSection
from chatmem.config.settings import Settings
from chatmem.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults(tmp_path: Path) -> None:
    settings = load_settings(env={})
    assert settings.provider == "auto" and settings.strategy == "window"
    assert settings.context_budget == 4000 and settings.source is None
    assert settings.params_for("window") == {}


def test_precedence_defaults_file_env_flags(tmp_path: Path) -> None:
    path = write(tmp_path, 'model = "from-file"\nstrategy = "tokens"\nsystem = "file system"\n'
                 'timeout = 12\n[strategies.tokens]\nmax_tokens = 900\n')
    from_file = load_settings(path, env={})
    assert (from_file.model, from_file.strategy, from_file.system) == (
        "from-file", "tokens", "file system")
    assert from_file.timeout == 12 and from_file.params_for("tokens") == {"max_tokens": 900}
    assert from_file.context_budget == 4000  # not in the file: default
    env = {"CHATMEM_MODEL": "from-env", "CHATMEM_SYSTEM": "env system"}
    from_env = load_settings(path, env=env)
    assert (from_env.model, from_env.strategy, from_env.system) == (
        "from-env", "tokens", "env system")
    flags = load_settings(path, env=env, overrides={"model": "from-flag", "system": None})
    assert (flags.model, flags.system) == ("from-flag", "env system")


def test_config_file_from_environment(tmp_path: Path) -> None:
    path = write(tmp_path, 'model = "m"\n')
    assert load_settings(env={"CHATMEM_CONFIG": str(path)}).source == path


def test_base_url_chatmem_variable_wins_over_openai(tmp_path: Path) -> None:
    env = {"OPENAI_BASE_URL": "http://openai-var/v1", "CHATMEM_BASE_URL": "http://chatmem-var/v1"}
    assert load_settings(env=env).base_url == "http://chatmem-var/v1"
    assert load_settings(env={"OPENAI_BASE_URL": "http://o/v1"}).base_url == "http://o/v1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('modle = "x"\n', "unknown key 'modle'; did you mean 'model'?"),
        ('timeout = "soon"\n', "key 'timeout' must be a whole number or a number, got 'soon'"),
        ("max_retries = 1.5\n", "key 'max_retries' must be a whole number, got 1.5"),
        ("max_retries = true\n", "key 'max_retries' must be a whole number, got True"),
        ("[local]\nthreds = 2\n", "unknown key 'local.threds' (valid: model_path, threads, n_ctx)"),
        ('local = "x"\n', "key 'local' must be a table ([local])"),
        # A name a plugin could have is let be (an uninstalled one's), other text is not:
        # test_a_plugin_name_none_provides_is_refused_where_it_is_chosen.
        ('provider = "claude 3"\n',
         "key 'provider' must be one of auto, local, openai, scripted, got 'claude 3'"),
        # A table's name near a strategy's is a typo; its parameters are checked where the
        # strategy is used (tests/cli/test_config_cmd.py).
        ("[strategies.windw]\nk = 3\n",
         "key 'strategies.windw': unknown strategy 'windw' (valid: buffer, window, tokens, "
         "summary, summary-buffer, entity, retrieval); did you mean 'window'?"),
        ('[embeddings]\nprovider = "BERT"\n',
         "key 'embeddings.provider' must be one of auto, local, openai, hash, none, got 'BERT'"),
        ("[embeddings]\nthreads = 0\n", "key 'embeddings.threads' must be at least 1, got 0"),
        ('[embeddings]\ndims = 3\n',
         "unknown key 'embeddings.dims' (valid: provider, model, base_url, api_key_env, threads)"),
    ],
)
def test_bad_config_names_key_and_file(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={}, registered=REGISTRIES)
    assert str(caught.value) == f"{path}: {message}"
    assert caught.value.exit_code == 2


KEY = "sk-proj-Abc123SECRETxyz7890abcdefghijKLMNOP"


@pytest.mark.parametrize("text", [f'timeout = "{KEY}"\n', f'provider = "{KEY}"\n',
                                  f'helper_provider = "{KEY}"\n', f'strategy = "{KEY}"\n',
                                  f'strategy = "{KEY}+window"\n', f'strategy = "window+{KEY}"\n',
                                  f'[embeddings]\nprovider = "{KEY}"\n',
                                  'max_retries = "gsk_8fJ2kLmN0pQrStUvWxYz1234"\n',
                                  f'context_budget = "{KEY.lower()}"\n'])
def test_a_key_pasted_in_the_wrong_setting_is_not_repeated(tmp_path: Path, text: str) -> None:
    # An API key pasted beside api_key_env, in provider or timeout, was repeated whole in
    # the error (a terminal, a CI log): its key is named, its length said, the key never.
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={}, registered=REGISTRIES)
    said = str(caught.value)
    assert caught.value.exit_code == 2 and text.split("=")[0].split("]")[-1].strip() in said
    assert "SECRET" not in said and "secret" not in said and "8fJ2kLmN" not in said
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, ""), env={"CHATMEM_PROVIDER": KEY}, registered=REGISTRIES)
    assert "CHATMEM_PROVIDER" in str(caught.value) and "SECRET" not in str(caught.value)


@pytest.mark.parametrize("name", ["claude-3-5-sonnet-20241022", "Qwen2.5-7B-Instruct", "月亮"])
def test_a_wrong_name_that_is_no_key_is_still_repeated(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, f'timeout = "{name}"\n')
    with pytest.raises(ConfigError, match=re.escape(repr(name))):
        load_settings(path, env={}, registered=REGISTRIES)


def test_unknown_strategy_in_config(tmp_path: Path) -> None:
    path = write(tmp_path, 'strategy = "windw"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={}, registered=REGISTRIES)
    valid = ", ".join(REGISTRIES.strategies.names())
    assert str(caught.value) == (
        f"{path}: key 'strategy': unknown strategy 'windw' (valid: {valid}); "
        "did you mean 'window'?"
    )


def test_a_plugin_name_none_provides_is_refused_where_it_is_chosen(tmp_path: Path) -> None:
    # An uninstalled plugin's names (near no known one) load, so the commands that need
    # none of them run; choosing one names the setting (tests/cli/test_plugin_failures).
    path = write(tmp_path, 'strategy = "anchor"\nprovider = "shout"\n[strategies.anchor]\n'
                           'k = 2\n[embeddings]\nprovider = "letters"\n')
    settings = load_settings(path, env={}, registered=REGISTRIES)
    assert (settings.strategy, settings.provider, settings.embeddings.provider,
            settings.params_for("anchor")) == ("anchor", "shout", "letters", {"k": 2})
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: key 'provider': "
                                          r"unknown provider 'shout' \(valid: "):
        REGISTRIES.provider_entry(settings)
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: key "
                                          r"'embeddings.provider': unknown embedder 'letters'"):
        REGISTRIES.create_embedder("letters", settings)


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    path = write(tmp_path, "x = [\n")
    with pytest.raises(ConfigError, match=rf"^{path}: not valid TOML: "):
        load_settings(path, env={})
    with pytest.raises(ConfigError, match=r"nope\.toml: config file not found$"):
        load_settings(tmp_path / "nope.toml", env={})


def test_a_key_given_as_the_config_file_is_not_repeated() -> None:
    """`--config sk-proj-…` (a key pasted after the wrong flag) was echoed whole in the error,
    to the screen, a log or a CI run, where --provider and --model say only its length."""
    key = "sk-proj-Abcdefghij1234567890KLMNOPQRST"
    result = invoke("sessions", "list", "--config", key)
    assert result.exit_code != 0
    assert key not in result.output
    assert result.stderr == (
        "error: (a key of 38 characters): config file not found; that reads as an API key,"
        " which goes in $OPENAI_API_KEY (or the variable api_key_env names), not --config\n")
    from_env = invoke("sessions", "list", env={"CHATMEM_CONFIG": key})
    assert key not in from_env.output and from_env.stderr.endswith("not CHATMEM_CONFIG\n")


def test_a_config_saved_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    # Notepad's "UTF-8 with BOM": tomllib alone read the mark as a statement.
    path = tmp_path / "config.toml"
    path.write_bytes(b"\xef\xbb\xbf" + 'model = "qwen-长"\nstrategy = "window"\n'.encode())
    settings = load_settings(path, env={}, registered=REGISTRIES)
    assert (settings.model, settings.strategy) == ("qwen-长", "window")
    path.write_bytes(b"\xef\xbb\xbfmodel = \n")
    # Its columns are the text's, the mark not counted.
    with pytest.raises(ConfigError, match=rf"^{path}: not valid TOML: .*\(at line 1, column 9\)$"):
        load_settings(path, env={})


def test_bad_provider_from_environment() -> None:
    with pytest.raises(ConfigError, match="CHATMEM_PROVIDER must be one of"):
        load_settings(env={"CHATMEM_PROVIDER": "Claude"}, registered=REGISTRIES)


@pytest.mark.parametrize(("value", "said"), [
    ("No such", "unknown strategy 'No such'"),
    ("window:x=1", "unknown parameter 'x' for strategy 'window'"),
    ("window:k=-1", "parameter k='-1' of strategy 'window' must be at least 0"),
    (" ", "unknown strategy ''"),
])
def test_bad_strategy_from_environment_is_named_where_it_is_read(
        tmp_path: Path, value: str, said: str) -> None:
    # As the file's strategy is: config show said 'env CHATMEM_STRATEGY' beside it, exit 0,
    # and a chat failed on it later naming no variable.
    with pytest.raises(ConfigError, match=rf"^CHATMEM_STRATEGY: {re.escape(said)}"):
        load_settings(env={"CHATMEM_STRATEGY": value}, registered=REGISTRIES)
    result = invoke("config", "show", env={"CHATMEM_STRATEGY": value}, code=2)
    assert result.stderr.startswith("error: CHATMEM_STRATEGY: ")
    # The file's table fills what the variable leaves out, as it does for the file's key.
    path = write(tmp_path, "[strategies.window]\nk = 3\n")
    settings = load_settings(path, env={"CHATMEM_STRATEGY": "window"}, registered=REGISTRIES)
    assert (settings.strategy, settings.params_for("window")) == ("window", {"k": 3})


def test_parameters_given_with_the_strategy_are_named_by_its_source(tmp_path: Path) -> None:
    # config show said 'file' for the variable's k=2 (the table it overrode) and nothing
    # (a default) for the file's own strategy = "window:k=3".
    path = write(tmp_path, "[strategies.window]\nk = 5\n")
    result = invoke("config", "show", "--json", "--config", str(path),
                    env={"CHATMEM_STRATEGY": "window:k=2"}, code=0)
    shown = json.loads(result.stdout)
    assert shown["strategies"]["window"] == {"k": "2"}
    assert shown["sources"]["strategies.window.k"] == "env CHATMEM_STRATEGY"
    path = write(tmp_path, 'strategy = "window+entity:window.k=3"\n')
    settings = load_settings(path, env={}, registered=REGISTRIES)
    assert settings.source_of("strategies.window+entity.window.k") == settings.source_of(
        "strategy") != settings.source_of("strategies.window.k")
    assert str(settings.source_of("strategy")) == str(path)


@pytest.mark.parametrize("way", ["file", "env", "flag"])
def test_a_helper_model_not_found_is_named_by_where_it_was_set(tmp_path: Path,
                                                               way: str) -> None:
    # The message named the chat model's source: a config's helper_model was '(default)'.
    path = write(tmp_path, 'helper_provider = "local"\n' + (
        'helper_model = "nowhere.gguf"\n' if way == "file" else ""))
    extra = ["--helper-model", "nowhere.gguf"] if way == "flag" else []
    env = {"CHATMEM_HELPER_MODEL": "nowhere.gguf"} if way == "env" else {}
    result = invoke("ask", "--config", str(path), "--provider", "scripted", "-s", "summary",
                    "--db", str(tmp_path / "h.db"), *extra, "s", "hello", env=env, code=1)
    where = {"file": f"{path}: helper_model", "env": "env CHATMEM_HELPER_MODEL",
             "flag": "flag --helper-model"}[way]
    assert result.stderr.startswith(f"error: model 'nowhere.gguf' ({where}): the local "
                                    "provider runs a GGUF file")


def test_a_strategy_typed_full_width_takes_the_configs_tables(tmp_path: Path) -> None:
    # ： and ＋ (a Chinese input method's) were read at run time but not here, so the
    # name `retrieval：top_k＝3` found no [strategies.retrieval]: max_tokens 2000 ran, not 800.
    path = write(tmp_path, 'strategy = "retrieval：top_k＝3"\n[embeddings]\nprovider = "none"\n'
                           "[strategies.retrieval]\nmax_tokens = 800\n")
    settings = load_settings(path, env={}, registered=REGISTRIES)
    assert settings.strategy == "retrieval"
    assert settings.params_for("retrieval") == {"max_tokens": 800, "top_k": "3"}
    result = invoke("ask", "--config", str(path), "--provider", "scripted", "--json",
                    "--db", str(tmp_path / "h.db"), "s", "你好", code=0)
    assert json.loads(result.stdout)["strategy"]["params"]["max_tokens"] == 800
    path = write(tmp_path, 'strategy = "window ＋ tokens"\n[strategies.window]\nk = 1\n')
    settings = load_settings(path, env={}, registered=REGISTRIES)
    assert settings.strategy == "window+tokens"
    assert settings.params_for(settings.strategy) == {"window.k": 1}
    assert "window ＋ tokens" not in settings.strategies  # no empty table of its own


def test_example_config_loads_cleanly_and_documents_every_key(tmp_path: Path) -> None:
    from chatmem.config.schema import SCHEMA

    text = example_config()
    read_config_file(write(tmp_path, text))
    for table, keys in SCHEMA.items():
        for key in keys:
            assert f"{key} =" in text, f"{table}.{key} is not documented in config.example.toml"


def test_public_settings_never_contain_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    public = Settings().public()
    assert public["api_key"] == "$OPENAI_API_KEY is set"
    assert "sk-very-secret" not in repr(public)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("context_budget = -5\n", "key 'context_budget' must be at least 1, got -5"),
        ("context_budget = 0\n", "key 'context_budget' must be at least 1, got 0"),
        ("timeout = -1\n", "key 'timeout' must be more than 0, got -1"),
        ("timeout = 0.0\n", "key 'timeout' must be more than 0, got 0.0"),
        ("key_command_timeout = 0\n", "key 'key_command_timeout' must be more than 0, got 0"),
        ("reply_timeout = 0\n", "key 'reply_timeout' must be more than 0, got 0"),
        ("idle_timeout = -1.5\n", "key 'idle_timeout' must be more than 0, got -1.5"),
        ("max_retries = -3\n", "key 'max_retries' must be at least 0, got -3"),
        ("max_reply_tokens = 0\n", "key 'max_reply_tokens' must be at least 1, got 0"),
        ("[local]\nthreads = 0\n", "key 'local.threads' must be at least 1, got 0"),
        ("[local]\nn_ctx = -4096\n", "key 'local.n_ctx' must be at least 1, got -4096"),
    ],
)
def test_numbers_below_their_minimum_are_rejected(tmp_path: Path, text: str,
                                                  message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={})
    assert str(caught.value) == f"{path}: {message}"
    assert caught.value.exit_code == 2


def test_the_smallest_allowed_numbers_load(tmp_path: Path) -> None:
    path = write(tmp_path, "context_budget = 1\ntimeout = 0.5\nmax_retries = 0\n"
                           "max_reply_tokens = 1\n[local]\nthreads = 1\nn_ctx = 1\n")
    settings = load_settings(path, env={})
    assert (settings.context_budget, settings.timeout, settings.max_retries) == (1, 0.5, 0)
    assert settings.max_reply_tokens == 1 and settings.local == LocalSection(threads=1, n_ctx=1)


def test_every_setting_says_where_it_comes_from(tmp_path: Path) -> None:
    path = write(tmp_path, 'strategy = "tokens"\nmodel = "m1"\n[local]\nthreads = 3\n'
                           "[strategies.window]\nk = 2\n")
    settings = load_settings(path, env={"CHATMEM_STRATEGY": "buffer", "CHATMEM_DB": "/x/h.db"},
                             overrides={"model": "m2", "provider": None})
    rows = {key: (value, source) for key, value, source in settings.rows()}
    assert rows["strategy"] == ("buffer", "env CHATMEM_STRATEGY")
    assert rows["db"] == ("/x/h.db", "env CHATMEM_DB")
    assert rows["model"] == ("m2", "flag --model")
    assert rows["provider"] == ("auto", "default")
    assert rows["local.threads"] == ("3", str(path))
    assert rows["local.n_ctx"] == ("4096", "default")
    assert rows["strategies.window.k"] == ("2", str(path))
    assert rows["api_key"] == ("not set", "")
    assert "local" not in rows  # tables are flattened, never shown as a dict
    assert settings.public()["sources"]["local.threads"] == str(path)


def test_a_strategys_table_applies_to_it_in_a_combination_too(tmp_path: Path) -> None:
    """`[strategies.window] k = 2` held for `-s window` only: `window+entity` ran k=5."""
    from cli_runner import invoke

    config = write(tmp_path, "[strategies.window]\nk = 2\n[strategies.entity]\nmax_facts = 7\n")
    settings = load_settings(config, env={})
    assert settings.params_for("window") == {"k": 2}
    assert settings.params_for("window+entity") == {"window.k": 2, "entity.max_facts": 7}
    assert settings.params_for("buffer+tokens") == {}
    other = tmp_path / "inline.toml"
    other.write_text('strategy = "window+entity:window.k=3"\n[strategies.entity]\nmax_facts = 7\n',
                     encoding="utf-8")
    inline = load_settings(other, env={})
    assert inline.params_for("window+entity") == {"window.k": "3", "entity.max_facts": 7}
    db = str(tmp_path / "h.db")
    chatted = invoke("chat", "组合", "-s", "window+entity", "--provider", "scripted",
                     "--db", db, "--config", str(config), input="你好\n")
    assert chatted.exit_code == 0, chatted.stderr
    shown = invoke("inspect", "组合", "--json", "--db", db, "--config", str(config))
    assert json.loads(shown.stdout)["strategy"]["params"] == {
        "window.k": 2, "entity.k": 3, "entity.max_facts": 7}


def test_config_path_follows_flag_then_environment(tmp_path: Path, isolated_home: Path) -> None:
    from chatmem.config.paths import config_path

    chosen = tmp_path / "mine.toml"
    assert config_path(None, env={"CHATMEM_CONFIG": str(chosen)}) == chosen
    assert config_path(tmp_path / "flag.toml", env={"CHATMEM_CONFIG": str(chosen)}) == (
        tmp_path / "flag.toml")
    assert config_path(None, env={}) == isolated_home / ".config" / "chatmem" / "config.toml"


def test_helper_model_from_file_env_and_its_old_name(tmp_path: Path) -> None:
    config = write(tmp_path, 'helper_model = "gpt-4o-mini"\nhelper_provider = "openai"\n')
    settings = load_settings(config, env={})
    assert (settings.helper_provider, settings.helper_model) == ("openai", "gpt-4o-mini")
    assert load_settings(config, env={"CHATMEM_HELPER_MODEL": "small"}).helper_model == "small"
    old = write(tmp_path, '[summary]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n')
    assert load_settings(old, env={}).helper_model == "gpt-4o-mini"
    both = write(tmp_path, 'helper_model = "a"\n[summary]\nmodel = "b"\n')
    with pytest.raises(ConfigError) as error:
        load_settings(both, env={})
    assert str(error.value) == (f"{both}: keys 'summary.model' and 'helper_model' disagree; "
                                "'summary.model' is the old name of 'helper_model': keep "
                                "'helper_model' only")
    bad = write(tmp_path, 'helper_provider = "scriptd"\n')
    with pytest.raises(ConfigError, match="key 'helper_provider' must be one of auto, local"):
        load_settings(bad, env={}, registered=REGISTRIES)
    with pytest.raises(ConfigError, match="CHATMEM_HELPER_PROVIDER must be one of"):
        load_settings(env={"CHATMEM_HELPER_PROVIDER": "scriptd"}, registered=REGISTRIES)


def test_embeddings_table_is_read(tmp_path: Path) -> None:
    path = write(tmp_path, '[embeddings]\nprovider = "openai"\nmodel = "nomic-embed-text"\n')
    settings = load_settings(path, env={})
    assert settings.embeddings == EmbeddingsSection(provider="openai", model="nomic-embed-text")


def test_a_table_sets_its_keys_and_keeps_the_defaults_of_the_others(tmp_path: Path) -> None:
    path = write(tmp_path, '[local]\nmodel_path = "m.gguf"\n[embeddings]\nthreads = 3\n')
    settings = load_settings(path, env={})
    assert settings.local == LocalSection(model_path="m.gguf", threads=2, n_ctx=4096)
    assert settings.embeddings == EmbeddingsSection(provider="auto", threads=3)
    assert settings.public()["local"] == {"model_path": "m.gguf", "threads": 2, "n_ctx": 4096}


def test_a_repr_shows_no_password_nor_key(tmp_path: Path) -> None:
    # A settings object logged, or among a traceback's locals, is printed by its repr.
    from chatmem.config.endpoint import parse_endpoint

    settings = Settings(db="postgresql://ann:pgpass777@db.example/x",
                        base_url="http://u:sk-ui123@h.example/v1?api-key=sk-query456",
                        embeddings=EmbeddingsSection(base_url="http://k:sk-emb789@h.example/v1"))
    from_env = load_settings(env={"CHATMEM_DB": "postgresql://ann:pgpass777@db.example/x"})
    shown = [repr(settings), repr(from_env), repr(settings.location),
             repr(parse_endpoint(settings.base_url or "")), str(settings)]
    for text in shown:
        for secret in ("pgpass777", "sk-ui123", "sk-query456", "sk-emb789"):
            assert secret not in text
    assert "db='postgresql://ann:***@db.example/x'" in shown[0]
    assert "base_url='http://u:***@h.example/v1?api-key=***'" in shown[0]
    assert "base_url='http://k:***@h.example/v1'" in shown[0]
    assert "shown='postgresql://ann:***@db.example/x?sslmode=require'" in shown[2]
    # What is no secret is shown as the generated repr would, and values are untouched.
    assert "context_budget=4000" in shown[0] and "api_key_env='OPENAI_API_KEY'" in shown[0]
    assert settings.location.target.startswith("postgresql://ann:pgpass777@")
    path = str(tmp_path / "历史.db")
    assert f"db={path!r}" in repr(Settings(db=path))


def test_relative_db_in_a_config_file_is_beside_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read against the current folder, each folder a chat began in had its own history."""
    folder = tmp_path / "conf"
    folder.mkdir()
    path = write(folder, 'db = "histories/chat.db"\n')
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_settings(path, env={}).db_path == folder / "histories" / "chat.db"
    # The environment and a flag are typed where the command runs: read there.
    env = load_settings(path, env={"CHATMEM_DB": "here.db"})
    assert env.db_path == Path("here.db")
    absolute = write(folder, f'db = "{tmp_path / "abs.db"}"\n')
    assert load_settings(absolute, env={}).db_path == tmp_path / "abs.db"


@pytest.mark.parametrize(("where", "named"), [
    ({"overrides": {"model": "  "}}, "--model: a model name cannot be blank"),
    ({"env": {"CHATMEM_USER": " "}}, "CHATMEM_USER: a profile name cannot be blank"),
    ({"file": 'helper_model = ""\n'}, "key 'helper_model': a model name cannot be blank"),
])
def test_a_blank_name_is_refused_naming_where_it_came_from(
        tmp_path: Path, where: dict[str, object], named: str) -> None:
    """`-m ""` went to the server as the model; CHATMEM_USER=" " kept facts under a profile
    nobody sees."""
    path = write(tmp_path, str(where.get("file", "")))
    env = where.get("env", {})
    overrides = where.get("overrides")
    with pytest.raises(ConfigError, match=re.escape(named)):
        load_settings(path, env=env, overrides=overrides)  # type: ignore[arg-type]


def test_a_key_pasted_as_the_timezone_is_not_repeated(tmp_path: Path) -> None:
    # timezone = "sk-…" (a key pasted into the wrong setting) was echoed whole in the error,
    # from the file, from $CHATMEM_TIMEZONE and from Settings made in code.
    key = "sk-proj-AbCdEf1234567890XyZw"
    path = write(tmp_path, f'timezone = "{key}"\n')
    for loading in (lambda: load_settings(path, env={}),
                    lambda: load_settings(env={"CHATMEM_TIMEZONE": key}),
                    lambda: Settings(timezone=key).zone):
        with pytest.raises(ConfigError) as caught:
            loading()
        assert key not in str(caught.value) and "AbCdEf" not in str(caught.value)
        assert "time zone" in str(caught.value) and f"{len(key)} characters" in str(caught.value)
    with pytest.raises(ConfigError, match="'Mars/Olympus' is not a time zone"):
        load_settings(write(tmp_path, 'timezone = "Mars/Olympus"\n'), env={})
