"""`inspect --strategy` (a what-if) rebuilds a stateful strategy's memory in a scratch store:
an update of a plugin's strategy that fails there is said as a chat and an eval say it, since
the context shown then rests on state that was never written."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import invoke
from plugin_site import FORGETS, Install

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
