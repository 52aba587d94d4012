"""`chatmem config show|path|init`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from cli_runner import invoke
from rich.cells import cell_len


def test_path_is_in_the_app_directory(isolated_home: Path) -> None:
    result = invoke("config", "path")
    assert result.exit_code == 0
    assert result.stdout == f"{isolated_home / '.config' / 'chatmem' / 'config.toml'}\n"


def test_init_writes_a_file_that_loads_cleanly(isolated_home: Path) -> None:
    result = invoke("config", "init")
    assert result.exit_code == 0, result.stderr
    written = Path(result.stdout.strip())
    assert written == isolated_home / ".config" / "chatmem" / "config.toml"
    assert written.read_text(encoding="utf-8").startswith("# chatmem configuration")
    shown = invoke("config", "show", "--json")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["config_file"] == str(written)


def test_init_that_cannot_make_or_write_the_file_says_so_in_one_line(tmp_path: Path) -> None:
    taken = tmp_path / "配置"
    taken.write_text("a file where the config folder would go")
    folder = invoke("config", "init", env={"XDG_CONFIG_HOME": str(taken)})
    assert (folder.exit_code, folder.stdout, folder.stderr) == (2, "", (
        f"error: {taken}/chatmem/config.toml: cannot create its folder {taken}/chatmem: "
        "Not a directory\n"))

    too_long = tmp_path / ("长" * 100 + ".toml")  # 300 bytes: no file system takes the name
    written = invoke("config", "init", "--config", str(too_long))
    assert (written.exit_code, written.stdout, written.stderr) == (
        2, "", f"error: {too_long}: cannot write the config file: File name too long\n")
    assert list(tmp_path.iterdir()) == [taken]


def test_init_refuses_to_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "c.toml"
    target.write_text("# mine\n", encoding="utf-8")
    result = invoke("config", "init", "--config", str(target))
    assert result.exit_code == 2
    assert result.stderr == f"error: {target} already exists (use --force to overwrite)\n"
    assert target.read_text(encoding="utf-8") == "# mine\n"
    forced = invoke("config", "init", "--config", str(target), "--force")
    assert forced.exit_code == 0
    assert "strategy = " in target.read_text(encoding="utf-8")


def test_show_never_prints_the_key(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('model = "gpt-4o-mini"\napi_key_env = "MY_KEY"\n', encoding="utf-8")
    env = {"MY_KEY": "sk-super-secret-123", "CHATMEM_STRATEGY": "tokens"}
    for args in (["config", "show", "--config", str(config)],
                 ["config", "show", "--config", str(config), "--json"]):
        result = invoke(*args, env=env)
        assert result.exit_code == 0
        assert "sk-super-secret-123" not in result.stdout + result.stderr
        assert "$MY_KEY is set" in result.stdout
    data = json.loads(result.stdout)
    assert data["model"] == "gpt-4o-mini" and data["strategy"] == "tokens"
    assert data["config_file"] == str(config)


def test_show_masks_a_key_in_every_url_setting(tmp_path: Path) -> None:
    from chatmem.config.loader import URL_KEYS

    config = tmp_path / "c.toml"
    config.write_text('base_url = "http://u:sk-S1abc@127.0.0.1:1/v1"\n[embeddings]\n'
                      'provider = "openai"\nmodel = "e"\nbase_url = "http://u:sk-ESECRET123'
                      '@127.0.0.1:1/v1?api-key=sk-EQ123456&模型=钥匙"\n', encoding="utf-8")
    shown = invoke("config", "show", "--config", str(config))
    assert shown.exit_code == 0, shown.stderr
    result = invoke("config", "show", "--config", str(config), "--json")
    for secret in ("sk-S1abc", "sk-ESECRET123", "sk-EQ123456", "钥匙"):
        assert secret not in shown.stdout + result.stdout + shown.stderr + result.stderr
    data = json.loads(result.stdout)
    assert data["base_url"] == "http://u:***@127.0.0.1:1/v1"
    assert data["embeddings"]["base_url"] == "http://u:***@127.0.0.1:1/v1?api-key=***&模型=***"
    # Each place a URL can be set is one of these (db shows its location, masked).
    assert set(URL_KEYS) == {"db", "base_url", "embeddings.base_url"}


@pytest.mark.parametrize(("config_text", "error"), [
    ('strategy = "window"\nmodle = "x"\n', "unknown key 'modle'; did you mean 'model'?"),
    ('sytem = "你是旅行助手"\n', "unknown key 'sytem'; did you mean 'system'?"),
    ('[stratgies.window]\nk = 2\n', "unknown key 'stratgies'; did you mean 'strategies'?"),
    # Nothing near: every top-level key and table, as a nested key lists its table's.
    ('"模型" = "杭州"\n', "unknown key '模型' (valid: provider, model, base_url, api_key_env, "
     "timeout, reply_timeout, idle_timeout, max_retries, max_reply_tokens, strategy, "
     "context_budget, system, db, user, helper_provider, helper_model, user_facts, "
     "key_command, key_command_timeout, retention_days, fact_idle_days, plain, "
     "clipboard_command, timezone, local, scripted, summary, embeddings, aliases, prices, "
     "templates, strategies)"),
    ("context_budget = -5\n", "key 'context_budget' must be at least 1, got -5"),
])
def test_a_bad_config_key_or_value_is_one_line_naming_it_and_the_file(
    tmp_path: Path, config_text: str, error: str
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(config_text, encoding="utf-8")
    result = invoke("config", "show", "--config", str(config))
    assert (result.exit_code, result.stderr) == (2, f"error: {config}: {error}\n")


def test_the_cli_checks_a_strategys_table_where_the_strategy_is_used(tmp_path: Path) -> None:
    # Configuration sits below memory: the table is checked where the strategy is built, so
    # a command that builds none (config show) or another (ask, whose default is not window)
    # runs, and the one that uses it refuses before anything is stored.
    config = tmp_path / "c.toml"
    config.write_text('[strategies.window]\nk = "abc"\n', encoding="utf-8")
    db = ("--provider", "scripted", "--db", str(tmp_path / "x.db"))
    invoke("config", "show", "--config", str(config), code=0)
    for strategy in ("window", "window+entity"):
        result = invoke("ask", "hi", "-s", strategy, *db, "--config", str(config))
        assert result.exit_code == 2, strategy
        assert result.stderr == (f"error: {config}: key 'strategies.window': parameter "
                                 "k='abc' of strategy 'window' must be a whole number\n")
    assert not (tmp_path / "x.db").exists()
    invoke("ask", "hi", "-s", "buffer", *db, "--config", str(config), code=0)


def test_wrong_type_stops_chat_before_anything_is_stored(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[local]\nthreads = \"two\"\n", encoding="utf-8")
    db = tmp_path / "x.db"
    result = invoke("chat", "--config", str(config), "--db", str(db),
                    "--provider", "scripted", input="hi\n")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {config}: key 'local.threads' must be a whole number, got 'two'\n"
    )
    assert not db.exists()


def test_path_and_init_follow_chatmem_config(tmp_path: Path, isolated_home: Path) -> None:
    chosen = tmp_path / "cc" / "x.toml"
    env = {"CHATMEM_CONFIG": str(chosen)}
    path = invoke("config", "path", env=env)
    assert (path.exit_code, path.stdout) == (0, f"{chosen}\n")
    init = invoke("config", "init", env=env)
    assert init.exit_code == 0, init.stderr
    assert chosen.read_text(encoding="utf-8").startswith("# chatmem configuration")
    assert not (isolated_home / ".config" / "chatmem" / "config.toml").exists()
    again = invoke("config", "init", env=env)
    assert again.exit_code == 2
    assert again.stderr == f"error: {chosen} already exists (use --force to overwrite)\n"
    flag = invoke("config", "path", "--config", str(tmp_path / "f.toml"), env=env)
    assert flag.stdout == f"{tmp_path / 'f.toml'}\n"


def test_show_names_the_source_of_each_setting(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('model = "m"\n[local]\nthreads = 3\n', encoding="utf-8")
    result = invoke("config", "show", "--config", str(config),
                    env={"CHATMEM_STRATEGY": "tokens", "COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    # A compact table: the config file is named once above it, its rows say "file".
    assert result.stdout.splitlines()[0].rstrip() == f"config file   {config}"
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[3:]
            if line.strip()}
    assert rows["strategy"] == ["tokens", "env", "CHATMEM_STRATEGY"]
    assert rows["model"] == ["m", "file"]
    assert rows["local.threads"] == ["3", "file"]
    assert rows["local.n_ctx"] == ["4096"]  # a default has no source to name
    assert result.stdout.count(str(config)) == 1
    assert "local" not in rows and "{'threads'" not in result.stdout
    # Model options come per call (-o, a template): a row for them named a key the file
    # refuses, and the file does refuse it.
    assert "options" not in rows
    config.write_text('[options]\ntemperature = 0.2\n', encoding="utf-8")
    refused = invoke("config", "show", "--config", str(config))
    assert refused.exit_code != 0 and "options" in refused.stderr
    config.write_text('model = "m"\n[local]\nthreads = 3\n', encoding="utf-8")
    data = json.loads(invoke("config", "show", "--config", str(config), "--json",
                             env={"CHATMEM_STRATEGY": "tokens"}).stdout)
    assert data["sources"]["strategy"] == "env CHATMEM_STRATEGY"
    assert data["local"] == {"threads": 3, "n_ctx": 4096}  # the JSON shape is unchanged


def test_show_says_the_reply_cap_each_provider_applies(chat_server) -> None:  # type: ignore[no-untyped-def]
    """config show's reply cap is the one a request carries (an endpoint's is 4096, not
    "no cap"), checked against what the test server receives."""
    env = {"OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "sk-test"}
    shown = invoke("config", "show", env=env, code=0).stdout
    cap = next(line for line in shown.splitlines() if line.startswith("max_reply_tokens"))
    invoke("ask", "hi", "--provider", "openai", "--model", "m", env=env, code=0)
    sent = chat_server.requests[-1]["max_tokens"]
    assert cap.split()[1] == str(sent) == "4096"
    scripted = invoke("config", "show", env={"CHATMEM_PROVIDER": "scripted"}, code=0).stdout
    assert "none (no cap)" in scripted


@pytest.mark.parametrize("columns", [20, 30])
def test_show_on_a_narrow_terminal_puts_each_value_and_source_under_its_key(
    tmp_path: Path, columns: int
) -> None:
    """At 20 columns the table kept the keys and squeezed value and source to nothing."""
    config = tmp_path / "c.toml"
    config.write_text('model = "m"\n', encoding="utf-8")
    result = invoke("config", "show", "--config", str(config),
                    env={"CHATMEM_STRATEGY": "tokens", "COLUMNS": str(columns)})
    assert result.exit_code == 0, result.stderr
    lines = [line.rstrip() for line in result.stdout.splitlines()]
    model = lines.index("model")
    assert lines[model + 1] == "  m  (file)"
    strategy = lines.index("strategy")
    assert " ".join(lines[strategy + 1:strategy + 3]).split() == [
        "tokens", "(env", "CHATMEM_STRATEGY)"]


class Screen(io.StringIO):
    """A terminal the test can read: what isatty() says of one."""

    def isatty(self) -> bool:
        return True


def test_show_on_a_narrow_screen_wraps_the_file_lines_between_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The config and history file lines were printed soft-wrapped on a screen too: the
    terminal folded them at 40 columns mid-word (`defa`/`ults`, mid-path)."""
    import chatmem.cli.config_cmd as command
    from chatmem.render.terminal import SafeConsole

    screen = Screen()
    terminal = SafeConsole(file=screen, force_terminal=True, color_system=None, width=40,
                           highlight=False, soft_wrap=False, markup=False)
    monkeypatch.setattr(command, "consoles", lambda: (terminal, terminal))
    folder = tmp_path / "配置" / "settings for the laptop"
    result = invoke("config", "show", env={"XDG_CONFIG_HOME": str(folder)})
    assert result.exit_code == 0, result.stderr
    lines = [line.rstrip() for line in screen.getvalue().splitlines()]
    assert max(cell_len(line) for line in lines) <= 40
    head = lines[:lines.index("")]
    assert head[0] == "config file" and "history file" in head
    # Rich wraps between words: each word of the note stands whole on a line of its own
    # width, and the lines put together give the path and the note back, however long the
    # temporary folder's path is (a path longer than the width folds at its edge).
    words = " ".join(head[1:head.index("history file")]).split()
    assert words[-3:] == ["(none:", "defaults", "apply)"]
    assert "".join(words[:-3]) == f"{folder}/chatmem/config.toml".replace(" ", "")
    # In a pipe, still one line each, for scripts.
    monkeypatch.undo()
    piped = invoke("config", "show", env={"XDG_CONFIG_HOME": str(folder), "COLUMNS": "40"})
    assert piped.stdout.splitlines()[0] == (
        f"config file   {folder}/chatmem/config.toml (none: defaults apply)")


