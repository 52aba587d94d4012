"""`chatmem serve` over an encrypted history whose key comes from key_command: the command
runs once for the server, not once per request (it may ask a person each time)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from conftest import needs_sqlcipher
from test_proxy import RunningProxy
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from openai import OpenAI

from chatmem.config.settings import Settings
from chatmem.store import Store

pytestmark = needs_sqlcipher
KEY = "served 钥匙 4471"


def test_key_command_runs_once_for_a_server_not_once_per_request(tmp_path: Path) -> None:
    db, runs = tmp_path / "h.db", tmp_path / "runs"
    Store(db, key=KEY).close()
    printing = f"import sys; open({str(runs)!r}, 'a').write('run\\n'); print({KEY!r})"
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(printing)}"
    settings = Settings(provider="scripted", db=str(db), key_command=command)
    with RunningProxy(settings, strategy="window") as running:
        openai = OpenAI(base_url=running.base_url, api_key="unused", max_retries=0,
                        timeout=HANG)
        for n in range(4):  # new conversations and a kept one: each opens the history
            reply = openai.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"hello {n}"}],
                extra_headers={"X-Chatmem-Conversation": f"c{n % 3}"})
            assert (reply.choices[0].message.content or "").endswith(f": hello {n}")
    assert runs.read_text() == "run\n"
    with Store(db, key=KEY) as store:
        assert len(store.sessions.list_sessions()) == 3
