"""Errors that say what to do next (issue 30, finding 7): a name not known names the command
that lists them and the nearest name; a command that refuses creates no history file; a
config strategy with parameters names the bad parameter."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke

from chatmem.names import nearest


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "h.db")
    for session in ("notes", "旅行"):
        assert invoke("ask", session, "hello", "--provider", "scripted", "--db",
                      path).exit_code == 0
    return path


@pytest.mark.parametrize("command", [["inspect"], ["sessions", "show"]])
def test_a_session_not_known_names_the_nearest_and_the_listing_command(
        db: str, command: list[str]) -> None:
    result = invoke(*command, "note", "--db", db, code=1)
    assert result.stderr == (f"error: no session named 'note' in {db}; did you mean 'notes'? "
                             "(`chatmem sessions list` lists them)\n")
    far = invoke(*command, "zzz", "--db", db, code=1)
    assert far.stderr == (f"error: no session named 'zzz' in {db} "
                          "(`chatmem sessions list` lists them)\n")


def test_a_strategy_not_known_suggests_the_nearest(db: str) -> None:
    result = invoke("ask", "notes", "-s", "windw", "hi", "--provider", "scripted", "--db", db,
                    code=2)
    assert result.stderr.startswith("error: unknown strategy 'windw' (valid: buffer, window")
    assert result.stderr.endswith(
        "; did you mean 'window'? (`chatmem strategies` lists them)\n")
    combined = invoke("ask", "notes", "-s", "window+entiy", "hi", "--provider", "scripted",
                      "--db", db, code=2)
    assert "did you mean 'entity'?" in combined.stderr


def test_the_repl_suggests_the_slash_command_meant(db: str) -> None:
    result = invoke("chat", "notes", "--provider", "scripted", "--db", db,
                    input="/strat\n/sessoins\n")
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: unknown command /strat; did you mean /strategy? /help lists them",
                      "error: unknown command /sessoins; did you mean /sessions? /help lists "
                      "them"]


def test_a_template_not_known_suggests_the_nearest(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[templates.brief]\nsystem = "Be brief."\n', encoding="utf-8")
    result = invoke("ask", "-t", "breif", "hi", "--provider", "scripted", "--config",
                    str(config), code=2)
    assert result.stderr.rstrip().endswith("; did you mean 'brief'?")


def test_nearest_prefers_the_one_name_a_prefix_starts() -> None:
    assert nearest("/strat", ["/strategy", "/summary", "/sessions"]) == "/strategy"
    assert nearest("windw", ["buffer", "window", "tokens"]) == "window"
    assert nearest("旅行者", ["旅行", "work"]) == "旅行"
    assert nearest("qqqq", ["buffer", "window"]) is None


@pytest.mark.parametrize(("args", "named"), [
    (["ask", "-c", "hi", "--provider", "scripted"], "no session to continue in"),
    (["ask", "a/b", "hi", "--provider", "scripted"], "invalid session name 'a/b'"),
    (["ask", "s", "hi", "--provider", "openai", "--model", "m"], "OPENAI_API_KEY is not set"),
    (["chat", "-c", "--provider", "scripted"], "no session to continue in"),
])
def test_a_command_that_refuses_creates_no_history_file(tmp_path: Path, args: list[str],
                                                        named: str) -> None:
    # `ask -c` on a new --db refused but left a 184 KB file behind.
    db = tmp_path / "new.db"
    result = invoke(*args, "--db", str(db), env={"OPENAI_API_KEY": None,
                                                 "OPENAI_BASE_URL": None})
    assert result.exit_code != 0
    assert named in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_config_strategy_with_a_bad_parameter_names_the_parameter(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('strategy = "window:k=nan"\n', encoding="utf-8")
    result = invoke("ask", "hi", "--provider", "scripted", "--config", str(config), code=2)
    assert result.stderr == (f"error: {config}: key 'strategy': parameter k='nan' of strategy "
                             "'window' must be a whole number\n")


def test_a_config_strategy_with_parameters_is_used(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('strategy = "window:k=2"\n', encoding="utf-8")
    result = invoke("ask", "hi", "--provider", "scripted", "--config", str(config), "--json",
                    code=0)
    assert '"label": "window k=2"' in result.stdout


def test_a_short_chinese_name_one_character_off_is_suggested() -> None:
    """成雨 for 成语 (an input method's homophone) scored 0.5, under the 0.6 cutoff."""
    assert nearest("成雨", ["成语", "旅行"]) == "成语"
    assert nearest("北经", ["北京", "东京"]) == "北京"
    assert nearest("日记本", ["日记", "笔记本"]) == "日记"
    assert nearest("读书会", ["读书笔记", "读书"]) == "读书"
    # Never a guess between two names as near, nor a suggestion from nothing alike.
    assert nearest("东经", ["北京", "东京", "南京"]) == "东京"
    assert nearest("北经", ["北京", "南经"]) is None
    assert nearest("天气", ["成语", "旅行"]) is None
    # English keeps its rule: two letters off of two is no likeness.
    assert nearest("ab", ["ac", "notes"]) is None
    assert nearest("trpi", ["trip", "notes"]) == "trip"


def test_a_mistyped_chinese_session_name_is_told_the_one_meant(db: str) -> None:
    result = invoke("inspect", "旅型", "--db", db, code=1)
    assert "did you mean '旅行'?" in result.stderr


def test_full_width_input_in_the_repl_reads_as_ascii(db: str) -> None:
    """／ (the slash a Chinese input method types) was sent to the model as a message;
    /inspect ３ and /strategy window：k＝2 were refused."""
    result = invoke("chat", "notes", "--provider", "scripted", "--db", db,
                    input="／strategy window：k＝2\n/inspect １\n")
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == []
    assert "k=2" in result.stdout + result.stderr
    shown = invoke("inspect", "notes", "--db", db)
    assert "／strategy" not in shown.stdout and "turn 2" not in shown.stdout


def test_a_session_name_typed_full_width_is_told_the_one_meant(db: str) -> None:
    result = invoke("inspect", "ｎｏｔｅｓ", "--db", db, code=1)
    assert "did you mean 'notes'?" in result.stderr


@pytest.mark.parametrize("choice", [["-s", "window：k=2"], ["-s", "window:k＝２"],
                                    ["-s", "window", "--param", "k＝２"],
                                    ["-s", "window：k＝２", "--save"]])
def test_full_width_strategy_separators_on_the_command_line_read_as_in_the_repl(
        db: str, choice: list[str]) -> None:
    """The REPL took /strategy window：k＝2; -s and --param refused the same text."""
    result = invoke("ask", "notes", "hi", "--provider", "scripted", "--db", db, *choice,
                    code=0)
    assert result.stderr.rstrip().endswith("window k=2")
