"""`chatmem serve` and `chatmem mcp --http` refuse a bad history before they start: one line
on stderr and the exit code of any other command, not "listening on …" followed by uvicorn's
startup traceback, nor an MCP server whose every tool call then fails. (Over stdio a client
app starts `chatmem mcp`, and each tool says what is wrong: tests/mcp/test_memory.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke

from chatmem.app.server_history import check_history
from chatmem.config.settings import Settings
from chatmem.errors import ExitCode

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

SERVERS = (("serve", "--port", "0"), ("mcp", "--http", "0"))


def refused_at_start(*args: str, said: str) -> None:
    result = invoke(*args, "--provider", "scripted", input="")
    assert result.exit_code == ExitCode.USAGE, (args, result.stdout, result.stderr)
    assert "listening" not in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [f"error: {said}"]


@pytest.mark.parametrize("server", SERVERS, ids=" ".join)
def test_an_empty_db_is_refused_before_listening(isolated_home: Path,
                                                 server: tuple[str, ...]) -> None:
    refused_at_start(*server, "--db", "",
                     said="--db is empty: give a file path or a postgresql:// URL")


@pytest.mark.parametrize("server", SERVERS, ids=" ".join)
def test_an_empty_db_in_the_config_is_refused_before_listening(
        isolated_home: Path, tmp_path: Path, server: tuple[str, ...]) -> None:
    config = tmp_path / "配置.toml"
    config.write_text('db = ""\n', encoding="utf-8")
    refused_at_start(*server, "--config", str(config),
                     said=f"{config}: key 'db' is empty: give a file path or a "
                          "postgresql:// URL")


@pytest.mark.parametrize("server", SERVERS, ids=" ".join)
def test_a_file_that_is_not_a_history_is_refused_before_listening(
        isolated_home: Path, tmp_path: Path, server: tuple[str, ...]) -> None:
    junk = tmp_path / "笔记.db"
    junk.write_bytes(b"junk\n")
    refused_at_start(*server, "--db", str(junk),
                     said=f"{junk} is not a chatmem database (file is not a database)")
    assert junk.read_bytes() == b"junk\n"


def test_the_check_creates_no_file_a_first_turn_would(tmp_path: Path) -> None:
    new = tmp_path / "新" / "h.db"
    check_history(Settings(db=str(new)))
    assert not new.exists() and not new.parent.exists()


def test_a_made_token_is_said_with_the_environment_variable_to_give_it_in(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Review: the line said to give it with --token, which `ps` shows every account."""
    from chatmem.cli.clients import _announcer
    from chatmem.serve.listening import listening

    where = listening("0.0.0.0:8765", None)
    _announcer("/v1")(where)
    said = capsys.readouterr().err
    assert f"CHATMEM_TOKEN, not with --token, which `ps` shows to every account): {where.token}" \
        in said.replace("\n", "")


@pytest.mark.parametrize(("chosen", "key", "said"), [
    ('strategy = "anchor"\n[strategies.anchor]\nk = 2\n', "strategy", "strategy 'anchor'"),
    ('strategy = "window+anchor"\n', "strategy", "strategy 'anchor'"),
    ('provider = "shout"\n', "provider", "provider 'shout'"),
    ('strategy = "retrieval"\n[embeddings]\nprovider = "letters"\n', "embeddings.provider",
     "embedder 'letters'")])
def test_a_configured_provider_or_strategy_nothing_installed_provides_is_refused_before_serving(
        isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chosen: str,
        key: str, said: str) -> None:
    """An uninstalled plugin's name is let be as the config loads (the commands that need
    none run): serve said "listening on …" and answered every request a 400 with it, its
    own log silent, where it refused to start before."""
    import chatmem.serve.listening

    def listened(*_: object, **__: object) -> None:
        raise AssertionError("serve listened")

    monkeypatch.setattr(chatmem.serve.listening, "serve_http", listened)
    config = tmp_path / "配置.toml"
    config.write_text(chosen, encoding="utf-8")
    result = invoke("serve", "--port", "0", "--config", str(config),
                    "--db", str(tmp_path / "h.db"))
    assert result.exit_code == ExitCode.USAGE, (result.stdout, result.stderr)
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {config}: key {key!r}: unknown {said}")
    assert "install that plugin again" in line
    # Chosen for its new conversations on the command line, the configured one is not needed.
    if key != "provider":
        started = invoke("serve", "--port", "0", "-s", "window", "--provider", "scripted",
                         "--config", str(config), "--db", str(tmp_path / "h.db"))
        assert "serve listened" in repr(started.exception)


@pytest.mark.parametrize(("chosen", "key", "said"), [
    ('strategy = "anchor"\n', "strategy", "strategy 'anchor'"),
    ('strategy = "retrieval"\n[embeddings]\nprovider = "letters"\n', "embeddings.provider",
     "embedder 'letters'"),
    ('strategy = "summary"\nprovider = "shout"\n', "provider", "provider 'shout'")])
def test_mcp_over_http_refuses_a_configured_name_nothing_installed_provides(
        isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chosen: str,
        key: str, said: str) -> None:
    """Leftover: `chatmem mcp --http` said "listening on …" over an uninstalled plugin's
    strategy, embedder or (for a strategy that calls the model) provider, every tool call
    then failed with it and the server's own log was silent; serve refused to start."""
    import chatmem.serve.listening

    def listened(*_: object, **__: object) -> None:
        raise AssertionError("mcp listened")

    monkeypatch.setattr(chatmem.serve.listening, "serve_http", listened)
    config = tmp_path / "配置.toml"
    config.write_text(chosen, encoding="utf-8")
    given = ("mcp", "--http", "0", "--config", str(config), "--db", str(tmp_path / "h.db"))
    result = invoke(*given)
    assert result.exit_code == ExitCode.USAGE, (result.stdout, result.stderr)
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {config}: key {key!r}: unknown {said}")
    # Its client's model writes the replies: a provider no strategy calls is not needed.
    config.write_text('strategy = "window"\nprovider = "shout"\n', encoding="utf-8")
    assert "mcp listened" in repr(invoke(*given).exception)


@pytest.mark.parametrize("server", SERVERS, ids=" ".join)
def test_a_strategy_that_calls_the_model_needs_the_helper_provider_it_names(
        isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        server: tuple[str, ...]) -> None:
    """A summary's calls go to `helper_provider` when set: `chatmem mcp --http` refused to
    start over the chat's provider its client's model stands in for, while a
    helper_provider nothing installed provides was let through, every summary then failing
    with it (serve too)."""
    import chatmem.serve.listening

    def listened(*_: object, **__: object) -> None:
        raise AssertionError("listened")

    monkeypatch.setattr(chatmem.serve.listening, "serve_http", listened)
    config = tmp_path / "配置.toml"
    given = (*server, "--config", str(config), "--db", str(tmp_path / "h.db"))
    config.write_text('strategy = "summary"\nprovider = "scripted"\nhelper_provider = "shout"\n',
                      encoding="utf-8")
    result = invoke(*given)
    assert result.exit_code == ExitCode.USAGE, (result.stdout, result.stderr)
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {config}: key 'helper_provider': unknown provider 'shout'")
    if server[0] == "mcp":
        config.write_text('strategy = "summary"\nprovider = "shout"\n'
                          'helper_provider = "scripted"\n', encoding="utf-8")
        assert "listened" in repr(invoke(*given).exception)
