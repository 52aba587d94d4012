"""chatmem.testing.check_strategy, as a plugin author's test calls it: it passes a strategy
keeping the contract and fails, naming the rule, one that breaks it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_site import Install
from test_contract import COUNTS

from chatmem.store import Store
from chatmem.testing import OPENED_BY_THE_ASSISTANT, check_strategy, run_conversation


def test_check_strategy_passes_a_plugin_strategy_keeping_the_contract(
        installed: Install) -> None:
    installed("chatmem-counts", "chatmem_counts", COUNTS)
    assert check_strategy("counts", examples=3, combined=2) is None


@pytest.mark.parametrize(("name", "caught"), [
    ("one-step", "one catch-up update did not rebuild"),
    ("writes-state", "a build changed its state"),
])
def test_check_strategy_fails_a_plugin_strategy_breaking_a_rule(
        installed: Install, name: str, caught: str) -> None:
    installed("chatmem-counts", "chatmem_counts", COUNTS)
    with pytest.raises(AssertionError, match=caught):
        check_strategy(name, examples=2, combined=0)


MISTAKES = '''
from dataclasses import replace

from chatmem.memory.window import WindowStrategy


class Shouts(WindowStrategy):
    name = "shouts"
    description = "sends its history in capitals, as stored messages"

    def build(self, request):
        context = super().build(request)
        return replace(context, parts=tuple(
            replace(p, messages=tuple(replace(m, content=m.content.upper() + "!")
                                      for m in p.messages)) if p.kind == "history" else p
            for p in context.parts))


class Raises(WindowStrategy):
    name = "raises"
    description = "its build raises once there is a history"

    def build(self, request):
        if request.history.turn_count():
            raise RuntimeError("索引 missing")
        return super().build(request)


def register(plugins):
    plugins.add_strategy(Shouts)
    plugins.add_strategy(Raises)
'''


@pytest.mark.parametrize(("name", "caught"), [
    # A bare `assert` in chatmem.testing (not rewritten by pytest): "AssertionError" alone.
    # Refused as it runs now, as chatmem refuses it at run time (plugin71).
    ("shouts", r"strategy 'shouts' failed: its build returned a 'history' part holding stored"
               r" message \d+ \(turn \d+\) with its role or text altered: send stored"
               r" messages as the history gives them"),
    # A StrategyFailed with chatmem's traceback, not the AssertionError README promises.
    ("raises", r"strategy 'raises' failed in its build: RuntimeError: 索引 missing"),
])
def test_check_strategy_s_failure_names_the_rule_and_what_broke_it(
        installed: Install, name: str, caught: str) -> None:
    installed("chatmem-mistakes", "chatmem_mistakes", MISTAKES)
    with pytest.raises(AssertionError, match=caught):
        check_strategy(name, examples=2, combined=0)


def test_check_strategy_of_a_skipped_plugin_says_why_it_was_skipped(installed: Install) -> None:
    # The CLI prints the loading's warning; an author's pytest has no listener, and read
    # only "unknown strategy 'jiyi'" with the built-ins listed.
    installed("chatmem-jiyi", "chatmem_jiyi",
              "def register(plugins):\n    raise RuntimeError('记忆 table missing')\n")
    with pytest.raises(AssertionError, match=r"unknown strategy 'jiyi'.*plugin chatmem_jiyi "
                       r"\(chatmem-jiyi 0\.1\.0\) was skipped: its register\(plugins\) "
                       r"raised: RuntimeError: 记忆 table missing"):
        check_strategy("jiyi", examples=1, combined=0)


def test_a_second_run_on_the_same_postgres_database_checks_a_conversation_of_its_own(
        pg_url: str, tmp_path: Path) -> None:
    """check_strategy(NAME, postgres=URL) run again (the author's next pytest run, a fresh
    process) named its conversations c1, c2... again: each went on in the session the last
    run left there, and the rule comparing what was sent with what was stored failed."""
    for folder in ("first", "second"):
        (tmp_path / folder).mkdir()
    run_conversation("window", OPENED_BY_THE_ASSISTANT, tmp_path / "first", location=pg_url)
    again = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path;"
         " from chatmem.testing import OPENED_BY_THE_ASSISTANT, run_conversation;"
         " run_conversation('window', OPENED_BY_THE_ASSISTANT, Path(sys.argv[1]),"
         " location=sys.argv[2])", str(tmp_path / "second"), pg_url],
        capture_output=True, text=True, encoding="utf-8", timeout=120, check=False)
    assert again.returncode == 0, again.stderr
    with Store(pg_url) as store:
        assert store.sessions.list_sessions() == []  # each run deleted its own


@pytest.mark.parametrize(("name", "broken"), [("counts", None),
                                              ("writes-state", "a build changed its state")])
def test_check_strategy_on_postgres_leaves_no_session_in_the_author_s_database(
        installed: Install, pg_url: str, tmp_path: Path, name: str, broken: str | None
) -> None:
    """check_strategy(NAME, postgres=URL) left every conversation's session in the
    database the author gave it (5 generated ones and each one Hypothesis shrank to, on
    a failure): `chatmem sessions` there listed them all, named contract-…."""
    installed("chatmem-counts", "chatmem_counts", COUNTS)
    if broken:  # check_strategy meets it on SQLite first: the PostgreSQL part alone
        with pytest.raises(AssertionError, match=broken):
            run_conversation(name, OPENED_BY_THE_ASSISTANT, tmp_path, location=pg_url)
    else:
        check_strategy(name, examples=0, combined=0, postgres=pg_url)
    with Store(pg_url) as store:
        assert store.sessions.list_sessions() == []


def test_run_conversation_names_the_keys_a_conversation_lacks(tmp_path: Path) -> None:
    """A plugin author's conversation of only inputs ended in a bare KeyError 'system'."""
    given = {k: v for k, v in OPENED_BY_THE_ASSISTANT.items() if k not in ("k", "max_tokens")}
    with pytest.raises(ValueError, match="lacks max_tokens, k") as raised:
        run_conversation("window", given, tmp_path)
    assert "system, inputs, greeting, max_tokens, k" in str(raised.value)
    assert not (tmp_path / "c.db").exists()


def test_mypy_names_the_key_an_author_s_conversation_lacks(tmp_path: Path) -> None:
    """run_conversation took a dict[str, Any]: a conversation lacking `k` type-checked, and
    failed only once its test ran. A Conversation (a TypedDict) is checked key by key."""
    (tmp_path / "test_mine.py").write_text(
        "from pathlib import Path\n\n"
        "from chatmem.testing import OPENED_BY_THE_ASSISTANT, Conversation, run_conversation\n\n"
        "WHOLE: Conversation = {'system': '', 'inputs': ['你好'], 'greeting': None,\n"
        "                       'max_tokens': 400, 'k': 2}\n\n\n"
        "def test_mine(tmp_path: Path) -> None:\n"
        "    run_conversation('window', OPENED_BY_THE_ASSISTANT, tmp_path)\n"
        "    run_conversation('window', WHOLE, tmp_path)\n"
        "    run_conversation('window', {'system': '', 'inputs': ['你好'], 'greeting': None,\n"
        "                                'max_tokens': 400}, tmp_path)\n", encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--config-file",
         os.devnull, "test_mine.py"], cwd=tmp_path, capture_output=True, text=True,
        timeout=300, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert checked.returncode == 1
    assert len(errors) == 1 and errors[0].startswith("test_mine.py:12:") and '"k"' in errors[0]
