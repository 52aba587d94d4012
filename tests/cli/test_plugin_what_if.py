"""`inspect --strategy` (a what-if) rebuilds a stateful strategy's memory in a scratch store:
an update of a plugin's strategy that fails there is said as a chat and an eval say it, since
the context shown then rests on state that was never written; and the messages it shows are
named by the session's own rows, not the scratch copy's. `inspect --next` on a session that
holds none of its strategy's memory yet (a fork) rebuilds it the same way."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import invoke
from plugin_site import FORGETS, NOTED, Install

from chatmem.store import Store

FAILED = ("memory update failed, will retry next turn: strategy 'forgets' could not update "
          "its memory: KeyError: '记忆更新失败' (plugin forgets (chatmem-forgets 0.1.0))")


def test_a_what_if_whose_memory_update_fails_says_so(installed: Install, tmp_path: Path) -> None:
    installed("chatmem-forgets", "chatmem_forgets", FORGETS, name="forgets")
    db = str(tmp_path / "h.db")
    invoke("chat", "旅行", "--provider", "scripted", "--db", db,
           input="我想去杭州\n住三晚\n", code=0)
    shown = invoke("inspect", "旅行", "-s", "forgets", "--provider", "scripted", "--db", db,
                   code=0)
    assert FAILED in shown.stderr.splitlines()
    as_json = invoke("inspect", "旅行", "-s", "forgets", "--provider", "scripted", "--db", db,
                     "--json", code=0)
    assert json.loads(as_json.stdout)["notices"] == [FAILED]



def test_inspect_next_shows_the_memory_a_forks_first_turn_rebuilds(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-noted", "chatmem_noted", NOTED, name="noted")
    db = str(tmp_path / "h.db")
    invoke("chat", "旅行", "-s", "noted", "--provider", "scripted", "--db", db,
           input="我想去杭州\n住三晚\n带上小明\n", code=0)
    invoke("sessions", "fork", "旅行", "分支", "--at-turn", "2", "--db", db, code=0)
    shown = invoke("inspect", "分支", "--next", "还记得吗", "--provider", "scripted", "--db", db,
                   "--json", code=0)
    with Store(tmp_path / "h.db") as store:
        fork = store.sessions.session("分支").id
        assert store.memory.strategy_state(fork, "noted") == {}  # inspecting wrote nothing
    invoke("ask", "分支", "还记得吗", "--provider", "scripted", "--db", db, code=0)
    sent = invoke("inspect", "分支", "--json", "--db", db, code=0)
    expected = json.loads(sent.stdout)["context"]["parts"]
    assert json.loads(shown.stdout)["context"]["parts"] == expected
    assert expected[1]["messages"][0]["content"] == "noted: 我想去杭州、住三晚"


def test_a_what_if_rebuilt_in_scratch_names_the_sessions_own_messages(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-noted", "chatmem_noted", NOTED, name="noted")
    db = str(tmp_path / "h.db")
    invoke("chat", "旅行", "--provider", "scripted", "--db", db, input="我想去杭州\n", code=0)
    invoke("chat", "出差", "--provider", "scripted", "--db", db,
           input="下周去北京\n订好酒店了\n", code=0)
    sent = invoke("inspect", "出差", "--turn", "2", "--json", "--db", db, code=0)
    what_if = invoke("inspect", "出差", "--turn", "2", "-s", "noted", "--provider", "scripted",
                     "--json", "--db", db, code=0)

    def history(shown: str) -> list[tuple[int, str]]:
        parts = json.loads(shown)["context"]["parts"]
        return [(m["id"], m["content"]) for p in parts if p["kind"] == "history"
                for m in p["messages"]]

    # The session's rows are 3 and 4 (旅行 holds 1 and 2), not the scratch copy's 1 and 2.
    assert history(what_if.stdout) == history(sent.stdout) == [(3, "下周去北京"),
                                                                (4, "echo #1: 下周去北京")]


def test_an_update_failing_before_and_after_a_turn_is_said_once(
        installed: Install, tmp_path: Path) -> None:
    """A second `ask` retries the failed update as its catch-up, then updates after the turn:
    both failed alike, and the same line was printed twice."""
    installed("chatmem-forgets", "chatmem_forgets", FORGETS, name="forgets")
    db = str(tmp_path / "h.db")
    invoke("ask", "旅行", "我想去杭州", "-s", "forgets", "--save", "--provider", "scripted",
           "--db", db, code=0)
    again = invoke("ask", "旅行", "住三晚", "--provider", "scripted", "--db", db, code=0)
    assert again.stderr.splitlines().count(FAILED) == 1
