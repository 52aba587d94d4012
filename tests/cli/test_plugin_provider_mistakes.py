"""A plugin's provider that breaks its contract (README, Writing a plugin) in an easy way:
one line naming it and its plugin before or during a turn, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke
from plugin_site import Install

from chatmem.store import Store

CARELESS = '''
import os
from chatmem.providers.scripted import ScriptedProvider

def create(settings):
    mistake = os.environ.get("MISTAKE")
    if mistake == "no-return":
        ScriptedProvider()  # the `return` forgotten
        return None
    if mistake == "no-name":
        return Nameless()
    if mistake == "borrowed-name":
        return Cut()
    if mistake == "no-counter":
        return Uncounted()
    if mistake == "no-model":
        return Unconfigured(settings.model)
    if mistake == "model-number":
        return Unconfigured(7)
    if mistake == "close-fails":
        return Unclosable()
    return ScriptedProvider()

class Cut(ScriptedProvider):
    """Calls itself `scripted` (its base class's name), registered as `careless`."""

    def stream(self, messages):
        raise ConnectionError("断线 line dropped")

class Uncounted(ScriptedProvider):
    def token_counter(self):
        pass  # the `return` forgotten

class Unconfigured(ScriptedProvider):
    """The README's plugin without its `or "..."`: no model configured is a model of None."""

    def __init__(self, model):
        super().__init__()
        self.name, self.model = "careless", model

class Unclosable(ScriptedProvider):
    def close(self):
        raise OSError("关不上 socket already gone")

class Nameless:
    """A provider's methods, without the `name` the README lists among its attributes."""
    model = "无名"

    def stream(self, messages):
        raise RuntimeError("never reached 不会到达")

    def complete(self, messages, *, purpose=None):
        return "好"

    def token_counter(self):
        from chatmem.tokens import counter_for_model
        return counter_for_model(self.model)

    def close(self):
        pass

def register(plugins):
    plugins.add_provider("careless", create)
'''


@pytest.fixture
def careless(installed: Install) -> None:
    installed("chatmem-careless", "chatmem_careless", CARELESS, name="careless")


def ask(tmp_path: Path, mistake: str, code: int) -> list[str]:
    """`chatmem ask` with the careless provider making `mistake`: its stderr's lines."""
    asked = invoke("ask", "旅行", "你好 hi", "--provider", "careless",
                   "--db", str(tmp_path / "h.db"), env={"MISTAKE": mistake}, code=code)
    assert "Traceback" not in asked.output
    return asked.stderr.splitlines()


@pytest.mark.usefixtures("careless")
def test_a_create_that_returns_none_is_one_line_naming_the_plugin(tmp_path: Path) -> None:
    assert ask(tmp_path, "no-return", code=1) == [
        "error: provider 'careless' could not start: its create returned None, not a provider"
        " (plugin careless (chatmem-careless 0.1.0))"]


@pytest.mark.usefixtures("careless")
def test_a_provider_without_a_name_is_one_line_naming_the_plugin(tmp_path: Path) -> None:
    assert ask(tmp_path, "no-name", code=1) == [
        "error: provider 'careless' could not start: its provider (Nameless) has no name "
        "attribute (text) (plugin careless (chatmem-careless 0.1.0))"]


@pytest.mark.usefixtures("careless")
def test_a_provider_failing_is_named_as_registered_so_its_plugin_is_found(
        tmp_path: Path) -> None:
    assert ask(tmp_path, "borrowed-name", code=1)[-1] == (
        "error: provider 'careless' failed: ConnectionError: 断线 line dropped "
        "(plugin careless (chatmem-careless 0.1.0))")


@pytest.mark.usefixtures("careless")
def test_a_token_counter_that_returns_none_is_one_line_naming_the_plugin(
        tmp_path: Path) -> None:
    assert ask(tmp_path, "no-counter", code=1)[-1] == (
        "error: provider 'careless' failed: its token_counter returned None, not a "
        "TokenCounter (plugin careless (chatmem-careless 0.1.0))")


@pytest.mark.usefixtures("careless")
def test_a_provider_whose_model_is_none_still_answers(tmp_path: Path) -> None:
    asked = invoke("ask", "旅行", "你好 hi", "--provider", "careless",
                   "--db", str(tmp_path / "h.db"), env={"MISTAKE": "no-model"}, code=0)
    assert asked.stdout.strip() and "error" not in asked.stderr


@pytest.mark.usefixtures("careless")
def test_a_provider_whose_model_is_not_text_says_what_it_is(tmp_path: Path) -> None:
    assert ask(tmp_path, "model-number", code=1) == [
        "error: provider 'careless' could not start: its provider (Unconfigured) has a model "
        "that is int, not text or None (plugin careless (chatmem-careless 0.1.0))"]


@pytest.mark.usefixtures("careless")
def test_a_close_failing_after_the_turn_is_stored_is_a_warning_not_a_failure(
        tmp_path: Path) -> None:
    """plugin64: exit 1 "provider failed" after the reply was printed and the turn stored,
    so a script retrying the failed command stored the turn twice."""
    db = tmp_path / "h.db"
    asked = invoke("ask", "旅行", "你好 hi", "--provider", "careless", "--db", str(db),
                   env={"MISTAKE": "close-fails"}, code=0)
    assert asked.stdout.strip()
    [warning] = [line for line in asked.stderr.splitlines() if "关不上" in line]
    assert "OSError" in warning and "(plugin careless (chatmem-careless 0.1.0))" in warning
    assert "Traceback" not in asked.output
    with Store(db) as store:
        assert store.history.turn_count(store.sessions.session("旅行").id) == 1
