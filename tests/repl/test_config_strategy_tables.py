"""The config's [strategies.NAME] table in the REPL: `/strategy NAME` and `/template NAME`
build the strategy `chat -s NAME` and `chat -t NAME` build from the same config."""

from __future__ import annotations

from pathlib import Path

from cli_runner import chat

from chatmem.store import Store

CONFIG = '''
[strategies.window]
k = 2

[templates."短"]
strategy = "window"
system = "用一句话回答。"
'''


def strategy_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if line.startswith(("strategy:", "template "))]


def test_strategy_and_template_in_the_repl_take_the_configs_table_as_the_flags_do(
        tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(CONFIG, encoding="utf-8")
    db = tmp_path / "h.db"
    env = {"CHATMEM_CONFIG": str(config)}

    def typed(session: str, lines: list[str], *flags: str) -> list[str]:
        result = chat(db, session, ["我们五月去杭州", *lines], *flags, env=env)
        assert result.exit_code == 0, result.stderr
        return strategy_lines(result.stderr)

    assert typed("旗-t", ["/strategy"], "-t", "短") == ["strategy: window k=2"]
    assert typed("旗-s", ["/strategy"], "-s", "window") == ["strategy: window k=2"]
    assert typed("斜杠-t", ["/template 短", "/strategy"], "-s", "buffer") == [
        "template 短: scripted:scripted, window k=2 for the next turns; the history is "
        "untouched", "strategy: window k=2"]
    assert typed("斜杠-s", ["/strategy window"], "-s", "buffer") == ["strategy: window k=2"]
    # What this chat chose still comes before the config, and a value typed before both.
    assert typed("保留", ["/strategy window+entity", "/strategy window:k=4"],
                 "-s", "window:k=7") == [
        "strategy: window+entity window.k=7 entity.k=3 entity.max_facts=20 "
        "(kept from the previous strategy: window.k=7)",
        "strategy: window k=4"]
    with Store(db) as store:
        assert [(store.sessions.session(name).strategy, store.sessions.session(name).params)
                for name in ("斜杠-t", "斜杠-s")] == [("window", {"k": 2})] * 2


def test_a_value_this_chat_chose_comes_before_the_config_even_when_it_is_the_default(
        tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(CONFIG, encoding="utf-8")
    result = chat(tmp_path / "h.db", "默认值", ["我们五月去杭州", "/strategy window+entity",
                                              "/strategy buffer", "/strategy window k=5",
                                              "/strategy window"],
                  "-s", "window:k=5", env={"CHATMEM_CONFIG": str(config)})
    assert result.exit_code == 0, result.stderr
    assert strategy_lines(result.stderr) == [
        "strategy: window+entity window.k=5 entity.k=3 entity.max_facts=20 "
        "(kept from the previous strategy: window.k=5)",
        "strategy: buffer",
        "strategy: window k=5",
        "strategy: window k=5 (kept from the previous strategy: k=5)"]
