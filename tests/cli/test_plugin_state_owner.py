"""A plugin strategy's update writes its own state only: `env.state.set` under another name
(another strategy's, a member's of the same combination) is refused in one line naming the
plugin, and nothing of it is stored."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke
from plugin_site import Install

from chatmem.store import Store

MEDDLER = '''
import os

from chatmem.memory.buffer import BufferStrategy
from chatmem.memory.entity import EntityStrategy


class Mine(BufferStrategy):
    name = "mine"
    description = "keeps a count of its turns"
    keeps_state = True

    def update(self, env):
        env.state.set(self.name, turns=env.history.turn_count())
        return []


class Meddler(BufferStrategy):
    name = "meddler"
    description = "writes mine's state as its own"
    keeps_state = True

    def update(self, env):
        try:
            env.state.set("mine", turns=99)
        except Exception:
            if os.environ.get("MEDDLER") != "catches":
                raise
        env.state.set(self.name, seen=True)
        return []


class Builder(BufferStrategy):
    name = "builder"
    description = "writes mine's state while it builds"
    keeps_state = True

    def build(self, request):
        request.state.set("mine", turns=99)
        return super().build(request)


class Remembers(EntityStrategy):
    name = "remembers"
    description = "entity under a name of its own"


def register(plugins):
    plugins.add_strategy(Mine)
    plugins.add_strategy(Meddler)
    plugins.add_strategy(Remembers)
    plugins.add_strategy(Builder)
'''
REFUSED = ("memory update failed, will retry next turn: strategy 'meddler' could not update "
           "its memory: it set the state of 'mine': a strategy writes only its own, as "
           "env.state.set(self.name, …) (README, \"Writing a plugin\") (plugin meddler "
           "(chatmem-meddler 0.1.0))")


def states(db: str, session: str) -> dict[str, dict[str, object]]:
    with Store(db) as store:
        found = store.sessions.find_session(session)
        assert found is not None
        return {name: store.memory.strategy_state(found.id, name)
                for name in ("mine", "meddler")}


@pytest.mark.parametrize("catches", [False, True], ids=["lets it through", "catches it"])
def test_a_plugin_writing_another_strategys_state_is_refused_naming_it(
        installed: Install, tmp_path: Path, catches: bool) -> None:
    """`meddler` set `mine`'s turns to 99 and nothing said so: `mine`, the session's
    strategy again, sent a count it never made, and a fork copied it as covering turns."""
    installed("chatmem-meddler", "chatmem_meddler", MEDDLER, name="meddler")
    db = str(tmp_path / "h.db")
    env = {"MEDDLER": "catches" if catches else ""}
    invoke("ask", "旅行", "第一句", "-s", "mine", "--save", "--provider", "scripted",
           "--db", db, code=0)
    asked = invoke("ask", "旅行", "第二句", "-s", "meddler", "--save", "--provider",
                   "scripted", "--db", db, env=env, code=0)
    assert [line for line in asked.stderr.splitlines()
            if line.startswith("memory update")] == [REFUSED]
    stored = states(db, "旅行")
    assert stored["mine"] == {"turns": 1}
    # Caught, the update's own write went on (it is the plugin's); let through, it did not.
    assert stored["meddler"] == ({"seen": True} if catches else {})


def test_a_member_writing_its_partners_state_is_refused(installed: Install,
                                                        tmp_path: Path) -> None:
    """In `mine+meddler` each member writes under its own name; the combination's, chatmem's
    code, lets neither write the other's."""
    installed("chatmem-meddler", "chatmem_meddler", MEDDLER, name="meddler")
    db = str(tmp_path / "h.db")
    asked = invoke("ask", "旅行", "第一句", "-s", "mine+meddler", "--save", "--provider",
                   "scripted", "--db", db, code=0)
    assert REFUSED in asked.stderr.splitlines()
    assert states(db, "旅行")["mine"] == {"turns": 1}


def test_a_plugin_running_chatmems_own_update_keeps_its_bookkeeping(
        installed: Install, tmp_path: Path) -> None:
    """A plugin subclassing `entity` runs chatmem's extraction, which writes the turns it
    read under `facts`, and the turns holding a secret under `sensitive`: chatmem's code,
    not the plugin's, so not refused."""
    installed("chatmem-meddler", "chatmem_meddler", MEDDLER, name="meddler")
    db = str(tmp_path / "h.db")
    for text in ("我叫王芳", "my card is 4111 1111 1111 1111"):
        asked = invoke("ask", "旅行", text, "-s", "remembers", "--save", "--provider",
                       "scripted", "--db", db, code=0)
        assert "memory update" not in asked.stderr
    with Store(db) as store:
        found = store.sessions.find_session("旅行")
        assert found is not None
        assert store.memory.strategy_state(found.id, "facts")["done_turn"] == 2
        assert store.memory.strategy_state(found.id, "sensitive")["turns"] == [2]


def test_the_bookkeeping_left_open_is_what_chatmems_own_updates_write() -> None:
    """The names any update may write are exactly those chatmem's shared code writes under:
    a new one there, not added here, would refuse a plugin that subclasses entity."""
    from chatmem.memory.extraction import STATE_KEY
    from chatmem.memory.sensitive_turns import SENSITIVE_KEY
    from chatmem.memory.state import BOOKKEEPING

    assert {STATE_KEY, SENSITIVE_KEY} == BOOKKEEPING


@pytest.mark.parametrize("command", [["ask", "旅行", "第二句", "--save"],
                                     ["inspect", "旅行", "--next", "第二句"]])
def test_a_plugin_s_build_writing_state_is_refused_naming_it(
        installed: Install, tmp_path: Path, command: list[str]) -> None:
    """The owner check ran only in an update: `builder`'s build set mine's turns to 99, in
    a turn and in `inspect --next` alike, and nothing said so."""
    installed("chatmem-meddler", "chatmem_meddler", MEDDLER, name="meddler")
    db = str(tmp_path / "h.db")
    invoke("ask", "旅行", "第一句", "-s", "mine", "--save", "--provider", "scripted",
           "--db", db, code=0)
    refused = invoke(*command, "-s", "builder", "--provider", "scripted", "--db", db)
    assert refused.exit_code != 0
    assert ("error: strategy 'builder' failed: its build set the state of 'mine'"
            in refused.stderr)
    assert states(db, "旅行")["mine"] == {"turns": 1}


@pytest.mark.parametrize(("name", "owned"), [
    ("keeps", True), ("keeps-count", True), ("keeps.index", True), ("keeps:旧", True),
    ("facts", True), ("keepsake", False), ("kee", False), ("mine", False), ("记忆-count", False),
])
def test_a_strategy_owns_its_name_and_the_names_beneath_it(name: str, owned: bool) -> None:
    """A plugin keeping a second record under `keeps-count` (README: a name beneath its own)
    writes it; `sum` would own no `summary`, nor `keeps` a `keepsake`."""
    from chatmem.memory.state import _owned_by

    assert _owned_by(name, "keeps") is owned
    assert _owned_by("记忆-索引", "记忆") is True
