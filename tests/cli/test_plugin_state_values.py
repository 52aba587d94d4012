"""A plugin strategy storing NaN or Infinity in its state: Python's json wrote them as bare
words no JSON reader but Python's takes, into a file and into PostgreSQL alike, and read
them back without a word. Refused at `set` in one line naming the plugin and the key."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cli_runner import invoke
from plugin_site import Install

from chatmem.store import Store

RATIO = '''
import os

from chatmem.memory.buffer import BufferStrategy


class Ratio(BufferStrategy):
    name = "ratio"
    description = "keeps a ratio of its turns"
    keeps_state = True

    def update(self, env):
        env.state.set(self.name, turns=env.history.turn_count(),
                      ratio={"值": [1.0, float(os.environ.get("RATIO", "0.5"))]})
        return []


def register(plugins):
    plugins.add_strategy(Ratio)
'''


@pytest.fixture(params=["file", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return str(tmp_path / "h.db")


@pytest.mark.parametrize(("ratio", "said"), [("nan", "NaN"), ("-inf", "-Infinity")])
def test_a_plugin_storing_nan_in_its_state_is_refused_naming_the_key(
        installed: Install, db: str, ratio: str, said: str) -> None:
    installed("chatmem-ratio", "chatmem_ratio", RATIO, name="ratio")
    invoke("ask", "旅行", "第一句", "-s", "ratio", "--save", "--provider", "scripted",
           "--db", db, code=0)
    asked = invoke("ask", "旅行", "第二句", "--provider", "scripted", "--db", db,
                   env={"RATIO": ratio}, code=0)
    assert [line for line in asked.stderr.splitlines() if line.startswith("memory update")] == [
        "memory update failed, will retry next turn: strategy 'ratio' could not update its "
        f"memory: its state's key 'ratio' holds {said}, which JSON cannot store (plugin ratio "
        "(chatmem-ratio 0.1.0))"]
    with Store(db) as store:
        found = store.sessions.find_session("旅行")
        assert found is not None
        # What the first turn stored stands; nothing of the refused set was.
        assert store.memory.strategy_state(found.id, "ratio") == {
            "turns": 1, "ratio": {"值": [1.0, 0.5]}}


COUNTED = '''
from chatmem.memory.buffer import BufferStrategy

READ = []


class Counted(dict):
    """A dict that notes each time JSON reads its items."""

    def items(self):
        READ.append(1)
        return super().items()


class Tally(BufferStrategy):
    name = "tally"
    description = "keeps a count of its turns"
    keeps_state = True

    def update(self, env):
        env.state.set(self.name, seen=Counted({"轮": env.history.turn_count()}))
        return []


def register(plugins):
    plugins.add_strategy(Tally)
'''


def test_each_state_value_is_converted_to_json_once(installed: Install, tmp_path: Path) -> None:
    """It was converted twice, once to check it and once to store it: a plugin's large state
    cost twice the time on every turn."""
    installed("chatmem-counted", "chatmem_counted", COUNTED, name="counted")
    db = str(tmp_path / "h.db")
    invoke("ask", "旅行", "第一句", "-s", "tally", "--save", "--provider", "scripted",
           "--db", db, code=0)
    assert len(sys.modules["chatmem_counted"].READ) == 1
    with Store(db) as store:
        found = store.sessions.find_session("旅行")
        assert found is not None
        assert store.memory.strategy_state(found.id, "tally") == {"seen": {"轮": 1}}


BY_TURN = '''
import os

from chatmem.memory.buffer import BufferStrategy


class ByTurn(BufferStrategy):
    name = "by-turn"
    description = "keeps each turn's length by turn number"
    keeps_state = True

    def update(self, env):
        lengths = env.state.get(self.name).get("lengths", {})
        for turn in env.history.turns(1, env.history.turn_count()):
            key = turn.number if os.environ.get("BY_NUMBER") else str(turn.number)
            key = (turn.number, 0) if os.environ.get("BY_PAIR") else key
            lengths[key] = len(turn.messages[0].content)
            if os.environ.get("DEEP") and turn.number > 1:
                for _ in range(int(os.environ["DEEP"])):
                    lengths[key] = [lengths[key]]
            if os.environ.get("HUGE") and turn.number > 1:
                lengths[key] = 10 ** int(os.environ["HUGE"])
        env.state.set(self.name, lengths=lengths)
        return []


def register(plugins):
    plugins.add_strategy(ByTurn)
'''


def _keyed_turn(installed: Install, tmp_path: Path, env: dict[str, str]
                ) -> tuple[list[str], dict[str, object]]:
    """A first turn stored under by-turn, then a second keyed as `env` says: the second's
    memory-update lines and the state stored after it."""
    installed("chatmem-by-turn", "chatmem_by_turn", BY_TURN, name="by-turn")
    db = str(tmp_path / "h.db")
    invoke("ask", "旅行", "第一句", "-s", "by-turn", "--save", "--provider", "scripted",
           "--db", db, code=0)
    asked = invoke("ask", "旅行", "第二句话", "--provider", "scripted", "--db", db, env=env,
                   code=0)
    with Store(db) as store:
        found = store.sessions.find_session("旅行")
        assert found is not None
        kept = store.memory.strategy_state(found.id, "by-turn")
    return [line for line in asked.stderr.splitlines() if line.startswith("memory update")], kept


def test_a_plugin_keying_its_state_by_number_is_refused_naming_the_key(
        installed: Install, tmp_path: Path) -> None:
    # JSON stores {2: 3} as {"2": 3}: the next turn read "2", not 2, and {"1": …, 2: …}
    # kept one key of the two it would have made of them.
    said, kept = _keyed_turn(installed, tmp_path, {"BY_NUMBER": "1"})
    assert said == [
        "memory update failed, will retry next turn: strategy 'by-turn' could not update its "
        "memory: its state's key 'lengths' holds a dict key 1 (int), which JSON stores as the "
        "text \"1\": the next build and update would read that, not what was set (plugin "
        "by-turn (chatmem-by-turn 0.1.0))"]
    assert kept == {"lengths": {"1": 3}}


def test_a_plugin_keying_its_state_by_tuple_is_refused_as_no_json(
        installed: Install, tmp_path: Path) -> None:
    # A key JSON cannot write at all ((2, 0)) is no key JSON would turn into text: the check
    # for those raised TypeError itself and the update died with it, unnamed.
    said, kept = _keyed_turn(installed, tmp_path, {"BY_PAIR": "1"})
    assert len(said) == 1
    assert "'lengths'" in said[0] and "JSON cannot store" in said[0] and "tuple" in said[0]
    assert "plugin by-turn" in said[0]
    assert kept == {"lengths": {"1": 3}}


@pytest.mark.parametrize(("env", "holds"), [
    ({"DEEP": "100000"}, "lists or dicts nested deeper than Python's recursion limit"),
    ({"HUGE": "5000"}, "a whole number of more than 4,300 digits")])
def test_a_state_too_deep_or_too_long_for_json_is_refused_naming_the_key(
        installed: Install, tmp_path: Path, env: dict[str, str], holds: str) -> None:
    # Nested too deeply, the update died with a bare RecursionError naming no key, and was
    # told to reset a state that was never at fault; a whole number too long to write read
    # as "a value that holds itself".
    said, kept = _keyed_turn(installed, tmp_path, env)
    assert said == [
        "memory update failed, will retry next turn: strategy 'by-turn' could not update its "
        f"memory: its state's key 'lengths' holds {holds}, which JSON cannot store (plugin "
        "by-turn (chatmem-by-turn 0.1.0))"]
    assert kept == {"lengths": {"1": 3}}