def test_show_says_which_named_provider_embedder_or_strategy_nothing_installed_provides(
        tmp_path: Path) -> None:
    """A name that could be an absent plugin's loads (it fails where it is used, in one
    line); `config show`, where someone looks to see why, listed it as if all were well."""
    config = tmp_path / "c.toml"
    config.write_text('provider = "gone"\nhelper_provider = "scripted"\n'
                      'strategy = "window+jotter"\n[embeddings]\nprovider = "vanished"\n',
                      encoding="utf-8")
    result = invoke("config", "show", "--config", str(config), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    rows = {line.split()[0]: " ".join(line.split()[1:])
            for line in result.stdout.splitlines()[3:] if line.strip()}
    assert rows["provider"].startswith("gone (") and "not installed" in rows["provider"]
    assert rows["embeddings.provider"].startswith("vanished (")
    assert "not installed" in rows["embeddings.provider"]
    assert rows["strategy"].startswith("window+jotter (jotter not installed")
    assert rows["helper_provider"] == "scripted file"
    used = invoke("ask", "hi", "--config", str(config), "--db", str(tmp_path / "h.db"))
    assert used.exit_code != 0 and "gone" in used.stderr
    config.write_text('strategy = "window:k=3"\n', encoding="utf-8")
    fine = invoke("config", "show", "--config", str(config), env={"COLUMNS": "200"})
    assert "not installed" not in fine.stdout
