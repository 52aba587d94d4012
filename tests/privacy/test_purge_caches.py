"""A purge leaves none of what it erased in the process's caches.

`followed._pattern` (the values a secret guard follows), `phones.number_of` and
`phones._valid` (the numbers a purge looked for) and the other caches of texts are
process-wide: in `serve` or `mcp`, which run for days, a purged phone number stayed in
memory after `facts forget --purge` had erased it from the history.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import chat, invoke

from chatmem.memory import said_values
from chatmem.privacy import followed, phones, sensitive
from chatmem.privacy.secret_guard import SecretGuard
from chatmem.store import FactScope, Store

PHONE = "+1 415 555 0134"
CARD = "4111 1111 1111 1111"


def _cached() -> dict[str, int]:
    return {"followed._pattern": followed._pattern.cache_info().currsize,
            "phones.number_of": phones.number_of.cache_info().currsize,
            "phones._valid": phones._valid.cache_info().currsize,
            "said_values._forms": said_values._forms.cache_info().currsize,
            "sensitive._found": len(sensitive._found._known)}


def _said_with_a_fact(db: str, said: str) -> None:
    """Session t holds `said`; the user's profile, PHONE as a fact it cites."""
    chat(db, "t", [said], code=0)
    with Store(db) as store:
        session = store.sessions.session("t")
        store.facts.upsert_fact("phone", PHONE, scope=FactScope.USER, user="default",
                                source_session_id=session.id, source_turn=1)


@pytest.mark.parametrize("said", [f"My phone is {PHONE}, card {CARD}.",
                                  f"我的电话是{PHONE}，卡号{CARD}。"], ids=["en", "zh"])
def test_a_purge_empties_the_caches_that_held_the_value(tmp_path: Path, said: str) -> None:
    db = str(tmp_path / "h.db")
    _said_with_a_fact(db, said)
    # What a long-lived server has done with the value before the purge.
    phones.number_of(PHONE)
    phones._valid("4155550134", "US")
    said_values._forms(said)
    SecretGuard().read([said, *(f"pin {n:04d} {CARD}" for n in range(40))])
    followed._pattern(((PHONE, False, False),))
    assert all(_cached().values()), _cached()
    invoke("facts", "forget", "t", "phone", "--purge", "--yes", "--db", db, code=0)
    assert _cached() == dict.fromkeys(_cached(), 0)


def test_forgetting_empties_every_registered_cache() -> None:
    from chatmem.text_caches import forget_texts

    phones.number_of(PHONE)
    forget_texts()
    assert phones.number_of.cache_info().currsize == 0


@pytest.mark.parametrize("said", [f"My phone is {PHONE}.", f"我的电话是{PHONE}。"],
                         ids=["en", "zh"])
def test_a_purge_by_another_process_empties_them_once_an_open_engine_sees_it(
        tmp_path: Path, said: str) -> None:
    """`facts forget --purge` beside a running serve or mcp emptied its own process's
    caches only: the server kept the purged number in memory for as long as it ran."""
    import subprocess
    import sys

    from chatmem.app import Workspace
    from chatmem.app.conversations import start_conversation
    from chatmem.config.settings import Settings

    db = str(tmp_path / "h.db")
    _said_with_a_fact(db, said)
    with Workspace(Settings(provider="scripted", db=db)) as ws:
        engine = start_conversation(ws, "t")  # kept open, as a server keeps it
        phones.number_of(PHONE)
        said_values._forms(said)
        subprocess.run([sys.executable, "-m", "chatmem", "facts", "forget", "t", "phone",
                        "--purge", "--yes", "--db", db], check=True, capture_output=True)
        assert phones.number_of.cache_info().currsize  # the other process's purge alone
        engine.follow_erasures()  # as the engine's next turn or context does first
        assert phones.number_of.cache_info().currsize == 0
        assert said_values._forms.cache_info().currsize == 0
